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
	if err := control.HaltEngineCores(d, 0, 7, 68); err != nil {
		t.Fatal(err)
	}
	if err := control.RunEngineCores(d, 7); err != nil {
		t.Fatal(err)
	}
	got := []bool{sd.EngineCoreHalted(0), sd.EngineCoreHalted(7), sd.EngineCoreHalted(68)}
	if diff := cmp.Diff([]bool{true, false, true}, got); diff != "" {
		t.Errorf("halted cores (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"no cores", control.HaltEngineCores(d)},
		{"70 cores", control.HaltEngineCores(d, make([]uint32, 70)...)},
		{"bad command", control.Engines(d, control.EngineCommand(9), 0)},
		{"stall a NIC", control.StallEngines(d, uint32(hl.GAUDI2_ENGINE_ID_NIC0_0))},
	} {
		if !errors.Is(tc.err, unix.EINVAL) || errors.Is(tc.err, control.ErrNotSupported) {
			t.Errorf("%s: %v, want EINVAL", tc.name, tc.err)
		}
	}
}

func TestStallResume(t *testing.T) {
	d := open(t, sim.Gaudi2)
	sd := simdevice.Sim(d)
	tpc := uint32(hl.GAUDI2_DCORE2_ENGINE_ID_TPC_5)
	mme := uint32(hl.GAUDI2_DCORE0_ENGINE_ID_MME)
	if err := control.StallEngines(d, tpc, mme); err != nil {
		t.Fatal(err)
	}
	if !sd.EngineStalled(tpc) || !sd.EngineStalled(mme) {
		t.Fatal("engines not stalled")
	}
	if err := control.ResumeEngines(d, mme); err != nil {
		t.Fatal(err)
	}
	if !sd.EngineStalled(tpc) || sd.EngineStalled(mme) {
		t.Fatal("resume did not act on the MME only")
	}
	if err := control.Engines(d, control.CoreHalt, 5); err != nil || !sd.EngineCoreHalted(5) {
		t.Fatalf("core halt through ENGINES_COMMAND: %v", err)
	}
}

func TestEnginesGaudiNotSupported(t *testing.T) {
	d := open(t, sim.Gaudi)
	for name, err := range map[string]error{
		"halt":  control.HaltEngineCores(d, 0),
		"stall": control.StallEngines(d, 0),
	} {
		if !errors.Is(err, control.ErrNotSupported) || !errors.Is(err, unix.EPERM) {
			t.Errorf("%s on Gaudi: %v, want ErrNotSupported and EPERM", name, err)
		}
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
