package control

import (
	"errors"
	"fmt"

	"github.com/gaudi-go/gaudi/ioctl"
	"golang.org/x/sys/unix"
)

// ErrNotSupported reports a request the device's ASIC does not support,
// such as engine modes or hardware blocks on first-generation Gaudi, for
// which the driver answers EPERM. It is ioctl.ErrNotSupported, and the
// errors match it by ioctl's rule (see ioctl.Error), so either sentinel
// works with errors.Is.
var ErrNotSupported = ioctl.ErrNotSupported

// ErrRegisterOffset reports a register access outside a mapped Block or at
// an offset that is not a multiple of 4; the error is a *RegisterError.
var ErrRegisterOffset = errors.New("register offset outside the block or not 32-bit aligned")

// ErrBlockClosed reports a register access to a Block after its Close.
var ErrBlockClosed = errors.New("hw block closed")

// RegisterError describes a refused register access of a Block. It
// matches ErrRegisterOffset and unix.EINVAL with errors.Is.
type RegisterError struct {
	Op     string // "read" or "write"
	Block  uint64 // the block's device address
	Offset int    // the byte offset asked for
	Size   int    // the block's size in bytes
}

func (e *RegisterError) Error() string {
	return fmt.Sprintf("%s register %#x of hw block %#x (%d bytes): %v", e.Op, e.Offset, e.Block, e.Size, ErrRegisterOffset)
}

// Is reports whether target is ErrRegisterOffset or unix.EINVAL.
func (e *RegisterError) Is(target error) bool {
	return target == ErrRegisterOffset || target == unix.EINVAL
}
