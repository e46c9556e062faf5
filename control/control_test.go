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

// open returns a compute device on a fresh simulated server of one asic.
func open(t *testing.T, asic sim.ASIC) *device.Device { return simtest.Device(t, asic) }

func TestEngineCores(t *testing.T) {
	d := open(t, sim.Gaudi2)
	sd := simdevice.Sim(d)
	core := func(name string) device.EngineCore {
		t.Helper()
		c, err := d.EngineCore(name)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	sched0, tpc1, nic23 := core("SCHED_ARC0"), core("TPC_QMAN_ARC1"), core("NIC_QMAN_ARC23")
	if err := control.HaltEngineCores(d, sched0, tpc1, nic23); err != nil {
		t.Fatal(err)
	}
	if err := control.RunEngineCores(d, tpc1); err != nil {
		t.Fatal(err)
	}
	got := []bool{sd.EngineCoreHalted(0), sd.EngineCoreHalted(7), sd.EngineCoreHalted(68)}
	if diff := cmp.Diff([]bool{true, false, true}, got); diff != "" {
		t.Errorf("halted cores (-want +got):\n%s", diff)
	}
	nic := device.Gaudi2Engine(hl.GAUDI2_ENGINE_ID_NIC0_0)
	mme := device.Gaudi2Engine(hl.GAUDI2_DCORE0_ENGINE_ID_MME)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"no cores", control.HaltEngineCores(d)},
		{"70 cores", control.HaltEngineCores(d, make([]device.EngineCore, 70)...)},
		{"bad command", control.Engines(d, control.EngineCommand(9), mme)},
		{"stall a NIC", control.StallEngines(d, nic)},
		{"stall a core", control.Engines(d, control.Stall, sched0)},
		{"halt an engine", control.Engines(d, control.CoreHalt, mme)},
		{"no engine", control.StallEngines(d, device.Engine{})},
		{"engine of Gaudi", control.StallEngines(d, device.GaudiEngine(hl.GAUDI_ENGINE_ID_TPC_0))},
	} {
		if !errors.Is(tc.err, unix.EINVAL) || errors.Is(tc.err, control.ErrNotSupported) {
			t.Errorf("%s: %v, want EINVAL", tc.name, tc.err)
		}
	}
	var wrong *device.WrongASICError
	if err := control.StallEngines(d, device.GaudiEngine(hl.GAUDI_ENGINE_ID_TPC_0)); !errors.As(err, &wrong) || wrong.Kind != "engine" {
		t.Errorf("engine of Gaudi: %v, want a *device.WrongASICError", err)
	}
	if sd.EngineStalled(mme.ID()) {
		t.Error("a refused command stalled an engine")
	}
}

func TestStallResume(t *testing.T) {
	d := open(t, sim.Gaudi2)
	sd := simdevice.Sim(d)
	tpc := device.Gaudi2Engine(hl.GAUDI2_DCORE2_ENGINE_ID_TPC_5)
	mme, err := d.Engine("DCORE0_MME")
	if err != nil {
		t.Fatal(err)
	}
	if err := control.StallEngines(d, tpc, mme); err != nil {
		t.Fatal(err)
	}
	if !sd.EngineStalled(tpc.ID()) || !sd.EngineStalled(mme.ID()) {
		t.Fatal("engines not stalled")
	}
	if err := control.ResumeEngines(d, mme); err != nil {
		t.Fatal(err)
	}
	if !sd.EngineStalled(tpc.ID()) || sd.EngineStalled(mme.ID()) {
		t.Fatal("resume did not act on the MME only")
	}
	if err := control.Engines(d, control.CoreHalt, device.Gaudi2EngineCore(5)); err != nil || !sd.EngineCoreHalted(5) {
		t.Fatalf("core halt through ENGINES_COMMAND: %v", err)
	}
}

func TestEnginesGaudiNotSupported(t *testing.T) {
	d := open(t, sim.Gaudi)
	tpc, err := d.Engine("TPC_0")
	if err != nil {
		t.Fatal(err)
	}
	if err := control.StallEngines(d, tpc); !errors.Is(err, control.ErrNotSupported) || !errors.Is(err, unix.EPERM) {
		t.Errorf("stall on Gaudi: %v, want ErrNotSupported and EPERM", err)
	}
	// Gaudi has no engine cores: a Gaudi2 core is not one of its own.
	var wrong *device.WrongASICError
	if err := control.HaltEngineCores(d, device.Gaudi2EngineCore(0)); !errors.As(err, &wrong) {
		t.Errorf("halt on Gaudi: %v, want a *device.WrongASICError", err)
	}
	// Gaudi has an HBW flush register.
	if err := control.FlushPCIWrites(d); err != nil {
		t.Fatal(err)
	}
	if n := simdevice.Sim(d).HBWFlushes(); n != 1 {
		t.Errorf("%d flushes, want 1", n)
	}
}

func TestCommandString(t *testing.T) {
	got := []string{control.CoreHalt.String(), control.CoreRun.String(), control.Stall.String(), control.Resume.String(), control.EngineCommand(0).String()}
	want := []string{"CORE_HALT", "CORE_RUN", "STALL", "RESUME", "EngineCommand(0)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}
