package ioctl_test

import (
	"fmt"
	"unsafe"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// oldKernel is a File that behaves like a kernel before the accel
// subsystem: it knows only the legacy ('H') requests.
type oldKernel struct{}

func (oldKernel) Ioctl(req uint, arg unsafe.Pointer) error {
	switch req {
	case hl.HL_LEGACY_IOCTL_INFO:
		if (*hl.InfoArgs)(arg).ReturnSize == 0 {
			return unix.EINVAL
		}
		return nil
	case hl.HL_LEGACY_IOCTL_MEMORY:
		return unix.ENOMEM
	}
	return unix.ENOTTY
}

func (oldKernel) Mmap(int64, int, int, int) ([]byte, error) { return nil, unix.ENODEV }
func (oldKernel) Munmap([]byte) error                       { return unix.EINVAL }
func (oldKernel) Close() error                              { return nil }
func (oldKernel) Name() string                              { return "old" }

// A Device probes the ioctl encoding once and uses it for every call.
func ExampleNew() {
	d := ioctl.New(oldKernel{})
	defer d.Close()

	var info hl.InfoArgs
	status := make([]byte, 8)
	err := d.Info(hl.HL_INFO_DEVICE_STATUS, &info, status)
	fmt.Println("encoding:", d.Encoding(), "error:", err)

	var mem hl.MemArgs
	mem.In().Op = hl.HL_MEM_OP_ALLOC
	fmt.Println(d.Memory(&mem))
	// Output:
	// encoding: legacy error: <nil>
	// ioctl MEMORY ALLOC: cannot allocate memory
}
