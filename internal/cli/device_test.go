package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/device"
)

// fakeEnv makes Selection read env instead of the process's environment,
// and hardwareNodes return nodes for this machine's sysfs (and none for
// any other), for one test.
func fakeEnv(t *testing.T, env map[string]string, nodes []device.Node) {
	t.Helper()
	oldEnv, oldNodes := getenv, hardwareNodes
	getenv = func(k string) string { return env[k] }
	hardwareNodes = func(sys device.SysFS) ([]device.Node, error) {
		if sys != thisMachine {
			return nil, nil
		}
		return nodes, nil
	}
	t.Cleanup(func() { getenv, hardwareNodes = oldEnv, oldNodes })
}

func selection(t *testing.T, args ...string) (Selection, error) {
	t.Helper()
	c, _, _ := newTestCommand()
	if err := c.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return c.Device.Selection()
}

func TestSelectionSources(t *testing.T) {
	fakeEnv(t, map[string]string{"GAUDI_DEVICE": "3"}, nil)
	s, err := selection(t, "-device", "sim:1")
	if err != nil || s.Text != "sim:1" || s.From != "-device" || !s.Selector.Sim || s.Selector.SimIndex != 1 {
		t.Errorf("-device sim:1 with GAUDI_DEVICE=3: %+v, %v; the flag must win", s, err)
	}
	s, err = selection(t)
	if err != nil || s.Text != "3" || s.From != "GAUDI_DEVICE" || s.Selector.Sim || s.Selector.Device.Index != 3 {
		t.Errorf("GAUDI_DEVICE=3: %+v, %v", s, err)
	}
	fakeEnv(t, map[string]string{"GAUDI_DEVICE": "sim:nope"}, nil)
	if _, err := selection(t); !errors.Is(err, device.ErrBadSelector) || !strings.Contains(err.Error(), "GAUDI_DEVICE") {
		t.Errorf("bad GAUDI_DEVICE: %v", err)
	}
	if s, err := selection(t, "-device", "sim"); err != nil || s.Text != "sim" {
		t.Errorf("-device overriding a bad GAUDI_DEVICE: %+v, %v", s, err)
	}
	fakeEnv(t, nil, nil)
	if s, err := selection(t); err != nil || !s.Default() {
		t.Errorf("no flag, no variable: %+v, %v", s, err)
	}
}

// TestHardwareSelectorWithoutHardware is the stumble of issue 15: with no
// Gaudi, GAUDI_DEVICE=3 made hlinfo list the simulator while hlperf
// failed. Now a hardware selector is one clear error for Open and Devices
// alike, whether it comes from the flag or the variable.
func TestHardwareSelectorWithoutHardware(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		args []string
		from string
	}{
		{map[string]string{"GAUDI_DEVICE": "3"}, nil, "GAUDI_DEVICE=3"},
		{nil, []string{"-device", "3"}, "-device 3"},
		{map[string]string{"GAUDI_DEVICE": "sim"}, []string{"-device", "3"}, "-device 3"},
		{nil, []string{"-device", "gaudi2"}, "-device gaudi2"},
		{nil, []string{"-device", "module:1"}, "-device module:1"},
	} {
		fakeEnv(t, tc.env, nil)
		s, err := selection(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.Open()
		if d != nil {
			d.Close()
		}
		if !errors.Is(err, device.ErrNoDevice) || !strings.Contains(err.Error(), tc.from) || !strings.Contains(err.Error(), "sim:N") {
			t.Errorf("%v %q: Open: %v", tc.env, tc.args, err)
		}
		if c, err := s.Devices(); !errors.Is(err, device.ErrNoDevice) || !strings.Contains(err.Error(), "sim:N") {
			t.Errorf("%v %q: Devices: %v, %v", tc.env, tc.args, c, err)
		}
	}
}

func TestSimSelections(t *testing.T) {
	fakeEnv(t, nil, nil)
	for _, tc := range []struct {
		args  []string
		names []string
	}{
		{nil, []string{"sim:accel0", "sim:accel1"}},
		{[]string{"-device", "sim"}, []string{"sim:accel0", "sim:accel1"}},
		{[]string{"-device", "sim:1"}, []string{"sim:accel1"}},
	} {
		s, err := selection(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := s.Devices()
		if err != nil {
			t.Fatalf("%q: Devices: %v", tc.args, err)
		}
		var names []string
		for _, c := range cs {
			names = append(names, c.Name)
			if !c.Simulated() {
				t.Errorf("%s not simulated", c.Name)
			}
		}
		if strings.Join(names, " ") != strings.Join(tc.names, " ") {
			t.Errorf("%q: Devices = %v, want %v", tc.args, names, tc.names)
		}
		d, err := s.Open()
		if err != nil {
			t.Fatalf("%q: Open: %v", tc.args, err)
		}
		if d.Path() != tc.names[0] || !d.Simulated() {
			t.Errorf("%q: opened %s", tc.args, d.Path())
		}
		if why := s.Why(d); !strings.HasPrefix(why, "the simulator (") {
			t.Errorf("Why = %q", why)
		}
		c, err := cs[0].OpenControl()
		if err != nil || !c.IsControl() {
			t.Errorf("OpenControl: %v", err)
		} else {
			c.Close()
		}
		d.Close()
	}
	s, _ := selection(t, "-device", "sim:5")
	if _, err := s.Devices(); !errors.Is(err, device.ErrNoDevice) || !strings.Contains(err.Error(), "-device sim:5") {
		t.Errorf("sim:5 of 2: %v", err)
	}
	if _, err := s.Open(); !errors.Is(err, device.ErrNoDevice) {
		t.Errorf("open sim:5 of 2: %v", err)
	}
}

func TestHardwareMatching(t *testing.T) {
	nodes := []device.Node{
		{Index: 0, Path: "/dev/accel/accel0", ControlPath: "/dev/accel/accel_controlD0", PCIAddress: "0000:19:00.0", DeviceID: 0x1020, Revision: 1, ModuleID: 2},
		{Index: 1, Path: "/dev/accel/accel1", PCIAddress: "0000:b3:00.0", DeviceID: 0x1020, Revision: 2, ModuleID: 5},
		{Index: 4, Path: "/dev/hl4", PCIAddress: "0000:4d:00.0", DeviceID: 0x1000, ModuleID: -1},
	}
	fakeEnv(t, nil, nodes)
	for _, tc := range []struct {
		sel  string
		want string
	}{
		{"", "/dev/accel/accel0 /dev/accel/accel1 /dev/hl4"},
		{"1", "/dev/accel/accel1"},
		{"19:00.0", "/dev/accel/accel0"},
		{"module:5", "/dev/accel/accel1"},
		{"/dev/accel/accel_controlD0", "/dev/accel/accel0"},
		{"gaudi2", "/dev/accel/accel0 /dev/accel/accel1"},
		{"gaudi", "/dev/hl4"},
		{"sim:1", "sim:accel1"},
	} {
		var args []string
		if tc.sel != "" {
			args = []string{"-device", tc.sel}
		}
		s, err := selection(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := s.Devices()
		if err != nil {
			t.Errorf("%q: %v", tc.sel, err)
			continue
		}
		var names []string
		for _, c := range cs {
			names = append(names, c.Name)
		}
		if got := strings.Join(names, " "); got != tc.want {
			t.Errorf("%q: Devices = %q, want %q", tc.sel, got, tc.want)
		}
	}
	for _, sel := range []string{"7", "module:9", "gaudi3", "0000:01:00.0"} {
		s, _ := selection(t, "-device", sel)
		if _, err := s.Devices(); !errors.Is(err, device.ErrNoDevice) || !strings.Contains(err.Error(), "no Gaudi matches") {
			t.Errorf("%q: %v", sel, err)
		}
	}
}

// TestDevicesIn: a fixture's sysfs, not this machine's, is what DevicesIn
// matches, and without devices there the default is the simulator while
// a hardware selector stays an error.
func TestDevicesIn(t *testing.T) {
	fakeEnv(t, nil, nil)
	fixture := device.SysFS{Root: "/fixture"}
	nodes := []device.Node{
		{Index: 0, Path: "/dev/accel/accel0", DeviceID: 0x1020, Revision: 1, ModuleID: 3},
		{Index: 2, Path: "/dev/accel/accel2", DeviceID: 0x1020, Revision: 1, ModuleID: 5},
	}
	var asked []device.SysFS
	hardwareNodes = func(sys device.SysFS) ([]device.Node, error) {
		asked = append(asked, sys)
		if sys == fixture {
			return nodes, nil
		}
		return nil, nil
	}
	for sel, want := range map[string]string{"": "/dev/accel/accel0 /dev/accel/accel2", "module:5": "/dev/accel/accel2", "gaudi2": "/dev/accel/accel0 /dev/accel/accel2"} {
		s, err := ParseSelection("-device", sel)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := s.DevicesIn(fixture)
		if err != nil {
			t.Errorf("%q: %v", sel, err)
			continue
		}
		var names []string
		for _, c := range cs {
			names = append(names, c.Name)
		}
		if got := strings.Join(names, " "); got != want {
			t.Errorf("%q in the fixture: %q, want %q", sel, got, want)
		}
	}
	for _, sys := range asked {
		if sys != fixture {
			t.Errorf("DevicesIn(fixture) listed %+v", sys)
		}
	}
	s, _ := ParseSelection("GAUDI_DEVICE", "module:5")
	if _, err := s.Devices(); !errors.Is(err, device.ErrNoDevice) || !strings.Contains(err.Error(), "GAUDI_DEVICE=module:5") {
		t.Errorf("module:5 on this machine without a Gaudi: %v", err)
	}
	s, _ = ParseSelection("-device", "")
	if cs, err := s.Devices(); err != nil || len(cs) != 2 || !cs[0].Simulated() {
		t.Errorf("default on this machine without a Gaudi: %v, %v; want the simulator's two devices", cs, err)
	}
}

func TestParseSelection(t *testing.T) {
	s, err := ParseSelection("GAUDI_DEVICE", "sim:1")
	if err != nil || !s.Selector.Sim || s.Selector.SimIndex != 1 || s.From != "GAUDI_DEVICE" || s.Default() {
		t.Errorf("sim:1: %+v, %v", s, err)
	}
	if s, err := ParseSelection("-device", ""); err != nil || !s.Default() {
		t.Errorf("empty: %+v, %v; want the default", s, err)
	}
	if _, err := ParseSelection("HLINFO_DEVICE", "three"); !errors.Is(err, device.ErrBadSelector) || !strings.HasPrefix(err.Error(), "HLINFO_DEVICE: ") {
		t.Errorf("three: %v, want ErrBadSelector naming the variable", err)
	}
}

func TestHostDriverVersion(t *testing.T) {
	root := t.TempDir()
	if v, ok := HostDriverVersion(root); ok {
		t.Errorf("no driver loaded: %q, want none", v)
	}
	writeFile(t, root+"/proc/sys/kernel/osrelease", "6.12.0-1-amd64\n")
	if v, ok := HostDriverVersion(root); ok {
		t.Errorf("no driver loaded, a kernel release: %q, want none", v)
	}
	writeFile(t, root+"/sys/module/habanalabs/parameters/timeout_locked", "30\n")
	if v, ok := HostDriverVersion(root); !ok || v != "linux 6.12.0-1-amd64" {
		t.Errorf("in-tree driver: %q, %v", v, ok)
	}
	writeFile(t, root+"/sys/module/habanalabs/version", "1.19.0-561ad2c\n")
	if v, ok := HostDriverVersion(root); !ok || v != "1.19.0-561ad2c" {
		t.Errorf("module version: %q, %v", v, ok)
	}
}

func TestDriverText(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		driver, version *string
		want            string
	}{
		{s("upstream"), s("linux 6.12.0"), "upstream driver linux 6.12.0"},
		{s("upstream"), nil, "upstream driver"},
		{nil, s("1.19.0"), "driver 1.19.0"},
		{nil, nil, "driver unknown"},
	} {
		if got := DriverText(tc.driver, tc.version); got != tc.want {
			t.Errorf("DriverText = %q, want %q", got, tc.want)
		}
	}
}
