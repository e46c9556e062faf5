package device

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

func testSystem(t *testing.T, cfg sim.Config) *sim.System {
	t.Helper()
	cfg.LockDir = t.TempDir()
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// simFile opens a node of a simulated device and reports a refused open
// as ioctl.OpenFile reports a kernel one.
func simFile(sd *sim.Device, control bool) (ioctl.File, error) {
	open := sd.Open
	if control {
		open = sd.OpenControl
	}
	f, err := open()
	if err != nil {
		var errno unix.Errno
		if errors.As(err, &errno) {
			return nil, &ioctl.Error{Op: "OPEN", Sub: sd.Name(), Errno: errno}
		}
		return nil, err
	}
	return f, nil
}

// openSim opens the compute node of a simulated device, as
// simdevice.OpenSim does (which this package's tests cannot import).
func openSim(sd *sim.Device) (*Device, error) {
	f, err := simFile(sd, false)
	if err != nil {
		return nil, err
	}
	return FromFile(f, FileOptions{Path: sd.Name()})
}

// openSimControl opens the control node of a simulated device.
func openSimControl(sd *sim.Device) (*Device, error) {
	f, err := simFile(sd, true)
	if err != nil {
		return nil, err
	}
	return FromFile(f, FileOptions{Control: true, Path: sd.Name()})
}

func TestASICFromPCI(t *testing.T) {
	for _, tt := range []struct {
		id   uint32
		rev  uint8
		want ASIC
	}{
		{0x0001, 0, Goya}, {0x1000, 1, Gaudi}, {0x1010, 1, GaudiSec},
		{0x1020, 1, Gaudi2}, {0x1020, 2, Gaudi2B}, {0x1020, 3, Gaudi2C}, {0x1020, 4, Gaudi2D},
		{0x1020, 9, ASICUnknown}, {0x1060, 1, Gaudi3}, {0xdead, 0, ASICUnknown},
		// Gaudi3: the out-of-tree driver's get_asic_type ignores the
		// revision and binds neither the die-1 nor the single-die id.
		{0x1060, 0, Gaudi3}, {0x1060, 7, Gaudi3}, {0x1063, 1, Gaudi3HL338},
		{0x1061, 1, ASICUnknown}, {0x1062, 1, ASICUnknown},
	} {
		if got := ASICFromPCI(tt.id, tt.rev); got != tt.want {
			t.Errorf("ASICFromPCI(%#x, %d) = %v, want %v", tt.id, tt.rev, got, tt.want)
		}
	}
}

func TestASICNames(t *testing.T) {
	for _, tt := range []struct {
		a          ASIC
		name       string
		gaudi2, g3 bool
		family     ASIC
	}{
		{Gaudi2C, "GAUDI2C", true, false, Gaudi2},
		{Gaudi3, "GAUDI3", false, true, Gaudi3},
		{Gaudi3HL338, "GAUDI3 HL-338", false, true, Gaudi3},
		{GaudiSec, "GAUDI SEC", false, false, Gaudi},
		{Goya, "GOYA", false, false, ASICUnknown},
	} {
		if got := tt.a.String(); got != tt.name {
			t.Errorf("%d: String() = %q, want %q", int(tt.a), got, tt.name)
		}
		if tt.a.IsGaudi2() != tt.gaudi2 || tt.a.IsGaudi3() != tt.g3 || tt.a.family() != tt.family {
			t.Errorf("%v: IsGaudi2 %v, IsGaudi3 %v, family %v", tt.a, tt.a.IsGaudi2(), tt.a.IsGaudi3(), tt.a.family())
		}
	}
}

func TestOpenSimIdentity(t *testing.T) {
	for _, tt := range []struct {
		asic     sim.ASIC
		want     ASIC
		deviceID uint32
		encoding ioctl.Encoding
		legacy   bool
	}{
		{sim.Gaudi2, Gaudi2, 0x1020, ioctl.EncodingDRM, false},
		{sim.Gaudi, Gaudi, 0x1000, ioctl.EncodingDRM, false},
		{sim.Gaudi2, Gaudi2, 0x1020, ioctl.EncodingLegacy, true},
	} {
		cfg := sim.Default(tt.asic, 2)
		cfg.Legacy = tt.legacy
		s := testSystem(t, cfg)
		d, err := openSim(s.Device(1))
		if err != nil {
			t.Fatal(err)
		}
		hw := d.HWIPInfo()
		if d.ASIC() != tt.want || hw.DeviceID != tt.deviceID || hw.ModuleID != 1 || d.Encoding() != tt.encoding || !d.Simulated() {
			t.Errorf("%v: ASIC %v id %#x module %d encoding %v", tt.asic, d.ASIC(), hw.DeviceID, hw.ModuleID, d.Encoding())
		}
		if hw.DRAMSize == 0 || hw.DRAMSize%hw.DRAMPageSize != 0 || !hw.DRAMEnabled {
			t.Errorf("%v: DRAM size %#x page %#x", tt.asic, hw.DRAMSize, hw.DRAMPageSize)
		}
		u, err := d.DRAMUsage()
		if err != nil || u.Free != hw.DRAMSize || u.Context != 0 {
			t.Errorf("%v: DRAMUsage = %+v, %v; want free %#x", tt.asic, u, err, hw.DRAMSize)
		}
		if st, err := d.Status(); err != nil || st != StatusOperational {
			t.Errorf("Status = %v, %v", st, err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if _, err := d.Status(); !errors.Is(err, ioctl.ErrClosed) {
			t.Errorf("Status after Close: %v, want ErrClosed", err)
		}
	}
}

// The hl-thunk open_close scenarios: a second open of a device is EBUSY,
// open and close work without any ioctl in between, and control nodes
// coexist with the owner.
func TestOpenClose(t *testing.T) {
	s := testSystem(t, sim.Default(sim.Gaudi2, 1))
	for i := 0; i < 3; i++ {
		f, err := s.Device(0).Open()
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	d, err := openSim(s.Device(0))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, err = openSim(s.Device(0))
	if !errors.Is(err, ioctl.ErrDeviceBusy) || !errors.Is(err, unix.EBUSY) {
		t.Fatalf("second open: %v, want ErrDeviceBusy and EBUSY", err)
	}
	c, err := openSimControl(s.Device(0))
	if err != nil {
		t.Fatalf("control open next to the owner: %v", err)
	}
	defer c.Close()
	if !c.IsControl() || c.HWIPInfo() != d.HWIPInfo() {
		t.Errorf("control node reports different identity")
	}
	if _, err := c.Events(); !errors.Is(err, ioctl.ErrNotSupported) || !errors.Is(err, unix.EOPNOTSUPP) {
		t.Errorf("GET_EVENTS on control: %v, want EOPNOTSUPP", err)
	}
	stats, err := c.OpenStats()
	if err != nil || !stats.ComputeActive || stats.Opens != 4 {
		t.Errorf("OpenStats = %+v, %v; want active, 4 opens", stats, err)
	}
	s.Device(0).SetState(sim.InReset)
	_, err = openSim(s.Device(0))
	s.Device(0).SetState(sim.Operational)
	if err == nil {
		t.Fatal("open during reset succeeded")
	}
}

func TestNotifierReset(t *testing.T) {
	s := testSystem(t, sim.Default(sim.Gaudi2, 1))
	d, err := openSim(s.Device(0))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	n, err := d.Notifier()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Notifier(); !errors.Is(err, unix.EINVAL) {
		t.Errorf("second Notifier: %v, want EINVAL", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if _, err := n.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait with nothing recorded: %v, want DeadlineExceeded", err)
	}
	cancel()
	before, _ := d.ResetCount()
	go func() {
		time.Sleep(10 * time.Millisecond)
		s.Device(0).Reset()
	}()
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ev, err := n.Wait(ctx)
	if err != nil || !ev.Has(hl.HL_NOTIFIER_EVENT_DEVICE_RESET) {
		t.Fatalf("Wait = %v, %v; want DEVICE_RESET", ev, err)
	}
	if ev.String() != "DEVICE_RESET" {
		t.Errorf("Events.String() = %q", ev.String())
	}
	after, _ := d.ResetCount()
	if after.Hard != before.Hard+1 {
		t.Errorf("hard resets %d -> %d", before.Hard, after.Hard)
	}
	// GET_EVENTS reads and clears.
	if ev, err := d.Events(); err != nil || ev != 0 {
		t.Errorf("Events after Wait = %v, %v; want none", ev, err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := n.Wait(context.Background()); !errors.Is(err, ErrNotifierClosed) {
		t.Errorf("Wait after Close: %v", err)
	}
	// A new one can be registered after the old one is gone.
	n2, err := d.Notifier()
	if err != nil {
		t.Fatalf("Notifier after Close: %v", err)
	}
	n2.Close()
}

// TestControlNodeEveryQuery ports hl-thunk's control_device scenario: every
// INFO query works on a control node while another process would own the
// compute node.
func TestControlNodeEveryQuery(t *testing.T) {
	s := testSystem(t, sim.Default(sim.Gaudi2, 1))
	owner, err := openSim(s.Device(0))
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	c, err := openSimControl(s.Device(0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	calls := map[string]func() error{
		"Status":          func() error { _, err := c.Status(); return err },
		"DRAMUsage":       func() error { _, err := c.DRAMUsage(); return err },
		"HWIdle":          func() error { _, err := c.HWIdle(); return err },
		"Utilization":     func() error { _, err := c.Utilization(100 * time.Millisecond); return err },
		"ClockRate":       func() error { _, err := c.ClockRate(); return err },
		"ResetCount":      func() error { _, err := c.ResetCount(); return err },
		"TimeSync":        func() error { _, err := c.TimeSync(); return err },
		"CSCounters":      func() error { _, err := c.CSCounters(); return err },
		"PCICounters":     func() error { _, err := c.PCICounters(); return err },
		"ClockThrottle":   func() error { _, err := c.ClockThrottle(); return err },
		"SyncManager":     func() error { _, err := c.SyncManager(0); return err },
		"TotalEnergy":     func() error { _, err := c.TotalEnergy(); return err },
		"Power":           func() error { _, err := c.Power(); return err },
		"PLLFrequency":    func() error { _, err := c.PLLFrequency(0); return err },
		"OpenStats":       func() error { _, err := c.OpenStats(); return err },
		"DRAMPendingRows": func() error { _, err := c.DRAMPendingRows(); return err },
		"DRAMReplaced":    func() error { _, err := c.DRAMReplacedRows(); return err },
		"PageSizes":       func() error { _, err := c.DevMemAllocPageSizes(); return err },
		"HWEvents":        func() error { _, err := c.HWEvents(false); return err },
		"HWEventsAgg":     func() error { _, err := c.HWEvents(true); return err },
		"EngineStatus":    func() error { _, err := c.EngineStatus(); return err },
		"UserMappings":    func() error { _, err := c.UserMappings(); return err },
		"CSTimeout":       func() error { _, _, err := c.CSTimeoutEvent(); return err },
		"Razwi":           func() error { _, _, err := c.RazwiEvent(); return err },
		"PageFault":       func() error { _, _, err := c.PageFaultEvent(); return err },
		"UndefinedOpcode": func() error { _, _, err := c.UndefinedOpcodeEvent(); return err },
		"HWErr":           func() error { _, _, err := c.HWErrEvent(); return err },
		"FWErr":           func() error { _, _, err := c.FWErrEvent(); return err },
		"EngineErr":       func() error { _, _, err := c.EngineErrEvent(); return err },
		"LastOpenTime":    func() error { _, err := c.LastOpenTime(); return err },
	}
	for name, call := range calls {
		if err := call(); err != nil {
			t.Errorf("%s on a control node: %v", name, err)
		}
	}
	// Recorded events reach the control node too.
	s.Device(0).RecordRazwi(0x1000, []uint16{3, 4}, hl.HL_RAZWI_READ)
	rz, ok, err := c.RazwiEvent()
	if err != nil || !ok || rz.Addr != 0x1000 || len(rz.Engines) != 2 || rz.Flags != hl.HL_RAZWI_READ {
		t.Errorf("RazwiEvent = %+v, %v, %v", rz, ok, err)
	}
}
