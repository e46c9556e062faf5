package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config describes a simulated system: a server with one or more devices.
type Config struct {
	// Devices lists the devices; when empty, Default is used.
	Devices []DeviceConfig
	// LockDir holds the lock files that make the one-compute-context rule
	// hold across processes. Processes that share it share devices. Empty
	// means DefaultLockDir().
	LockDir string
	// Legacy makes the devices answer the legacy 'H' ioctl encoding of
	// kernels up to 6.5 (and refuse the DRM one with ENOTTY), as /dev/hlN
	// did; by default they speak the DRM encoding of current kernels.
	Legacy bool
	// Driver is the habanalabs driver the devices behave as: the kernel's
	// (linux 6.12) or Intel's out-of-tree one. The zero value takes
	// GAUDI_SIM_DRIVER from the environment ("upstream" or "oot"), else
	// DriverUpstream, so that a whole test suite can be run on either
	// flavour (with Legacy, the zero value is DriverUpstream); System.Driver
	// reports the one in force. The out-of-tree driver has no legacy
	// encoding: New refuses it with Legacy. Only the out-of-tree driver
	// supports Gaudi3: with a Gaudi3 device the zero value is
	// DriverOutOfTree whatever the environment says, and New refuses
	// DriverUpstream and Legacy.
	Driver Driver
	// NoPeerToPeer makes the out-of-tree driver behave as built for a
	// kernel without dma-buf peer-to-peer support (_HAS_PEER2PEER unset):
	// MEMORY REG_DMABUF_FD answers EPERM. It has no effect on the
	// upstream flavour, which does not know the op.
	NoPeerToPeer bool
	// ServedMemoryLimit bounds the device memory one file opened on
	// behalf of another process (OpenFor: a client of tools/hlsim) may
	// hold allocated at once, so that one client of a shared server
	// cannot make it hold the machine's memory (the simulator's DRAM is
	// host memory): an ALLOC beyond it answers ENOMEM, as the driver does
	// when the DRAM is exhausted. Freed memory is scrubbed and given back
	// (dram_scrub.go). 0 means no bound but the DRAM size.
	ServedMemoryLimit uint64
	// Strict turns strict mode on or off (strict.go); the zero value,
	// StrictAuto, turns it on in test binaries unless GAUDI_SIM_STRICT=0.
	Strict StrictMode
}

// DeviceConfig describes one simulated device. Zero fields take the ASIC's
// defaults.
type DeviceConfig struct {
	ASIC       ASIC
	ModuleID   uint32 // the card's location in the server, 0..7
	PCIAddress string // e.g. "0000:19:00.0"
	// DRAMSize is the device's total HBM in bytes, before the driver's
	// reservation; Gaudi2 defaults to 96 GiB (six HBMs, 768 MB pages) and
	// takes 80 GiB as a card with one HBM binned (640 MB pages), Gaudi
	// defaults to 32 GiB, Gaudi3 to 128 GiB (eight 16 GiB HBMs, 32 MiB
	// pages; 112 GiB is a card with one HBM binned). Other sizes keep the default page and must be a
	// whole number of pages above the driver's reservation.
	DRAMSize uint64
	// Revision is the PCI revision (Gaudi2: 1 = A, 2 = B, 3 = C, 4 = D).
	Revision uint8
	// PCIeBandwidth is the bandwidth of each direction of the device's
	// PCIe link in bytes per second, which LIN_DMA transfers between host
	// memory and the device share; 0 (the default) means unlimited.
	PCIeBandwidth uint64
	// ReleaseWatchdog is how long the driver waits, after a CS timeout
	// while the user has an eventfd registered, for the compute file to
	// be closed before it hard-resets the device and kills the process
	// (device_release_watchdog_timeout_sec); 0 means the driver's 30 s.
	ReleaseWatchdog time.Duration
}

// releaseWatchdog is HL_DEVICE_RELEASE_WATCHDOG_TIMEOUT_SEC.
const releaseWatchdog = 30 * time.Second

// pciBuses are the bus numbers of the eight OAM slots of an HLS-2 style
// server, used for default PCI addresses.
var pciBuses = []int{0x19, 0x1a, 0x33, 0x34, 0x4d, 0x4e, 0x9a, 0x9b}

// Default returns a server of n devices of one ASIC with module ids 0..n-1
// and distinct PCI addresses.
func Default(asic ASIC, n int) Config {
	var c Config
	for i := 0; i < n; i++ {
		bus := 0x10 + i
		if i < len(pciBuses) {
			bus = pciBuses[i]
		}
		c.Devices = append(c.Devices, DeviceConfig{
			ASIC:       asic,
			ModuleID:   uint32(i),
			PCIAddress: fmt.Sprintf("0000:%02x:00.0", bus),
		})
	}
	return c
}

// FromEnv returns the configuration the tools use when they fall back to
// the simulator: GAUDI_SIM="gaudi2:8" (ASIC and device count, the default),
// "gaudi:2", "gaudi3:8", and so on, with an optional third part naming the driver:
// "gaudi2:8:oot" (Intel's out-of-tree driver) or "gaudi2:8:upstream";
// "gaudi2::oot" keeps the default count. Without a driver part the
// driver comes from GAUDI_SIM_DRIVER (see Config.Driver).
// GAUDI_SIM_LOCKDIR overrides DefaultLockDir.
func FromEnv() (Config, error) {
	spec := os.Getenv("GAUDI_SIM")
	lockDir := os.Getenv("GAUDI_SIM_LOCKDIR")
	if spec == "" {
		c := Default(Gaudi2, 8)
		c.LockDir = lockDir
		return c, nil
	}
	name, rest, _ := strings.Cut(spec, ":")
	count, drv, _ := strings.Cut(rest, ":")
	asic, err := ParseASIC(name)
	if err != nil {
		return Config{}, fmt.Errorf("GAUDI_SIM: %w", err)
	}
	n := 8
	if count != "" {
		n, err = strconv.Atoi(count)
		if err != nil || n < 1 || n > 64 {
			return Config{}, fmt.Errorf("GAUDI_SIM: bad device count %q", count)
		}
	}
	c := Default(asic, n)
	c.LockDir = lockDir
	if drv != "" {
		if c.Driver, err = ParseDriver(drv); err != nil {
			return Config{}, fmt.Errorf("GAUDI_SIM: %w", err)
		}
	}
	return c, nil
}

// DefaultLockDir is where lock files live unless Config.LockDir says
// otherwise: a per-user directory in the runtime or temporary directory.
func DefaultLockDir() string {
	base := os.Getenv("XDG_RUNTIME_DIR")
	if base == "" {
		base = os.TempDir()
	}
	return filepath.Join(base, fmt.Sprintf("gaudi-sim-%d", os.Getuid()))
}
