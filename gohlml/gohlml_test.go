package gohlml_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/gohlml"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// startSim initializes the library over the control nodes of an
// in-process simulator of the given chips, and shuts it down at the end
// of the test.
func startSim(t *testing.T, asics ...sim.ASIC) *sim.System {
	t.Helper()
	var cfg sim.Config
	for _, a := range asics {
		cfg.Devices = append(cfg.Devices, sim.DeviceConfig{ASIC: a})
	}
	sys, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.Close() })
	var devs []*device.Device
	for _, sd := range sys.Devices() {
		d, err := simdevice.OpenSimControl(sd)
		if err != nil {
			t.Fatal(err)
		}
		devs = append(devs, d)
	}
	if err := gohlml.InitWithDevices(devs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := gohlml.Shutdown(); err != nil && !errors.Is(err, gohlml.ErrNotIntialized) {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return sys
}

func TestNotInitialized(t *testing.T) {
	if _, err := gohlml.DeviceCount(); err != gohlml.ErrNotIntialized {
		t.Fatalf("DeviceCount before Initialize: %v, want ErrNotIntialized", err)
	}
	if err := gohlml.Shutdown(); err != gohlml.ErrNotIntialized {
		t.Fatalf("Shutdown before Initialize: %v, want ErrNotIntialized", err)
	}
	var zero gohlml.Device
	if _, err := zero.PowerUsage(); err != gohlml.ErrInvalidArgument {
		t.Fatalf("zero Device: %v, want ErrInvalidArgument", err)
	}
}

func TestValuesPerASIC(t *testing.T) {
	for _, a := range []sim.ASIC{sim.Gaudi, sim.Gaudi2, sim.Gaudi3} {
		t.Run(a.String(), func(t *testing.T) {
			sys := startSim(t, a)
			if err := gohlml.InitWithDevices(nil); err != gohlml.ErrAlreadyInitialized {
				t.Fatalf("second init: %v, want ErrAlreadyInitialized", err)
			}
			n, err := gohlml.DeviceCount()
			if err != nil || n != 1 {
				t.Fatalf("DeviceCount = %d, %v; want 1", n, err)
			}
			d, err := gohlml.DeviceHandleByIndex(0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := gohlml.DeviceHandleByIndex(1); err != gohlml.ErrInvalidArgument {
				t.Fatalf("index 1: %v, want ErrInvalidArgument", err)
			}
			ctl, err := simdevice.OpenSimControl(sys.Device(0))
			if err != nil {
				t.Fatal(err)
			}
			defer ctl.Close()
			hw := ctl.HWIPInfo()

			name, err := d.Name()
			if err != nil || name != hw.CardName || name == "" {
				t.Errorf("Name = %q, %v; want %q", name, err, hw.CardName)
			}
			total, used, free, err := d.MemoryInfo()
			if err != nil || total != hw.DRAMSize || used+free != total {
				t.Errorf("MemoryInfo = %d, %d, %d, %v; want total %d = used + free", total, used, free, err, hw.DRAMSize)
			}
			id, err := d.PCIID()
			// hlml_pci_info_t's pci_device_id: device id high, vendor low.
			if want := uint(hw.DeviceID)<<16 | 0x1da3; err != nil || id != want {
				t.Errorf("PCIID = %#x, %v; want %#x", id, err, want)
			}
			bus, err := d.PCIBusID()
			if want, _ := ctl.PCIAddress(); err != nil || bus != want {
				t.Errorf("PCIBusID = %q, %v; want %q", bus, err, want)
			}
			if p, err := d.PowerUsage(); err != nil {
				t.Errorf("PowerUsage = %d, %v", p, err)
			} else if want, _ := ctl.Power(); uint64(p) != want {
				t.Errorf("PowerUsage = %d, want INFO POWER %d", p, want)
			}
			if c, err := d.SOCClockMax(); err != nil {
				t.Errorf("SOCClockMax: %v", err)
			} else if want, _ := ctl.ClockRate(); uint32(c) != want.MaxMHz {
				t.Errorf("SOCClockMax = %d, want %d", c, want.MaxMHz)
			}
			if _, err := d.UtilizationInfo(); err != nil {
				t.Errorf("UtilizationInfo: %v", err)
			}
			if _, err := d.EnergyConsumptionCounter(); err != nil {
				t.Errorf("EnergyConsumptionCounter: %v", err)
			}
			if _, err := d.ClockThrottleReasons(); err != nil {
				t.Errorf("ClockThrottleReasons: %v", err)
			}
			if _, err := d.PCIeTX(); err != nil {
				t.Errorf("PCIeTX: %v", err)
			}
			// Nothing in the driver gives these: never a made-up value.
			for name, f := range map[string]func() (uint, error){
				"TemperatureOnChip": d.TemperatureOnChip, "TemperatureOnBoard": d.TemperatureOnBoard,
				"BoardID": d.BoardID, "MMEClockMax": d.MMEClockMax, "PCILinkWidth": d.PCILinkWidth,
				"PowerManagementDefaultLimit": d.PowerManagementDefaultLimit,
			} {
				if v, err := f(); err != gohlml.ErrNotSupported || v != 0 {
					t.Errorf("%s = %d, %v; want ErrNotSupported", name, v, err)
				}
			}
			if s, err := d.SerialNumber(); err != gohlml.ErrNotSupported {
				t.Errorf("SerialNumber without sysfs = %q, %v; want ErrNotSupported", s, err)
			}
			if n, err := d.NumaNode(); n != nil || err != nil {
				t.Errorf("NumaNode without sysfs = %v, %v; want nil, nil", n, err)
			}
			// The out-of-tree driver's ECC mode: the kernel's driver does
			// not serve MODULE_PARAMS.
			drv, err := ctl.DriverInfo()
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = d.ECCMode()
			if oot := drv.Driver == device.DriverOutOfTree; oot != (err == nil) || (!oot && err != gohlml.ErrNotSupported) {
				t.Errorf("ECCMode on %v: %v", drv.Driver, err)
			}
		})
	}
}

func TestShutdownInvalidatesHandles(t *testing.T) {
	startSim(t, sim.Gaudi2)
	d, err := gohlml.DeviceHandleByIndex(0)
	if err != nil {
		t.Fatal(err)
	}
	es := gohlml.NewEventSet()
	defer gohlml.DeleteEventSet(es)
	if err := gohlml.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.PowerUsage(); err != gohlml.ErrNotIntialized {
		t.Errorf("PowerUsage after Shutdown: %v, want ErrNotIntialized", err)
	}
	if _, err := d.MinorNumber(); err != gohlml.ErrNotIntialized {
		t.Errorf("MinorNumber after Shutdown: %v, want ErrNotIntialized", err)
	}
}

func TestClockThrottleBits(t *testing.T) {
	// HLML_CLOCKS_THROTTLE_REASON_POWER and _THERMAL (hlml.h) are the
	// driver's bits, which ClockThrottleReasons passes through.
	if hl.HL_CLK_THROTTLE_POWER != 1<<0 || hl.HL_CLK_THROTTLE_THERMAL != 1<<1 {
		t.Fatalf("driver throttle bits %#x %#x, HLML's are 0x1 0x2", hl.HL_CLK_THROTTLE_POWER, hl.HL_CLK_THROTTLE_THERMAL)
	}
}

// TestConcurrentUse reads every value from many goroutines while another
// resets the device, under -race.
func TestConcurrentUse(t *testing.T) {
	sys := startSim(t, sim.Gaudi2, sim.Gaudi3)
	var wg sync.WaitGroup
	errc := make(chan error, 64)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				d, err := gohlml.DeviceHandleByIndex(uint(g % 2))
				if err != nil {
					errc <- err
					return
				}
				if _, _, _, err := d.MemoryInfo(); err != nil && !errors.Is(err, gohlml.ErrAipIsLost) {
					errc <- fmt.Errorf("MemoryInfo: %w", err)
					return
				}
				if _, err := d.Name(); err != nil {
					errc <- fmt.Errorf("Name: %w", err)
					return
				}
				if _, err := d.PowerUsage(); err != nil && !errors.Is(err, gohlml.ErrAipIsLost) {
					errc <- fmt.Errorf("PowerUsage: %w", err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 5 {
			sys.Device(1).Reset()
		}
	}()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}

// TestNewDevice reads a device the caller opened, without Initialize.
func TestNewDevice(t *testing.T) {
	sys, err := sim.New(sim.Config{Devices: []sim.DeviceConfig{{ASIC: sim.Gaudi3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	ctl, err := simdevice.OpenSimControl(sys.Device(0))
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	d := gohlml.NewDevice(gohlml.DeviceSource{Control: ctl})
	if name, err := d.Name(); err != nil || name != ctl.HWIPInfo().CardName {
		t.Errorf("Name = %q, %v; want %q", name, err, ctl.HWIPInfo().CardName)
	}
	if _, err := d.SerialNumber(); err != gohlml.ErrNotSupported {
		t.Errorf("SerialNumber without a sysfs node: %v, want ErrNotSupported", err)
	}
	none := gohlml.NewDevice(gohlml.DeviceSource{})
	if p, err := none.PowerUsage(); p != 0 || err == nil || err == gohlml.ErrNotSupported {
		t.Errorf("PowerUsage without a control node = %d, %v; want a failure", p, err)
	}
}

// TestShutdownWhileInUse: goroutines that read values and wait for events
// while another shuts the library down get a value or ErrNotIntialized
// (a wait: ErrNotIntialized or a timeout), never another error, a panic
// or a race (go test -race).
func TestShutdownWhileInUse(t *testing.T) {
	startSim(t, sim.Gaudi2, sim.Gaudi3)
	es := gohlml.NewEventSet()
	defer gohlml.DeleteEventSet(es)
	errc := make(chan error, 64)
	var wg sync.WaitGroup
	started := make(chan struct{}, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started <- struct{}{}
			for {
				d, err := gohlml.DeviceHandleByIndex(uint(g % 2))
				if err == gohlml.ErrNotIntialized {
					return
				}
				if err != nil {
					errc <- fmt.Errorf("DeviceHandleByIndex: %w", err)
					return
				}
				for name, f := range map[string]func() (uint, error){
					"PowerUsage": d.PowerUsage, "SOCClockInfo": d.SOCClockInfo, "PCIeTX": d.PCIeTX, "ModuleID": d.ModuleID,
				} {
					if _, err := f(); err != nil && !errors.Is(err, gohlml.ErrNotIntialized) {
						errc <- fmt.Errorf("%s: %w", name, err)
						return
					}
				}
				if _, _, _, err := d.MemoryInfo(); err != nil && !errors.Is(err, gohlml.ErrNotIntialized) {
					errc <- fmt.Errorf("MemoryInfo: %w", err)
					return
				}
				if g == 0 {
					if e, err := gohlml.WaitForEvent(es, 1); err != nil && !errors.Is(err, gohlml.ErrNotIntialized) || e.Etype != 0 {
						errc <- fmt.Errorf("WaitForEvent: %+v, %w", e, err)
						return
					}
				}
			}
		}()
	}
	for range 16 {
		<-started
	}
	if err := gohlml.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
}
