package simdevice

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/leakcheck"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/google/go-cmp/cmp"
)

// The simulated server is built once per process (System), so every test
// here shares one of two Gaudi2, with lock files of its own.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "simdevice-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("GAUDI_SIM", "gaudi2:2")
	os.Setenv("GAUDI_SIM_LOCKDIR", dir)
	os.Unsetenv("GAUDI_DEVICE")
	code := leakcheck.Run(m, leakcheck.AfterRun(closeSystem))
	os.RemoveAll(dir)
	os.Exit(code)
}

// closeSystem closes the process's simulated server, which the tests share
// on purpose, before the leak check.
func closeSystem() {
	if s, err := System(); err == nil {
		s.Close()
	}
}

func TestParseSelector(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Selector
		str  string
	}{
		{"sim", Selector{Sim: true, SimIndex: -1}, "sim"},
		{"sim:0", Selector{Sim: true}, "sim:0"},
		{"sim:7", Selector{Sim: true, SimIndex: 7}, "sim:7"},
		{"sim:accel1", Selector{Sim: true, SimIndex: 1}, "sim:1"},
		{"", Selector{}, ""},
		{"3", Selector{Device: device.Selector{Kind: device.SelectIndex, Index: 3}}, "3"},
		{"19:00.0", Selector{Device: device.Selector{Kind: device.SelectPCI, PCIAddress: "0000:19:00.0"}}, "0000:19:00.0"},
		{"module:1", Selector{Device: device.Selector{Kind: device.SelectModule, Module: 1}}, "module:1"},
		{"gaudi2", Selector{Device: device.Selector{Kind: device.SelectASIC, ASIC: device.Gaudi2}}, "gaudi2"},
	} {
		got, err := ParseSelector(tc.in)
		if err != nil {
			t.Errorf("ParseSelector(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseSelector(%q) (-want +got):\n%s", tc.in, diff)
		}
		if got.String() != tc.str {
			t.Errorf("ParseSelector(%q).String() = %q, want %q", tc.in, got.String(), tc.str)
		}
	}
	for _, in := range []string{"sim:", "sim:x", "sim:-1", "sim:+1", "sim:accel", "sim:99999999999999999999", "sim1", "simulator", "-1", "abc"} {
		if s, err := ParseSelector(in); !errors.Is(err, device.ErrBadSelector) {
			t.Errorf("ParseSelector(%q) = %+v, %v; want ErrBadSelector", in, s, err)
		}
		if _, err := Open(in); !errors.Is(err, device.ErrBadSelector) {
			t.Errorf("Open(%q): %v, want ErrBadSelector", in, err)
		}
	}
}

func TestOpenSimSelectors(t *testing.T) {
	d0, err := Open("sim")
	if err != nil {
		t.Fatal(err)
	}
	d1, err := Open("sim")
	if err != nil {
		t.Fatal(err)
	}
	if d0.Path() != "sim:accel0" || d1.Path() != "sim:accel1" || !d0.Simulated() || d0.IsControl() {
		t.Errorf("sim, sim: %s, %s", d0.Path(), d1.Path())
	}
	if _, err := Open("sim"); !errors.Is(err, device.ErrNoDevice) {
		t.Errorf("sim with every device owned: %v, want ErrNoDevice", err)
	}
	if _, err := Open("sim:1"); !errors.Is(err, ioctl.ErrDeviceBusy) {
		t.Errorf("sim:1 while owned: %v, want ErrDeviceBusy", err)
	}
	if _, err := Open("sim:2"); !errors.Is(err, device.ErrNoDevice) {
		t.Errorf("sim:2 of two: %v, want ErrNoDevice", err)
	}
	for sel, want := range map[string]string{"sim": "sim:accel0", "sim:1": "sim:accel1", "sim:accel1": "sim:accel1"} {
		c, err := OpenControl(sel)
		if err != nil {
			t.Errorf("OpenControl(%q): %v", sel, err)
			continue
		}
		if c.Path() != want || !c.IsControl() || Sim(c) == nil {
			t.Errorf("OpenControl(%q) = %s (control %v)", sel, c.Path(), c.IsControl())
		}
		c.Close()
	}
	s, err := System()
	if err != nil {
		t.Fatal(err)
	}
	if Sim(d0) != s.Device(0) || Sim(d1) != s.Device(1) {
		t.Errorf("Sim does not return the devices opened")
	}
	if a, err := d1.PCIAddress(); err != nil || a != s.Device(1).Config().PCIAddress {
		t.Errorf("PCIAddress = %q, %v", a, err)
	}
	d1.Close()
	d, err := Open("sim:accel1")
	if err != nil {
		t.Fatalf("sim:accel1 after Close: %v", err)
	}
	d.Close()
	d0.Close()
}

// TestOpenHardwareSelectors: the device grammar goes to package device.
// This machine may have no Gaudi: then every such selector is ErrNoDevice.
func TestOpenHardwareSelectors(t *testing.T) {
	if n, err := device.Count(device.AnyASIC); err != nil || n > 0 {
		t.Skipf("this host has habanalabs devices (%d, %v)", n, err)
	}
	for _, sel := range []string{"", "0", "0000:19:00.0", "module:0", "gaudi2", "/dev/accel/accel0"} {
		d, err := Open(sel)
		if err == nil {
			d.Close()
			t.Errorf("Open(%q) found a device", sel)
		}
		if sel != "/dev/accel/accel0" && !errors.Is(err, device.ErrNoDevice) {
			t.Errorf("Open(%q): %v, want ErrNoDevice", sel, err)
		}
		if d, err := OpenControl(sel); err == nil {
			d.Close()
			t.Errorf("OpenControl(%q) found a device", sel)
		}
	}
}

// TestSimOfOtherFiles: Sim is nil for a Device over a File that is not
// the simulator's, and Simulated false, also when it wraps one.
func TestSimOfOtherFiles(t *testing.T) {
	s, err := sim.New(sim.Config{Devices: sim.Default(sim.Gaudi, 1).Devices, LockDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f, err := s.Device(0).Open()
	if err != nil {
		t.Fatal(err)
	}
	d, err := device.FromFile(wrapped{f}, device.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if Sim(d) != nil || d.Simulated() || d.Path() != "sim:accel0" {
		t.Errorf("wrapped: Sim %v, Simulated %v, Path %s", Sim(d), d.Simulated(), d.Path())
	}
}

// wrapped hides everything of a File but the interface.
type wrapped struct{ ioctl.File }

func TestOpenDefault(t *testing.T) {
	none := func() ([]device.Node, error) { return nil, nil }
	nodes = none
	t.Cleanup(func() { nodes = device.Nodes })
	d, why, err := openDefault("")
	if err != nil {
		t.Fatal(err)
	}
	if !d.Simulated() || !strings.Contains(why, "simulator") {
		t.Errorf("no hardware: got %v (%s)", d, why)
	}
	// The first device is taken: the next free one is chosen.
	d2, why, err := openDefault("sim")
	if err != nil {
		t.Fatal(err)
	}
	if d2.Path() == d.Path() || why != "the simulator (GAUDI_DEVICE=sim)" {
		t.Errorf("second default open: %s (%s), first %s", d2.Path(), why, d.Path())
	}
	if _, _, err := openDefault("sim"); !errors.Is(err, device.ErrNoDevice) {
		t.Errorf("all simulated devices taken: %v, want ErrNoDevice", err)
	}
	if _, _, err := openDefault(""); !errors.Is(err, device.ErrNoDevice) {
		t.Errorf("no hardware, all simulated devices taken: %v, want ErrNoDevice", err)
	}
	d.Close()
	d2.Close()
	if _, _, err := openDefault("bogus"); !errors.Is(err, device.ErrBadSelector) || !strings.Contains(err.Error(), "GAUDI_DEVICE") {
		t.Errorf("GAUDI_DEVICE=bogus: %v, want ErrBadSelector naming GAUDI_DEVICE", err)
	}
	if n, _ := device.Count(device.AnyASIC); n == 0 {
		if _, why, err := openDefault("3"); !errors.Is(err, device.ErrNoDevice) || why != "hardware (GAUDI_DEVICE=3)" {
			t.Errorf("GAUDI_DEVICE=3 without hardware: %q, %v; want ErrNoDevice", why, err)
		}
	}
	nodes = func() ([]device.Node, error) { return nil, errors.New("sysfs broken") }
	if _, _, err := openDefault(""); err == nil {
		t.Error("a listing error was hidden")
	}
	nodes = none

	var buf bytes.Buffer
	stderr = &buf
	t.Cleanup(func() { stderr = os.Stderr })
	t.Setenv("GAUDI_DEVICE", "sim:1")
	d3, err := OpenDefault()
	if err != nil {
		t.Fatal(err)
	}
	d3.Close()
	if got, want := buf.String(), "gaudi: using GAUDI2 module 1 (sim:accel1), the simulator (GAUDI_DEVICE=sim:1)\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
}
