package device

import "fmt"

// OpenASIC opens the compute node of the first hardware device of chip a
// (AnyASIC for any) that no process owns, skipping busy ones, ones in
// reset and ones that are not operational; the chip comes from the PCI ids sysfs shows, so no other node is
// opened to find it. It replaces hlthunk_open with a device name and no
// bus id. With no such device the error wraps ErrNoDevice.
func OpenASIC(a ASIC) (*Device, error) {
	nodes, err := Nodes()
	if err != nil {
		return nil, err
	}
	d, err := firstFree(matchASIC(nodes, a))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", a, err)
	}
	return d, nil
}

// matchASIC keeps the nodes of chip a, or all of them for AnyASIC.
func matchASIC(nodes []Node, a ASIC) []Node {
	var out []Node
	for _, n := range nodes {
		if a == AnyASIC || ASICFromPCI(uint32(n.DeviceID), n.Revision) == a {
			out = append(out, n)
		}
	}
	return out
}
