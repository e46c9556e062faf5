// Package pcie reads a PCI function's link from sysfs (the negotiated and
// the maximum speed and width) and says what bandwidth such a link can
// carry, for tools that judge measured DMA bandwidth (hlperf) or show the
// link (hlinfo).
//
// The kernel's attributes are current_link_speed, current_link_width,
// max_link_speed and max_link_width in /sys/bus/pci/devices/ADDR/
// (drivers/pci/pci-sysfs.c; speeds print as "16.0 GT/s PCIe", older
// kernels "8 GT/s" or "8.0 GT/s", and "Unknown" when the link is down).
package pcie

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gaudi-go/gaudi/internal/sysfsattr"
)

// ErrNoLink reports a function without a readable link: no such function,
// no link attributes (a virtual function, a simulated device), or a link
// the kernel reports as unknown.
var ErrNoLink = errors.New("no PCIe link")

// Link is a PCIe link as sysfs shows it.
type Link struct {
	// Address is the PCI function, such as "0000:19:00.0".
	Address string
	// SpeedGTs and Width are the negotiated rate per lane, in GT/s, and
	// lane count.
	SpeedGTs float64
	Width    int
	// MaxSpeedGTs and MaxWidth are what the function supports; 0 when
	// sysfs does not say.
	MaxSpeedGTs float64
	MaxWidth    int
}

// Gen returns the PCIe generation of a rate in GT/s (1 for 2.5, 2 for 5,
// 3 for 8, 4 for 16, 5 for 32, 6 for 64), 0 for a rate no generation has.
func Gen(gts float64) int {
	for g, r := range []float64{2.5, 5, 8, 16, 32, 64} {
		if gts == r {
			return g + 1
		}
	}
	return 0
}

// LaneBandwidth returns the bytes per second one lane carries in each
// direction at a rate in GT/s after line encoding: 8b/10b for 2.5 and
// 5 GT/s, 128b/130b for 8 to 32 GT/s, and for 64 GT/s (FLIT mode) the
// 242 payload bytes of every 256-byte FLIT. Packet headers, flow control
// and the DMA engine's own limits come on top, so no link reaches it.
// (Encodings from the PCI Express Base Specification revisions 2.0, 3.0
// and 6.0.) It is 0 for a rate no generation has.
func LaneBandwidth(gts float64) float64 {
	switch Gen(gts) {
	case 1, 2:
		return gts * 1e9 * 8 / 10 / 8
	case 3, 4, 5:
		return gts * 1e9 * 128 / 130 / 8
	case 6:
		return gts * 1e9 / 8 * 242 / 256
	}
	return 0
}

// Bandwidth returns the bytes per second the link carries in each
// direction after line encoding (LaneBandwidth times Width).
func (l Link) Bandwidth() float64 { return LaneBandwidth(l.SpeedGTs) * float64(l.Width) }

// Degraded reports whether the link trained below what the function
// supports, in speed or width.
func (l Link) Degraded() bool {
	return l.MaxSpeedGTs > 0 && l.SpeedGTs < l.MaxSpeedGTs || l.MaxWidth > 0 && l.Width < l.MaxWidth
}

// String returns "Gen4 x16 (16 GT/s)", with "of Gen5 x16" added when the
// link is degraded.
func (l Link) String() string {
	s := fmt.Sprintf("Gen%d x%d (%s GT/s)", Gen(l.SpeedGTs), l.Width, strconv.FormatFloat(l.SpeedGTs, 'f', -1, 64))
	if l.Degraded() {
		s += fmt.Sprintf(", below its maximum Gen%d x%d", Gen(l.MaxSpeedGTs), l.MaxWidth)
	}
	return s
}

// ReadLink reads the link of the PCI function addr ("0000:19:00.0") from
// the sysfs tree under root ("/" or "" for the live system, a fixture
// directory holding sys/ in tests). A function without link attributes,
// or with a link sysfs reports as unknown, is an error matching ErrNoLink.
func ReadLink(root, addr string) (Link, error) {
	dir := sysfsattr.Join(root, "sys/bus/pci/devices", addr)
	l := Link{Address: addr}
	speed, err := sysfsattr.Read(dir + "/current_link_speed")
	if err != nil {
		return l, fmt.Errorf("pcie %s: %w (%w)", addr, ErrNoLink, err)
	}
	if l.SpeedGTs, err = parseSpeed(speed); err != nil {
		return l, fmt.Errorf("pcie %s: current_link_speed: %w", addr, err)
	}
	width, err := sysfsattr.Read(dir + "/current_link_width")
	if err != nil {
		return l, fmt.Errorf("pcie %s: %w (%w)", addr, ErrNoLink, err)
	}
	if l.Width, err = parseWidth(width); err != nil {
		return l, fmt.Errorf("pcie %s: current_link_width: %w", addr, err)
	}
	if s, err := sysfsattr.Read(dir + "/max_link_speed"); err == nil {
		l.MaxSpeedGTs, _ = parseSpeed(s)
	}
	if s, err := sysfsattr.Read(dir + "/max_link_width"); err == nil {
		l.MaxWidth, _ = parseWidth(s)
	}
	return l, nil
}

// parseSpeed reads "16.0 GT/s PCIe", "8 GT/s" or "2.5 GT/s".
func parseSpeed(s string) (float64, error) {
	num, rest, ok := strings.Cut(s, " GT/s")
	if !ok || rest != "" && rest != " PCIe" {
		if strings.HasPrefix(s, "Unknown") {
			return 0, fmt.Errorf("%w: speed %q", ErrNoLink, s)
		}
		return 0, fmt.Errorf("speed %q: want \"N GT/s\"", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || Gen(v) == 0 {
		return 0, fmt.Errorf("speed %q: not a PCIe rate", s)
	}
	return v, nil
}

// parseWidth reads "16" (or "x16").
func parseWidth(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(s, "x"))
	if err != nil || n < 0 || n > 32 {
		return 0, fmt.Errorf("width %q: want a lane count", s)
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: width 0 (link down)", ErrNoLink)
	}
	return n, nil
}
