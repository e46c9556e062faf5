package control

import (
	"errors"

	"github.com/gaudi-go/gaudi/ioctl"
	"golang.org/x/sys/unix"
)

// ErrNotSupported reports a request the device's ASIC does not support,
// such as engine modes on first-generation Gaudi. It is ioctl.ErrNotSupported,
// so either sentinel works with errors.Is.
var ErrNotSupported = ioctl.ErrNotSupported

// unsupported marks an EPERM the driver gives for a feature the ASIC
// lacks: the error then also matches ErrNotSupported.
type unsupported struct{ err error }

func (e *unsupported) Error() string        { return e.err.Error() }
func (e *unsupported) Unwrap() error        { return e.err }
func (e *unsupported) Is(target error) bool { return target == ErrNotSupported }

// asicRefused returns err, marked as unsupported when it is the driver's
// EPERM for a feature the ASIC does not have.
func asicRefused(err error) error {
	if errors.Is(err, unix.EPERM) {
		return &unsupported{err}
	}
	return err
}
