package ioctl_test

import (
	"errors"
	"fmt"

	"github.com/gaudi-go/gaudi/ioctl"
	"golang.org/x/sys/unix"
)

// Open refuses a file that is not a habanalabs device. The error keeps the
// errno and matches the sentinel callers branch on.
func Example() {
	d, err := ioctl.Open("/dev/null")
	switch {
	case errors.Is(err, ioctl.ErrNotSupported):
		fmt.Println("not a Gaudi; errno kept:", errors.Is(err, unix.ENOTTY))
	case errors.Is(err, ioctl.ErrDeviceBusy):
		fmt.Println("another process owns the device")
	case errors.Is(err, ioctl.ErrInReset):
		fmt.Println("device is resetting; try again")
	case err != nil:
		fmt.Println(err)
	default:
		defer d.Close()
		fmt.Println("opened with the", d.Encoding(), "encoding")
	}
	// Output: not a Gaudi; errno kept: true
}
