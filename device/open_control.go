package device

import "fmt"

// Opening control nodes by what identifies a device. Control nodes accept
// INFO only and any number of them can be open, also while another process
// owns the device.

// OpenControlIndex opens the control node of hardware device N (accelN or
// hlN). It replaces hlthunk_open_control without a bus id.
func OpenControlIndex(n int) (*Device, error) {
	return openControlNode(func(nd Node) bool { return nd.Index == n }, fmt.Sprintf("control node of index %d", n))
}

// OpenControlPCI opens the control node of the hardware device at a PCI
// address ("0000:19:00.0" or "19:00.0"). It replaces
// hlthunk_open_control_by_bus_id and hlthunk_open_control with a bus id.
func OpenControlPCI(addr string) (*Device, error) {
	nd, err := SysFS{}.NodeByPCIAddress(addr)
	if err != nil {
		return nil, fmt.Errorf("open control node of %s: %w", addr, err)
	}
	return openControlOf(nd)
}

// OpenControlModule opens the control node of the hardware device with a
// module id. It replaces hlthunk_open_control_by_module_id.
func OpenControlModule(id int) (*Device, error) {
	return openControlNode(func(nd Node) bool { return nd.ModuleID == id }, fmt.Sprintf("control node of module %d", id))
}

// OpenControlASIC opens the control node of the first hardware device of
// chip a (AnyASIC for any). It replaces hlthunk_open_control_by_name.
func OpenControlASIC(a ASIC) (*Device, error) {
	return openControlNode(func(nd Node) bool { return len(matchASIC([]Node{nd}, a)) == 1 }, fmt.Sprintf("control node of a %s", a))
}

// openControlNode opens the control node of the first device match accepts.
func openControlNode(match func(Node) bool, what string) (*Device, error) {
	nodes, err := Nodes()
	if err != nil {
		return nil, err
	}
	for _, nd := range nodes {
		if match(nd) {
			return openControlOf(nd)
		}
	}
	return nil, fmt.Errorf("open %s: %w", what, ErrNoDevice)
}

// openControlOf opens nd's control node; sysfs may not show it yet.
func openControlOf(nd Node) (*Device, error) {
	if nd.ControlPath == "" {
		return nil, fmt.Errorf("open control node of %s: none in sysfs: %w", nd.Path, ErrNotFound)
	}
	return OpenControl(nd.ControlPath)
}
