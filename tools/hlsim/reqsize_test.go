package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/internal/hlsimtest"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// withSize returns request req with the argument size its encoding
// carries changed to size (_IOC_SIZE, bits 16-29).
func withSize(req uint32, size int) uint32 {
	return req&^(0x3fff<<16) | uint32(size)<<16
}

// registerShort is the child of TestWrongSizeRequests: on the compute
// node it registers, as eventfd, descriptor N, which it first makes its
// /dev/null, with a REGISTER_EVENTFD request whose encoded size is not
// the driver's (the driver, as drm_ioctl, runs it all the same), and
// prints the errno's number or "ok".
func registerShort(node string, n int) int {
	fd, err := unix.Open(node, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	null, err := unix.Open("/dev/null", unix.O_RDONLY, 0)
	if err != nil || unix.Dup2(null, n) != nil {
		fmt.Println("error: /dev/null as", n, err)
		return 1
	}
	a := hl.InfoArgs{Op: hl.HL_INFO_REGISTER_EVENTFD}
	a.SetEventfd(uint32(n))
	req := withSize(hl.DRM_IOCTL_HL_INFO, int(unsafe.Sizeof(a))+8)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(&a))); e != 0 {
		fmt.Println(int(e))
		return 0
	}
	fmt.Println("ok")
	return 0
}

// TestWrongSizeRequests: a descriptor number in a request whose encoded
// size is not the driver's is still the client's. The server recognised
// REGISTER_EVENTFD and REG_DMABUF_FD by the whole request word, size
// included, so another size went to the simulator untranslated, which
// took the number in the server's own table: a client registered the
// server's own eventfd (and could import the server's descriptors, other
// clients' pending exports among them).
func TestWrongSizeRequests(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:1")
	// A number that is an eventfd in the server (its Go runtime's).
	n := -1
	for _, l := range fdsOf(s.Pid) {
		if num, target, ok := strings.Cut(l, " "); ok && target == "anon_inode:[eventfd]" {
			n, _ = strconv.Atoi(num)
		}
	}
	if n < 0 {
		t.Fatalf("no eventfd in the server:\n%s", strings.Join(fdsOf(s.Pid), "\n"))
	}
	got := runChild(t, "registershort "+s.Node(0, false)+" "+strconv.Itoa(n))
	if got != strconv.Itoa(int(unix.EINVAL)) {
		t.Fatalf("REGISTER_EVENTFD of the client's /dev/null (descriptor %d, an eventfd in the server) with a size of its own: %s, want EINVAL (%d): the server took its own descriptor %d\n%s",
			n, got, unix.EINVAL, n, s.Log())
	}
}
