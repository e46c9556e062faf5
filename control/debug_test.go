package control_test

import (
	"errors"
	"testing"

	"github.com/gaudi-go/gaudi/control"
	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/simtest"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestDebugSession(t *testing.T) {
	d := open(t, sim.Gaudi2)
	// Upstream's hl_debug_ioctl answers EFAULT, the out-of-tree driver's
	// EPERM (hl_debug_op_requires_debug).
	wantOff := unix.EFAULT
	if info, err := d.DriverInfo(); err == nil && info.Driver == device.DriverOutOfTree {
		wantOff = unix.EPERM
	}
	if err := control.ConfigureFunnel(d, 0, true); !errors.Is(err, wantOff) {
		t.Fatalf("funnel outside debug mode: %v, want %v", err, wantOff)
	}
	if err := control.SetDebugMode(d, true); err != nil {
		t.Fatal(err)
	}
	if err := control.SetDebugMode(d, true); !errors.Is(err, unix.EFAULT) {
		t.Fatalf("debug mode twice: %v", err)
	}
	// A trace buffer in DRAM, through the device MMU.
	buf := d.HWIPInfo().DRAMBase
	steps := []struct {
		name string
		err  error
	}{
		{"etr", control.EnableETR(d, control.ETR{BufferAddress: buf, BufferSize: 1 << 20, SinkMode: 2})},
		{"etf", control.ConfigureETF(d, 3, true, 1)},
		{"stm", control.ConfigureSTM(d, 4, true, control.STM{HEMask: 0xff, ID: 7})},
		{"funnel", control.ConfigureFunnel(d, 5, true)},
		{"bmon", control.ConfigureBMON(d, 6, true, control.BMON{StartAddr0: 0x1000, AddrMask0: ^uint64(0xfff), ID: 9})},
		{"spmu", control.EnableSPMU(d, 8, control.SPMU{EventTypes: []uint64{1, 2, 3}})},
	}
	for _, s := range steps {
		if s.err != nil {
			t.Fatalf("%s: %v", s.name, s.err)
		}
	}
	c, err := control.DisableSPMU(d, 8, 3)
	if err != nil || len(c.Events) != 3 {
		t.Fatalf("spmu counters: %+v %v", c, err)
	}
	wp, err := control.DisableETR(d)
	if err != nil || wp != buf {
		t.Fatalf("etr write pointer %#x %v, want %#x", wp, err, buf)
	}
	for name, err := range map[string]error{
		"etr size 0":     control.EnableETR(d, control.ETR{BufferAddress: buf}),
		"spmu 7 events":  control.EnableSPMU(d, 0, control.SPMU{EventTypes: make([]uint64, 7)}),
		"funnel 141":     control.ConfigureFunnel(d, 141, false),
		"spmu 11 events": control.EnableSPMU(d, 0, control.SPMU{EventTypes: make([]uint64, 11)}),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else if name != "spmu 11 events" && !errors.Is(err, unix.EINVAL) {
			t.Errorf("%s: %v, want EINVAL", name, err)
		}
	}
	// The simulator recorded the configuration as the driver received it.
	var got []string
	for _, op := range simdevice.Sim(d).DebugOps() {
		got = append(got, hl.DebugOpNames[op.Op])
		if op.Op == hl.HL_DEBUG_OP_STM && (op.RegIdx != 4 || op.Input[0] != 0xff || op.Input[16] != 7) {
			t.Errorf("STM recorded as %+v", op)
		}
	}
	want := []string{"ETR", "ETF", "STM", "FUNNEL", "BMON", "SPMU", "SPMU", "ETR"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
	if err := control.SetDebugMode(d, false); err != nil {
		t.Fatal(err)
	}
	if simdevice.Sim(d).DebugMode() {
		t.Error("still in debug mode")
	}
}

// TestCloseWithoutReleasingDebug is hl-thunk's
// test_close_without_releasing_debug: a process that leaves debug mode on
// and closes the device does not keep the next owner out of it.
func TestCloseWithoutReleasingDebug(t *testing.T) {
	s := simtest.New(t, sim.Default(sim.Gaudi2, 1))
	for i := range 2 {
		d, err := simdevice.OpenSim(s.Device(0))
		if err != nil {
			t.Fatal(err)
		}
		if err := control.SetDebugMode(d, true); err != nil {
			t.Fatalf("open %d: enable debug mode: %v", i, err)
		}
		d.Close()
	}
}
