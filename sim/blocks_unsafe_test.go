package sim

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// vmFlags returns the VmFlags line of the mapping that starts at addr, from
// /proc/self/smaps.
func vmFlags(t *testing.T, addr uintptr) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	start := fmt.Sprintf("%x-", addr)
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, start) { // the mapping's header line
			in = true
			continue
		}
		if in && strings.HasPrefix(l, "VmFlags:") {
			return strings.Fields(strings.TrimPrefix(l, "VmFlags:"))
		}
	}
	t.Fatalf("no mapping at %#x in /proc/self/smaps", addr)
	return nil
}

func TestBlockMmapRules(t *testing.T) {
	_, _, f := openSim(t, Gaudi2)
	var a hl.MemArgs
	a.In().Op = hl.HL_MEM_OP_MAP_BLOCK
	a.In().MapBlock().BlockAddr = gaudi2CFGBase + uint64(gaudi2UserBlocks[0].addr)
	if err := f.Ioctl(hl.DRM_IOCTL_HL_MEMORY, unsafe.Pointer(&a)); err != nil {
		t.Fatal(err)
	}
	h, size := a.Out().BlockHandle(), int(a.Out().BlockSize())
	if size != 2*arcDCCMBlockSize {
		t.Fatalf("block size %#x", size)
	}
	for _, tc := range []struct {
		name   string
		off    int64
		length int
		want   error
	}{
		{"half", int64(h), size / 2, unix.EINVAL},
		{"larger", int64(h), size + pageSize, unix.EINVAL},
		{"past the table", int64((uint64(len(gaudi2UserBlocks)) | mmapTypeBlock) << 12), 4096, unix.EINVAL},
	} {
		if _, err := f.Mmap(tc.off, tc.length, unix.PROT_READ, unix.MAP_SHARED); err != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// A length short of the last page still maps the whole block.
	mem, err := f.Mmap(int64(h), size-100, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Munmap(mem)
	flags := vmFlags(t, uintptr(unsafe.Pointer(&mem[0])))
	for _, want := range []string{"dc", "dd"} { // VM_DONTCOPY, VM_DONTDUMP
		found := false
		for _, fl := range flags {
			found = found || fl == want
		}
		if !found {
			t.Errorf("block mapping flags %v lack %q", flags, want)
		}
	}
}

func TestBlockMmapGaudi(t *testing.T) {
	_, _, f := openSim(t, Gaudi)
	if _, err := f.Mmap(int64(mmapTypeBlock<<12), 4096, unix.PROT_READ, unix.MAP_SHARED); err != unix.EPERM {
		t.Fatalf("Gaudi block mmap: %v", err)
	}
}
