package sim

import "fmt"

// State is a device's status as INFO DEVICE_STATUS reports it; the values
// are the driver's enum hl_device_status.
type State uint32

const (
	Operational               State = 0
	InReset                   State = 1
	Malfunction               State = 2
	NeedsReset                State = 3
	InDeviceCreation          State = 4
	InResetAfterDeviceRelease State = 5
)

// String returns the driver's sysfs spelling of the state.
func (s State) String() string {
	switch s {
	case Operational:
		return "operational"
	case InReset:
		return "in reset"
	case Malfunction:
		return "disabled"
	case NeedsReset:
		return "needs reset"
	case InDeviceCreation:
		return "in device creation"
	case InResetAfterDeviceRelease:
		return "in reset after device release"
	}
	return fmt.Sprintf("State(%d)", uint32(s))
}

// operational reports whether ioctls that need a working device are served.
// The driver counts a device still being created as operational.
func (s State) operational() bool {
	switch s {
	case Malfunction, InReset, InResetAfterDeviceRelease, NeedsReset:
		return false
	}
	return true
}
