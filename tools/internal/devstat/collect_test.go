package devstat

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/internal/leakcheck"
	"github.com/gaudi-go/gaudi/simdevice"
	"github.com/gaudi-go/gaudi/tools/internal/devstat/devstattest"
)

// The simulated system is built once per process (simdevice.System).
func TestMain(m *testing.M) {
	switch {
	case os.Getenv(holderEnv) != "":
		holdDevice()
		return
	case os.Getenv(energyEnv) != "":
		printEnergy()
		return
	}
	dir, err := os.MkdirTemp("", "devstat-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("GAUDI_SIM", "gaudi2:2")
	os.Setenv("GAUDI_SIM_LOCKDIR", dir)
	os.Unsetenv("GAUDI_SIM_DRIVER") // the kernel's driver: what the tests expect
	// The simulated server is the process's; it is closed before the
	// leak check (internal/leakcheck).
	code := leakcheck.Run(m, leakcheck.AfterRun(func() {
		if s, err := simdevice.System(); err == nil {
			s.Close()
		}
	}))
	os.RemoveAll(dir)
	os.Exit(code)
}

func indexes(s *Snapshot) []int {
	var idx []int
	for _, d := range s.Devices {
		idx = append(idx, d.Index)
	}
	return idx
}

func hasError(d Device, query string) bool {
	for _, e := range d.Errors {
		if e.Query == query {
			return true
		}
	}
	return false
}

func TestHardwareFromSysfs(t *testing.T) {
	root := devstattest.Machine(t)
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	s, err := Collect(Options{OpenControl: devstattest.NoDevice, Root: root, Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	if s.Source != "hardware" || !s.Timestamp.Equal(at) || s.SchemaVersion != SchemaVersion {
		t.Errorf("snapshot: source %q, time %v, schema %d", s.Source, s.Timestamp, s.SchemaVersion)
	}
	if s.DriverVersion == nil || *s.DriverVersion != "linux 6.12.57+deb12-amd64" {
		t.Errorf("driver version %v, want the kernel release", s.DriverVersion)
	}
	if d := cmp.Diff([]int{0, 1, 2}, indexes(s)); d != "" {
		t.Fatalf("devices (-want +got):\n%s", d)
	}
	d0, d1, d2 := s.Devices[0], s.Devices[1], s.Devices[2]

	if d0.Serial == nil || *d0.Serial != "AN00000001" || d0.UUID == nil || *d0.UUID != "01P0-HL2080A0-15-TNS000-00-00-01" {
		t.Errorf("device 0 serial %v uuid %v", d0.Serial, d0.UUID)
	}
	board := "board"
	wantTemps := []Temperature{{Sensor: "temp1", Celsius: 45.5}, {Sensor: "temp2", Label: &board, Celsius: 38}, {Sensor: "temp10", Celsius: 51}}
	if d := cmp.Diff(wantTemps, d0.Temperatures); d != "" {
		t.Errorf("device 0 temperatures (-want +got):\n%s", d)
	}
	wantLink := PCIe{LinkSpeedGTs: ptr(16.0), LinkWidth: ptr(16), MaxLinkSpeedGTs: ptr(32.0), MaxLinkWidth: ptr(16)}
	if d := cmp.Diff(wantLink, d0.PCIe); d != "" {
		t.Errorf("device 0 link (-want +got):\n%s", d)
	}
	if d0.PowerMaxMW == nil || *d0.PowerMaxMW != 600000 || d0.ModuleID == nil || *d0.ModuleID != 3 ||
		d0.NUMANode == nil || *d0.NUMANode != 0 || d0.Status != "operational" || d0.ASIC != "GAUDI2" {
		t.Errorf("device 0: %+v", d0)
	}
	if d0.Resets == nil || *d0.Resets != (Resets{Hard: 2}) {
		t.Errorf("device 0 resets %+v, want sysfs hard_reset_cnt 2", d0.Resets)
	}
	if d0.Firmware["fw_os_ver"] != "51.2.0" || d0.Firmware["uboot_ver"] == "" {
		t.Errorf("device 0 firmware %v", d0.Firmware)
	}
	// Values only INFO gives are absent, not 0, when the node cannot be
	// opened, and the failure is listed.
	if d0.PowerMW != nil || d0.ClockMHz != nil || d0.UtilizationPercent != nil || d0.MemoryUsedBytes != nil || !hasError(d0, "open") {
		t.Errorf("device 0 without INFO: power %v clock %v util %v used %v errors %+v", d0.PowerMW, d0.ClockMHz, d0.UtilizationPercent, d0.MemoryUsedBytes, d0.Errors)
	}
	if d := cmp.Diff([]Process{{PID: 100, Name: "python3", Node: "compute"}}, d0.Processes); d != "" {
		t.Errorf("device 0 processes (-want +got):\n%s", d)
	}

	if d1.Status != "in reset" || d1.PCIe.LinkSpeedGTs != nil || d1.PCIe.LinkWidth != nil || d1.Serial != nil || len(d1.Temperatures) != 0 {
		t.Errorf("device 1: status %q link %+v serial %v temps %v", d1.Status, d1.PCIe, d1.Serial, d1.Temperatures)
	}
	if d := cmp.Diff([]Process{{PID: 200, Name: "hl-smi", Node: "control"}}, d1.Processes); d != "" {
		t.Errorf("device 1 processes (-want +got):\n%s", d)
	}
	if d2.ASIC != "GAUDI" || len(d2.Processes) != 0 || d2.PCIAddress != "0000:4d:00.0" {
		t.Errorf("device 2: %+v", d2)
	}
}

func TestDriverVersionOfOutOfTreeDriver(t *testing.T) {
	root := devstattest.Machine(t)
	if err := os.WriteFile(filepath.Join(root, "sys/module/habanalabs/version"), []byte("1.17.0-495\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Collect(Options{OpenControl: devstattest.NoDevice, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if v := s.DriverVersion; v == nil || *v != "1.17.0-495" {
		t.Errorf("driver version %v, want 1.17.0-495", v)
	}
	if err := os.RemoveAll(filepath.Join(root, "sys/module/habanalabs")); err != nil {
		t.Fatal(err)
	}
	if s, err = Collect(Options{OpenControl: devstattest.NoDevice, Root: root}); err != nil {
		t.Fatal(err)
	}
	if v := s.DriverVersion; v != nil {
		t.Errorf("driver version %q without the driver, want none", *v)
	}
}

// mustSelect parses sel as -device does.
func mustSelect(t *testing.T, sel string) cli.Selection {
	t.Helper()
	s, err := selection(t, sel)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// selection parses sel as -device does.
func selection(t *testing.T, sel string) (cli.Selection, error) {
	t.Helper()
	return cli.ParseSelection("-device", sel)
}

func TestSelectHardware(t *testing.T) {
	root := devstattest.Machine(t)
	for _, c := range []struct {
		sel  string
		want []int
		err  error
	}{
		{"", []int{0, 1, 2}, nil},
		{"1", []int{1}, nil},
		{"0000:4d:00.0", []int{2}, nil},
		{"4D:00.0", []int{2}, nil},
		{"module:5", []int{1}, nil},
		{"/dev/accel/accel_controlD2", []int{2}, nil},
		{"/dev/accel/accel0", []int{0}, nil},
		{"gaudi2", []int{0, 1}, nil},
		{"gaudi", []int{2}, nil},
		{"7", nil, device.ErrNoDevice},
		{"module:9", nil, device.ErrNoDevice},
		{"gaudi3", nil, device.ErrNoDevice},
		{"bogus", nil, device.ErrBadSelector},
		{"-1", nil, device.ErrBadSelector},
	} {
		sel, err := selection(t, c.sel)
		var s *Snapshot
		if err == nil {
			s, err = Collect(Options{OpenControl: devstattest.NoDevice, Root: root, Selection: sel})
		}
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%q: error %v, want %v", c.sel, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.sel, err)
			continue
		}
		if d := cmp.Diff(c.want, indexes(s)); d != "" {
			t.Errorf("%q: devices (-want +got):\n%s", c.sel, d)
		}
	}
}

func TestSelectSimulator(t *testing.T) {
	empty := t.TempDir() // no sys/: a machine without a Gaudi
	for _, c := range []struct {
		sel  string
		want []int
	}{
		{"", []int{0, 1}},
		{"sim", []int{0, 1}},
		{"sim:1", []int{1}},
		{"sim:accel0", []int{0}},
	} {
		sel, err := selection(t, c.sel)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Collect(Options{Root: empty, Selection: sel})
		if err != nil {
			t.Errorf("%q: %v", c.sel, err)
			continue
		}
		if s.Source != "simulator" {
			t.Errorf("%q: source %q", c.sel, s.Source)
		}
		if d := cmp.Diff(c.want, indexes(s)); d != "" {
			t.Errorf("%q: devices (-want +got):\n%s", c.sel, d)
		}
	}
	// GAUDI_DEVICE=3 names hardware device 3: it must not list the
	// simulator's devices, and says how to name a simulated one.
	_, err := Collect(Options{Root: empty, Selection: mustSelect(t, "3")})
	if !errors.Is(err, device.ErrNoDevice) || !strings.Contains(err.Error(), "sim:N") {
		t.Errorf(`"3" without hardware: %v, want ErrNoDevice naming sim:N`, err)
	}
	if _, err := Collect(Options{Root: empty, Selection: mustSelect(t, "sim:2")}); !errors.Is(err, device.ErrNoDevice) {
		t.Errorf(`"sim:2" of two devices: %v, want ErrNoDevice`, err)
	}
}

func TestSimulatorValues(t *testing.T) {
	s, err := Collect(Options{Root: t.TempDir(), Selection: mustSelect(t, "sim:0"), Details: true, Engines: true})
	if err != nil {
		t.Fatal(err)
	}
	d := s.Devices[0]
	if len(d.Errors) != 0 {
		t.Errorf("errors on an operational simulated device: %+v", d.Errors)
	}
	// The simulator reports the driver it simulates (the kernel's here),
	// and no driver version: nothing is loaded.
	if s.DriverVersion != nil || s.Driver == nil || *s.Driver != "upstream" ||
		d.Driver == nil || *d.Driver != "upstream" || d.Details == nil || d.Details.OutOfTree != nil {
		t.Errorf("simulator driver %v %v, device %v", s.Driver, s.DriverVersion, d.Driver)
	}
	// The simulated firmware reports an idle Gaudi2 at 95 W and 1650 MHz
	// (sim/info_fw.go).
	if d.PowerMW == nil || *d.PowerMW != 95000 || d.ClockMHz == nil || *d.ClockMHz != 1650 || d.ClockMaxMHz == nil || *d.ClockMaxMHz != 1650 {
		t.Errorf("power %v clock %v/%v", d.PowerMW, d.ClockMHz, d.ClockMaxMHz)
	}
	if d.MemoryTotalBytes == nil || d.MemoryFreeBytes == nil || d.MemoryUsedBytes == nil || *d.MemoryUsedBytes != *d.MemoryTotalBytes-*d.MemoryFreeBytes {
		t.Errorf("memory total %v free %v used %v", d.MemoryTotalBytes, d.MemoryFreeBytes, d.MemoryUsedBytes)
	}
	if d.Resets == nil || d.CSDrops == nil || d.Idle == nil || !*d.Idle || len(d.BusyEngineMask) != 4 || d.PCIe.Replays == nil {
		t.Errorf("counters: resets %v drops %v idle %v busy %v replays %v", d.Resets, d.CSDrops, d.Idle, d.BusyEngineMask, d.PCIe.Replays)
	}
	// What the simulator does not have is absent.
	if d.Serial != nil || d.UUID != nil || len(d.Temperatures) != 0 || d.PCIe.LinkSpeedGTs != nil || d.NUMANode != nil || d.PowerMaxMW != nil {
		t.Errorf("simulator invents values: serial %v uuid %v temps %v link %v numa %v max power %v",
			d.Serial, d.UUID, d.Temperatures, d.PCIe.LinkSpeedGTs, d.NUMANode, d.PowerMaxMW)
	}
	if !d.Simulated || d.Details == nil || d.Details.SyncManager == nil || len(d.Details.PLL0OutputsMHz) != 4 || d.Details.OpenStats == nil {
		t.Errorf("details %+v", d.Details)
	}
	if d.EngineStatus == nil || !strings.Contains(*d.EngineStatus, "is_idle") {
		t.Errorf("engine status %v", d.EngineStatus)
	}
}

func TestSimulatorEventsAndCounters(t *testing.T) {
	dev, err := simdevice.OpenControl("sim:1")
	if err != nil {
		t.Fatal(err)
	}
	sd := simdevice.Sim(dev)
	// The aggregate counts survive resets, as the driver's do (since it
	// loaded): the device is the process's, so an earlier run of this
	// test (-count) counted event 17 already.
	counts, err := dev.HWEvents(true)
	dev.Close()
	if err != nil {
		t.Fatal(err)
	}
	var before uint32
	if len(counts) > 17 {
		before = counts[17]
	}
	sd.RecordHWError(17)
	sd.RecordRazwi(0x1000, []uint16{3}, 1)
	defer sd.Reset()
	s, err := Collect(Options{Root: t.TempDir(), Selection: mustSelect(t, "sim:1"), Details: true})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range s.Devices[0].Details.Events {
		kinds = append(kinds, e.Kind)
	}
	if d := cmp.Diff([]string{"razwi", "hw_error"}, kinds); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	found := false
	for _, c := range s.Devices[0].Details.HWEvents {
		found = found || c.ID == 17 && c.Count == before+1
	}
	if !found {
		t.Errorf("hw event 17 not counted once more than the %d before: %+v", before, s.Devices[0].Details.HWEvents)
	}
}

// TestSimulatorOwner opens a simulated compute node in this process and
// expects the scan of /proc to name this process as its owner.
func TestSimulatorOwner(t *testing.T) {
	before, err := Collect(Options{Selection: mustSelect(t, "sim")})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range before.Devices {
		if len(d.Processes) != 0 {
			t.Fatalf("device %d has holders before any open: %+v", d.Index, d.Processes)
		}
	}
	dev, err := simdevice.Open("sim:1")
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	s, err := Collect(Options{Selection: mustSelect(t, "sim")})
	if err != nil {
		t.Fatal(err)
	}
	comm, _ := readText("/proc/self/comm")
	if d := cmp.Diff([]Process{{PID: os.Getpid(), Name: comm, Node: "compute"}}, s.Devices[1].Processes); d != "" {
		t.Errorf("device 1 holders (-want +got):\n%s", d)
	}
	if len(s.Devices[0].Processes) != 0 {
		t.Errorf("device 0 holders %+v, want none", s.Devices[0].Processes)
	}
	if a := s.Devices[1].ComputeActive; a == nil || !*a {
		t.Errorf("device 1 compute_active %v, want true", a)
	}
}

func TestThrottleNames(t *testing.T) {
	if d := cmp.Diff([]string{"power", "thermal", "bit5"}, throttleNames(1|2|32)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if got := throttleNames(0); got == nil || len(got) != 0 {
		t.Errorf("no reasons: %#v, want an empty list", got)
	}
}
