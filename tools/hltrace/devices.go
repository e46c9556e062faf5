package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/internal/sysfsattr"
)

// -device, or GAUDI_DEVICE, restricts the trace to the devices a selector
// names, in the grammar every command of this module shares
// (internal/cli): the selection is resolved to device nodes through sysfs
// (cli.Selection.DevicesIn), and the BPF side keeps the ioctls whose file
// is one of those nodes, by device number.

// ErrSimulated is the error for the simulator's selectors (sim, sim:N):
// the simulator answers a program's device calls inside its process,
// without a system call, so hltrace has nothing to see.
var ErrSimulated = errors.New("hltrace sees only the kernel's devices, and a program on the simulator makes no system call for its device")

// sysfsRoot is where resolveDevices reads sysfs: "" for the machine's,
// which is the tree of served devices GAUDI_ROOT names when it is set
// (device.RootEnv), as for every command of this module; tests point it
// at a fixture tree.
var sysfsRoot = ""

// A deviceFilter is what a selection restricts the trace to.
type deviceFilter struct {
	sel   cli.Selection
	nodes []DeviceNode // nil for every device
	// gaudi is set when the nodes are the Gaudis the selector names, so
	// that the selector, as the command's GAUDI_DEVICE, opens one of them.
	gaudi bool
}

// origin names where a selection came from: "-device 0",
// "GAUDI_DEVICE=0", or, for the default selection (which names nodes
// only when GAUDI_ROOT serves them), "GAUDI_ROOT=DIR".
func origin(sel cli.Selection) string {
	switch {
	case sel.Default():
		return device.RootEnv + "=" + os.Getenv(device.RootEnv)
	case sel.From == "-device":
		return "-device " + sel.Text
	}
	return sel.From + "=" + sel.Text
}

// resolveDevices returns the device nodes sel names on the machine whose
// sysfs is below root. The default selection traces every device. A path
// names that node alone, a Gaudi's or any other device node (a uverbs
// device, /dev/null for the tests); every other selector names, for each
// Gaudi it matches, its compute node and its control node. The
// simulator's selectors are an error matching ErrSimulated, and a
// selector that matches no Gaudi one matching device.ErrNoDevice.
func resolveDevices(sel cli.Selection, root string) (deviceFilter, error) {
	f := deviceFilter{sel: sel}
	switch {
	case sel.Default() && (root != "" || os.Getenv(device.RootEnv) == ""):
		return f, nil
	case sel.Default():
		// GAUDI_ROOT=DIR: the devices served under DIR, all of them.
		return servedDefault(f, device.SysFS{})
	case sel.Selector.Sim:
		return f, fmt.Errorf("%s: %w; choose a Gaudi, or -device \"\" for every device", origin(sel), ErrSimulated)
	}
	sys := device.SysFS{Root: root}
	nodes, err := sys.Nodes()
	if err != nil {
		return f, fmt.Errorf("%s: list devices: %w", origin(sel), err)
	}
	var cands []cli.Candidate
	if len(nodes) > 0 {
		cands, err = sel.DevicesIn(sys)
		if err != nil && !errors.Is(err, device.ErrNoDevice) {
			return f, err
		}
	}
	if path := sel.Selector.Device.Path; sel.Selector.Device.Kind == device.SelectPath {
		if len(cands) == 0 {
			// Not a Gaudi's: any device node will do.
			n, err := NodeAt(path)
			if err != nil {
				return f, fmt.Errorf("%s: %w", origin(sel), err)
			}
			f.nodes = []DeviceNode{n}
			return f, nil
		}
		n, err := sysfsNode(root, cands[0].Node, path)
		if err != nil {
			return f, fmt.Errorf("%s: %w", origin(sel), err)
		}
		f.nodes, f.gaudi = []DeviceNode{n}, true
		return f, nil
	}
	if len(nodes) == 0 {
		return f, fmt.Errorf("%s: no Gaudi on this machine to match %q: %w", origin(sel), sel.Text, device.ErrNoDevice)
	}
	if len(cands) == 0 {
		return f, fmt.Errorf("%s: no Gaudi matches: %w", origin(sel), device.ErrNoDevice)
	}
	for _, c := range cands {
		for _, path := range []string{c.Node.Path, c.Node.ControlPath} {
			if path == "" {
				continue // no control node yet
			}
			n, err := sysfsNode(root, c.Node, path)
			if err != nil {
				return f, fmt.Errorf("%s: %w", origin(sel), err)
			}
			f.nodes = append(f.nodes, n)
		}
	}
	if len(f.nodes) > MaxDevices {
		return f, fmt.Errorf("%s names %d device nodes; hltrace traces at most %d: choose fewer devices",
			origin(sel), len(f.nodes), MaxDevices)
	}
	f.gaudi = true
	return f, nil
}

// servedDefault is the default selection under GAUDI_ROOT: every node of
// every Gaudi sys lists, which are the served devices.
func servedDefault(f deviceFilter, sys device.SysFS) (deviceFilter, error) {
	origin := origin(f.sel)
	nodes, err := sys.Nodes()
	if err != nil {
		return f, fmt.Errorf("%s: list devices: %w", origin, err)
	}
	if len(nodes) == 0 {
		return f, fmt.Errorf("%s: no Gaudi there: %w", origin, device.ErrNoDevice)
	}
	for _, n := range nodes {
		for _, path := range []string{n.Path, n.ControlPath} {
			if path == "" {
				continue
			}
			dn, err := sysfsNode("", n, path)
			if err != nil {
				return f, fmt.Errorf("%s: %w", origin, err)
			}
			f.nodes = append(f.nodes, dn)
		}
	}
	if len(f.nodes) > MaxDevices {
		return f, fmt.Errorf("%s has %d device nodes; hltrace traces at most %d: choose fewer devices with -device", origin, len(f.nodes), MaxDevices)
	}
	f.gaudi = true
	return f, nil
}

// sysfsNode returns path, a node of the Gaudi n, with the device number
// its sysfs class entry gives in its dev attribute ("MAJOR:MINOR"):
// class/accel/accelN and accel_controlDN, or class/habanalabs/hlN and
// hl_controlDN on the legacy layout.
func sysfsNode(root string, n device.Node, path string) (DeviceNode, error) {
	if r := os.Getenv(device.RootEnv); root == "" && r != "" && !strings.HasPrefix(path, r+"/") {
		// The kernel's name of a node served under GAUDI_ROOT
		// (device.SysFS opens it there).
		path = filepath.Join(r, path)
	}
	if served, err := NodeAt(path); err == nil && served.Served {
		return served, nil // no device number: known by identity
	}
	root = device.SysFS{Root: root}.RootDir()
	class := "accel"
	if n.Layout == device.LayoutLegacy {
		class = "habanalabs"
	}
	attr := sysfsattr.Join(root, "sys", "class", class, filepath.Base(path), "dev")
	v, err := sysfsattr.Read(attr)
	if err != nil {
		return DeviceNode{}, fmt.Errorf("device %s: %w", path, err)
	}
	rdev, err := parseDevNumber(v)
	if err != nil {
		return DeviceNode{}, fmt.Errorf("device %s: %s: %w", path, attr, err)
	}
	return DeviceNode{Path: path, Rdev: rdev}, nil
}

// parseDevNumber reads a sysfs dev attribute, "MAJOR:MINOR" in decimal,
// as the kernel's dev_t (major << 20 | minor; include/linux/kdev_t.h).
func parseDevNumber(v string) (uint32, error) {
	maj, min, ok := strings.Cut(v, ":")
	major, err1 := strconv.ParseUint(maj, 10, 12)
	minor, err2 := strconv.ParseUint(min, 10, 20)
	if !ok || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%q is not MAJOR:MINOR", v)
	}
	return uint32(major<<20 | minor), nil
}

// paths lists the filter's nodes.
func (f deviceFilter) paths() []string {
	var out []string
	for _, n := range f.nodes {
		out = append(out, n.Path)
	}
	return out
}

// commandEnv is what the command's environment gains: GAUDI_DEVICE set
// to -device's selector, so that a program of this module opens the
// device traced, when the flag (rather than the variable, which the
// command inherits) named Gaudis.
func (f deviceFilter) commandEnv() []string {
	if !f.gaudi || f.sel.From != "-device" || f.sel.Default() {
		return nil // an empty GAUDI_DEVICE would say nothing
	}
	return []string{"GAUDI_DEVICE=" + f.sel.Text}
}

// describe is the banner's account of the filter, nil for none.
func (f deviceFilter) describe(width int) []string {
	if f.nodes == nil {
		return nil
	}
	lines := wrapList("only the ioctls on", f.paths(), width)
	note := "(" + origin(f.sel)
	if env := f.commandEnv(); env != nil {
		note += "; the command runs with " + env[0]
	}
	return append(lines, "  "+note+")")
}
