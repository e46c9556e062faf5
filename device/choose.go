package device

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gaudi-go/gaudi/ioctl"
)

// stderr is where OpenDefault says which device it chose.
var stderr io.Writer = os.Stderr

// OpenIndex opens the compute node of hardware device N (accelN or hlN).
func OpenIndex(n int) (*Device, error) {
	return openNode(func(nd Node) bool { return nd.Index == n }, fmt.Sprintf("index %d", n))
}

// OpenPCI opens the compute node of the hardware device at a PCI address
// ("0000:19:00.0", or the short "19:00.0").
func OpenPCI(addr string) (*Device, error) {
	nd, err := SysFS{}.NodeByPCIAddress(addr)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", addr, err)
	}
	return Open(nd.Path)
}

// OpenModule opens the compute node of the hardware device with a module id
// (its slot in the server), as sysfs module_id reports it.
func OpenModule(id int) (*Device, error) {
	return openNode(func(nd Node) bool { return nd.ModuleID == id }, fmt.Sprintf("module %d", id))
}

func openNode(match func(Node) bool, what string) (*Device, error) {
	nodes, err := Nodes()
	if err != nil {
		return nil, err
	}
	for _, nd := range nodes {
		if match(nd) {
			return Open(nd.Path)
		}
	}
	return nil, fmt.Errorf("open %s: %w", what, ErrNoDevice)
}

// OpenFirstFree opens the first hardware device no process owns, skipping
// busy ones, ones in reset and ones that are not operational (disabled or
// needing a reset).
func OpenFirstFree() (*Device, error) {
	nodes, err := Nodes()
	if err != nil {
		return nil, err
	}
	return firstFree(nodes)
}

func firstFree(nodes []Node) (*Device, error) {
	var last error
	for _, nd := range nodes {
		d, err := Open(nd.Path)
		if err == nil {
			return d, nil
		}
		if !unavailable(err) {
			return nil, err
		}
		last = err
	}
	if last != nil {
		return nil, fmt.Errorf("every device is in use (%v): %w", last, ErrNoDevice)
	}
	return nil, ErrNoDevice
}

// unavailable reports whether an open failed only because the device
// cannot be had now: another process owns it (ioctl.ErrDeviceBusy), it is
// resetting (ioctl.ErrInReset), or it is not operational
// (ioctl.ErrNotOperational).
func unavailable(err error) bool {
	return errors.Is(err, ioctl.ErrDeviceBusy) || errors.Is(err, ioctl.ErrInReset) || errors.Is(err, ioctl.ErrNotOperational)
}

// OpenDefault opens the device tools and examples use, and says on stderr
// which one. GAUDI_DEVICE chooses: "sim" (the first free simulated device),
// "sim:N", an index N, a device path, or a PCI address. Without it, the
// first free hardware device is used when any is present, else the
// simulator.
func OpenDefault() (*Device, error) {
	d, why, err := openDefault(os.Getenv("GAUDI_DEVICE"), Nodes)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "gaudi: using %s, %s\n", d, why)
	return d, nil
}

// openDefault is OpenDefault with the choice and the listing injected.
func openDefault(choice string, list func() ([]Node, error)) (*Device, string, error) {
	switch {
	case choice == "sim":
		d, err := OpenFirstFreeSim()
		return d, "the simulator (GAUDI_DEVICE=sim)", err
	case strings.HasPrefix(choice, "sim:"):
		d, err := Open(choice)
		return d, "the simulator (GAUDI_DEVICE=" + choice + ")", err
	case choice != "":
		d, err := openChoice(choice)
		return d, "hardware (GAUDI_DEVICE=" + choice + ")", err
	}
	nodes, err := list()
	if err != nil {
		return nil, "", fmt.Errorf("list devices: %w", err)
	}
	if len(nodes) > 0 {
		d, err := firstFree(nodes)
		return d, "hardware", err
	}
	d, err := OpenFirstFreeSim()
	return d, "the simulator (no Gaudi found; set GAUDI_DEVICE to choose)", err
}

func openChoice(choice string) (*Device, error) {
	if n, err := strconv.Atoi(choice); err == nil {
		return OpenIndex(n)
	}
	if strings.HasPrefix(choice, "/") {
		return Open(choice)
	}
	if strings.Contains(choice, ":") {
		return OpenPCI(choice)
	}
	return nil, fmt.Errorf("GAUDI_DEVICE=%q: want sim, sim:N, an index, a path or a PCI address", choice)
}
