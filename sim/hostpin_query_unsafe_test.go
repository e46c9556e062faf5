package sim

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestQueryPinCheck answers, by PROCMAP_QUERY, what pinCheck answers from
// the whole maps file, for ranges of anonymous memory (writable, read-only,
// a hole after them, unaligned ends) and leaves ranges that reach a file
// mapping to pinCheck: hl_pin_host_memory's pin_user_pages_fast answers
// EFAULT when the first page fails and ENOMEM (a short pin) when a later
// one does.
func TestQueryPinCheck(t *testing.T) {
	if q, err := openVMAQuery(); err != nil {
		t.Skipf("no PROCMAP_QUERY on /proc/self/maps (%v): it needs Linux 6.11; pinCheck reads the maps file", err)
	} else {
		q.close()
	}
	const pg = hostPageSize
	// Pages 0-2 writable, 3-4 read-only, 5 a hole, 6-7 a shared memfd.
	mem, err := unix.Mmap(-1, 0, 8*pg, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	if err := unix.Mprotect(mem[3*pg:5*pg], unix.PROT_READ); err != nil {
		t.Fatal(err)
	}
	if _, _, e := unix.Syscall(unix.SYS_MUNMAP, uintptr(unsafe.Pointer(&mem[5*pg])), pg, 0); e != 0 {
		t.Fatal(e)
	}
	memfd, err := unix.MemfdCreate("hostpin-query-test", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(memfd)
	if err := unix.Ftruncate(memfd, 2*pg); err != nil {
		t.Fatal(err)
	}
	base := uint64(uintptr(unsafe.Pointer(&mem[0])))
	if _, _, e := unix.Syscall6(unix.SYS_MMAP, uintptr(base+6*pg), 2*pg, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_SHARED|unix.MAP_FIXED, uintptr(memfd), 0); e != 0 {
		t.Fatal(e)
	}
	maps := fmt.Sprintf("/proc/%d/maps", os.Getpid())
	smaps := fmt.Sprintf("/proc/%d/smaps", os.Getpid())
	for _, c := range []struct {
		name      string
		off, size uint64
		ok        bool // false: left to pinCheck
		want      error
	}{
		{name: "writable", off: 0, size: 3 * pg, ok: true},
		{name: "unaligned inside writable", off: 100, size: pg, ok: true},
		{name: "writable then read-only", off: 2 * pg, size: 2 * pg, ok: true, want: unix.ENOMEM},
		{name: "read-only", off: 3 * pg, size: pg, ok: true, want: unix.EFAULT},
		{name: "hole", off: 5 * pg, size: pg, ok: true, want: unix.EFAULT},
		{name: "read-only then file", off: 4 * pg, size: 3 * pg, ok: true, want: unix.EFAULT},
		{name: "file", off: 6 * pg, size: pg},
		{name: "writable through read-only", off: 0, size: 8 * pg, ok: true, want: unix.ENOMEM},
	} {
		t.Run(c.name, func(t *testing.T) {
			ok, err := queryPinCheck(maps, base+c.off, c.size)
			if ok != c.ok || !errors.Is(err, c.want) && (err != nil || c.want != nil) {
				t.Fatalf("queryPinCheck = %v, %v; want %v, %v", ok, err, c.ok, c.want)
			}
			if !ok {
				return
			}
			if _, full := pinCheck(maps, smaps, base+c.off, c.size); full != err {
				t.Fatalf("queryPinCheck answers %v, reading the maps file answers %v", err, full)
			}
		})
	}
}
