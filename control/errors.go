package control

import (
	"github.com/gaudi-go/gaudi/ioctl"
)

// ErrNotSupported reports a request the device's ASIC does not support,
// such as engine modes or hardware blocks on first-generation Gaudi, for
// which the driver answers EPERM. It is ioctl.ErrNotSupported, and the
// errors match it by ioctl's rule (see ioctl.Error), so either sentinel
// works with errors.Is.
var ErrNotSupported = ioctl.ErrNotSupported
