// Package hook carries the accessors of a device.Device's raw ioctl layer
// from package device, which sets them in its init, to package devio,
// which gives them their types. It exists only because devio imports
// device and so cannot be imported by it; nothing else should use it.
package hook

import "github.com/gaudi-go/gaudi/ioctl"

// Set by package device's init. The argument is a *device.Device; any
// other value panics.
var (
	// Ioctl returns the typed ioctl layer of a Device.
	Ioctl func(d any) *ioctl.Device
	// File returns the File a Device was opened over.
	File func(d any) ioctl.File
	// Attach registers a dependent the Device's Close closes first.
	Attach func(d any, name string, close func() error) (detach func(), err error)
)
