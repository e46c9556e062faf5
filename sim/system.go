package sim

import (
	"fmt"
	"os"
)

// System is a simulated server: a set of devices that share a lock
// directory. It is safe for concurrent use.
type System struct {
	cfg     Config
	devices []*Device
}

// Close releases the device memory of every device: the memfds and
// mappings behind DRAM, and the SRAM, and what a compute context that
// outlived its files (kept by dma-buf exports) holds. Files handed out by
// dma-buf exports stay valid with their contents. Call it when the System is no longer
// used: later DRAM and SRAM accesses fail, and dma-buf exports too
// (ENODEV). Close is idempotent. In strict mode it returns the violations
// recorded and not expected (CheckStrict); the System is closed all the
// same.
func (s *System) Close() error {
	for _, d := range s.devices {
		d.mu.Lock()
		d.stopWatchdogLocked() // no reset after the system is gone
		f := d.compute
		lingering := f != nil && f.lingering
		d.mu.Unlock()
		if lingering {
			// A context kept by its exports ends with the system, also
			// one that imported its own export and so holds itself
			// (import_unsafe.go): its imports hold descriptors and
			// mappings of this process.
			d.finish(f)
		}
		d.pqmClose()
		d.closeSRAM()
		d.dram.close()
		d.strict.proc.close()
	}
	return s.CheckStrict()
}

// New builds a System from cfg. Devices start operational.
func New(cfg Config) (*System, error) {
	if len(cfg.Devices) == 0 {
		cfg.Devices = Default(Gaudi2, 1).Devices
	}
	gaudi3 := false
	for _, dc := range cfg.Devices {
		gaudi3 = gaudi3 || dc.ASIC == Gaudi3
	}
	switch {
	case gaudi3 && cfg.Driver == DriverUpstream:
		// Linux has no Gaudi3 support: only Intel's out-of-tree driver
		// binds PCI id 0x1060.
		return nil, fmt.Errorf("the upstream driver does not support Gaudi3: use the out-of-tree driver")
	case gaudi3 && cfg.Legacy:
		return nil, fmt.Errorf("Gaudi3 has no legacy ioctl encoding: its only driver is the out-of-tree one")
	case gaudi3 && cfg.Driver == 0:
		cfg.Driver = DriverOutOfTree // whatever GAUDI_SIM_DRIVER says
	case cfg.Driver == 0 && cfg.Legacy:
		cfg.Driver = DriverUpstream // the legacy encoding is the old kernels' driver
	}
	drv, err := resolveDriver(cfg.Driver)
	if err != nil {
		return nil, err
	}
	cfg.Driver = drv
	if cfg.Legacy && drv == DriverOutOfTree {
		// The out-of-tree driver serves /dev/accel nodes only (DRM or its
		// own accel class); the 'H' encoding is the pre-accel driver's.
		return nil, fmt.Errorf("the out-of-tree driver has no legacy ioctl encoding")
	}
	if cfg.LockDir == "" {
		cfg.LockDir = DefaultLockDir()
	}
	if err := os.MkdirAll(cfg.LockDir, 0o700); err != nil {
		return nil, fmt.Errorf("create simulator lock directory: %w", err)
	}
	strict, err := cfg.Strict.resolve()
	if err != nil {
		return nil, err
	}
	s := &System{cfg: cfg}
	seen := map[string]bool{}
	for i, dc := range cfg.Devices {
		d, err := newDevice(i, dc, cfg, strict)
		if err != nil {
			return nil, fmt.Errorf("simulated device %d: %w", i, err)
		}
		if seen[d.cfg.PCIAddress] {
			return nil, fmt.Errorf("simulated device %d: PCI address %s used twice", i, d.cfg.PCIAddress)
		}
		seen[d.cfg.PCIAddress] = true
		s.devices = append(s.devices, d)
	}
	return s, nil
}

// Devices returns the devices in index order.
func (s *System) Devices() []*Device { return append([]*Device(nil), s.devices...) }

// Device returns device i, or nil when there is none.
func (s *System) Device(i int) *Device {
	if i < 0 || i >= len(s.devices) {
		return nil
	}
	return s.devices[i]
}
