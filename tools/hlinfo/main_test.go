package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/internal/leakcheck"
	"github.com/gaudi-go/gaudi/simdevice"
	"github.com/gaudi-go/gaudi/tools/internal/devstat"
	"github.com/gaudi-go/gaudi/tools/internal/devstat/devstattest"
	"github.com/gaudi-go/gaudi/tools/internal/golden"
)

// The simulated system is built once per process (simdevice.System), so
// every test here uses the same configuration: two Gaudi2.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hlinfo-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("GAUDI_SIM", "gaudi2:2")
	os.Setenv("GAUDI_SIM_LOCKDIR", dir)
	os.Unsetenv("GAUDI_DEVICE")
	os.Unsetenv("GAUDI_SIM_DRIVER") // the README's output is of the kernel's driver
	// The output must not depend on this machine's RDMA NICs, and the
	// fixture's node paths must never reach a device of this machine.
	listNICs = func() (ib.SysFS, []ib.Device, error) { return ib.SysFS{}, nil, nil }
	openControl = devstattest.NoDevice
	// The simulated server is the process's; close it before the leak
	// check.
	code := leakcheck.Run(m, leakcheck.AfterRun(func() {
		if s, err := simdevice.System(); err == nil {
			s.Close()
		}
	}))
	os.RemoveAll(dir)
	os.Exit(code)
}

// hlinfo runs the command with args and GAUDI_DEVICE=env (unset for "")
// and returns its standard output.
func hlinfo(t *testing.T, env string, args ...string) (string, error) {
	t.Helper()
	out, _, err := hlinfoCtx(t, context.Background(), env, args...)
	return out, err
}

// hlinfoCtx is hlinfo under ctx, returning standard error as well.
func hlinfoCtx(t *testing.T, ctx context.Context, env string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	t.Setenv("GAUDI_DEVICE", env) // the empty value counts as unset
	var out, errOut bytes.Buffer
	cmd, c := newCommand(&out, &errOut)
	err = run(ctx, cmd, c, args)
	return out.String(), errOut.String(), err
}

func mustRun(t *testing.T, env string, args ...string) string {
	t.Helper()
	out, err := hlinfo(t, env, args...)
	if err != nil {
		t.Fatalf("hlinfo %v (GAUDI_DEVICE=%q): %v", args, env, err)
	}
	return out
}

func TestGoldenTextSim(t *testing.T) {
	golden.Check(t, "sim.golden", mustRun(t, "sim"))
}

// volatile are the JSON keys whose values depend on when the test runs or
// on what the process did before (the simulated devices are shared by
// every test of the process); the golden JSON has them masked.
var volatile = map[string]bool{"timestamp": true, "tool_version": true, "energy_mj": true, "opens": true, "last_session_ns": true}

func mask(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if volatile[k] {
				x[k] = "VOLATILE"
			} else {
				x[k] = mask(e)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = mask(e)
		}
	}
	return v
}

// TestGoldenJSONSim pins the JSON schema on the simulator.
func TestGoldenJSONSim(t *testing.T) {
	out := mustRun(t, "", "-device", "sim", "-json", "-v")
	var doc any
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber() // keep 64-bit addresses exact
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("-json output is not JSON: %v\n%s", err, out)
	}
	b, err := json.MarshalIndent(mask(doc), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "sim-json.golden", string(b)+"\n")
}

// unitInProse matches a number followed by a unit inside a string, as
// "1650 MHz of 1650 MHz" or "free 95.25 GiB".
var unitInProse = regexp.MustCompile(`\d\s*(B|KiB|MiB|GiB|MHz|mW|W|%|KB/s|C|ms|ns)\b`)

// TestJSONIsTyped fails on numbers that are strings with a unit, on Go
// struct dumps, and on numeric keys without their unit.
func TestJSONIsTyped(t *testing.T) {
	for _, c := range []struct{ env, root string }{{"sim", ""}, {"", "fixture"}} {
		args := []string{"-json", "-v", "-engines"}
		if c.root != "" {
			args = append(args, "-root", devstattest.Machine(t))
		}
		out := mustRun(t, c.env, args...)
		var doc map[string]any
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v: not JSON: %v", args, err)
		}
		if v, ok := doc["schema_version"].(float64); !ok || v != devstat.SchemaVersion {
			t.Errorf("schema_version %v, want %d", doc["schema_version"], devstat.SchemaVersion)
		}
		var walk func(path string, v any)
		walk = func(path string, v any) {
			switch x := v.(type) {
			case map[string]any:
				for k, e := range x {
					walk(path+"."+k, e)
				}
			case []any:
				for i, e := range x {
					walk(path+"["+string(rune('0'+i%10))+"]", e)
				}
			case string:
				if strings.HasSuffix(path, ".engine_status") || strings.Contains(path, ".firmware_components.") ||
					strings.HasSuffix(path, ".message") || strings.HasSuffix(path, "_version") {
					return // driver and firmware text, error messages
				}
				if unitInProse.MatchString(x) || strings.ContainsAny(x, "{}") {
					t.Errorf("%s = %q: a number with a unit or a struct dump in a string", path, x)
				}
			}
		}
		walk("", doc)
		devs, _ := doc["devices"].([]any)
		if len(devs) == 0 {
			t.Fatalf("%v: no devices", args)
		}
		d := devs[0].(map[string]any)
		for _, k := range []string{"power_mw", "clock_mhz", "clock_max_mhz", "memory_used_bytes", "memory_total_bytes",
			"memory_free_bytes", "energy_mj", "utilization_percent", "power_max_mw"} {
			v, ok := d[k]
			if !ok {
				t.Errorf("device 0 has no key %s", k)
				continue
			}
			if _, isNum := v.(float64); !isNum && v != nil {
				t.Errorf("%s = %#v, want a number or null", k, v)
			}
		}
	}
}

func devicesOf(t *testing.T, out string) []int {
	t.Helper()
	var doc struct {
		Devices []struct {
			Index int `json:"index"`
		} `json:"devices"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	var idx []int
	for _, d := range doc.Devices {
		idx = append(idx, d.Index)
	}
	return idx
}

// TestDeviceSelection: GAUDI_DEVICE selects, -device overrides it, and a
// hardware selector on a machine without hardware is an error, not a
// listing of the simulator (GAUDI_DEVICE=3 used to list every simulated
// device).
func TestDeviceSelection(t *testing.T) {
	root := devstattest.Machine(t)
	for _, c := range []struct {
		env  string
		args []string
		want []int
	}{
		{"2", nil, []int{2}},
		{"module:5", nil, []int{1}},
		{"0000:19:00.0", nil, []int{0}},
		{"2", []string{"-device", "0"}, []int{0}},
		{"2", []string{"-device", ""}, []int{0, 1, 2}},
		{"", []string{"-device", "gaudi2"}, []int{0, 1}},
	} {
		args := append([]string{"-json", "-root", root}, c.args...)
		if d := cmp.Diff(c.want, devicesOf(t, mustRun(t, c.env, args...))); d != "" {
			t.Errorf("GAUDI_DEVICE=%q %v (-want +got):\n%s", c.env, c.args, d)
		}
	}
	if d := cmp.Diff([]int{1}, devicesOf(t, mustRun(t, "sim:1", "-json"))); d != "" {
		t.Errorf("GAUDI_DEVICE=sim:1 (-want +got):\n%s", d)
	}
	empty := t.TempDir()
	if _, err := hlinfo(t, "3", "-json", "-root", empty); !errors.Is(err, device.ErrNoDevice) {
		t.Errorf("GAUDI_DEVICE=3 without hardware: %v, want ErrNoDevice", err)
	}
	if _, err := hlinfo(t, "3", "-json", "-root", root); !errors.Is(err, device.ErrNoDevice) {
		t.Errorf("GAUDI_DEVICE=3 with devices 0-2: %v, want ErrNoDevice", err)
	}
	if _, err := hlinfo(t, "three"); !errors.Is(err, device.ErrBadSelector) {
		t.Errorf("GAUDI_DEVICE=three: %v, want ErrBadSelector", err)
	}
}

func readCSV(t *testing.T, out string) [][]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("not CSV: %v\n%s", err, out)
	}
	return recs
}

func TestQueryCSV(t *testing.T) {
	got := readCSV(t, mustRun(t, "sim", "-query-device", "index,name,bus_id,power.draw,memory.used,memory.total,temperature.aip,serial,clocks.current.soc,utilization.aip"))
	want := [][]string{
		{"index", "name", "bus_id", "power.draw [W]", "memory.used [MiB]", "memory.total [MiB]", "temperature.aip [C]", "serial", "clocks.current.soc [MHz]", "utilization.aip [%]"},
		{"0", "HL225", "0000:19:00.0", "95", "0", "97536", "N/A", "N/A", "1650", "6"},
		{"1", "HL225", "0000:1a:00.0", "95", "0", "97536", "N/A", "N/A", "1650", "6"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("sim CSV (-want +got):\n%s", d)
	}
	got = readCSV(t, mustRun(t, "", "-root", devstattest.Machine(t), "-noheader", "-Q",
		"index, serial,uuid,temperature.aip,pcie.link.speed.current,pcie.link.width.current,power.limit,reset.hard,driver_version,processes,power.draw"))
	want = [][]string{
		{"0", "AN00000001", "01P0-HL2080A0-15-TNS000-00-00-01", "51", "16", "16", "600", "2", "linux 6.12.57+deb12-amd64", "1", "N/A"},
		{"1", "N/A", "N/A", "N/A", "N/A", "N/A", "N/A", "0", "linux 6.12.57+deb12-amd64", "1", "N/A"},
		{"2", "N/A", "N/A", "N/A", "N/A", "N/A", "N/A", "0", "linux 6.12.57+deb12-amd64", "0", "N/A"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("fixture CSV (-want +got):\n%s", d)
	}
	for _, bad := range [][]string{
		{"-Q", "index,temperature.gpu"},
		{"-Q", "index", "-json"},
		{"-noheader"},
		{"-l", "0"},
		{"-l", "soon"},
		{"-count", "3"},
		{"extra"},
	} {
		if _, err := hlinfo(t, "sim", bad...); cli.ExitCode(err) != 2 {
			t.Errorf("%v: %v (exit %d), want a usage error", bad, err, cli.ExitCode(err))
		}
	}
	if out, err := hlinfo(t, "sim", "-Q", "help"); cli.ExitCode(err) != 0 || !strings.Contains(out, "temperature.aip") {
		t.Errorf("-Q help: %v, %q; want the field list on stdout and exit 0", err, out)
	}
}

func TestMilliToUnits(t *testing.T) {
	get := milli(func(d *devstat.Device) *uint64 { return d.PowerMW })
	for mw, want := range map[uint64]string{95000: "95", 95500: "95.5", 1: "0.001", 600250: "600.25"} {
		if got, ok := get(nil, &devstat.Device{PowerMW: &mw}); !ok || got != want {
			t.Errorf("%d mW = %q W, want %q", mw, got, want)
		}
	}
}

// TestLoop: -l repeats (-count bounds it), CSV keeps one header, JSON is
// one document per line, and an ended context stops the loop.
func TestLoop(t *testing.T) {
	recs := readCSV(t, mustRun(t, "sim", "-l", "10ms", "-count", "3", "-Q", "index,timestamp"))
	if len(recs) != 1+3*2 || recs[0][0] != "index" || recs[1][0] != "0" || recs[6][0] != "1" {
		t.Errorf("3 reports of 2 devices: %v", recs)
	}
	lines := strings.Split(strings.TrimSpace(mustRun(t, "sim", "-loop", "0.01", "-count", "2", "-json")), "\n")
	if len(lines) != 2 {
		t.Fatalf("-json -l -count 2: %d lines, want 2", len(lines))
	}
	for _, l := range lines {
		if d := devicesOf(t, l); len(d) != 2 {
			t.Errorf("line %q: devices %v", l, d)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, _, err := hlinfoCtx(t, ctx, "sim:0", "-l", "1h", "-Q", "index", "-noheader")
	if err != nil {
		t.Fatal(err)
	}
	if out != "0\n" {
		t.Errorf("interrupted loop printed %q, want one report", out)
	}
}

// TestTableFits80 checks the table on the simulator, on the fixture and on
// the widest values a device can have.
func TestTableFits80(t *testing.T) {
	check := func(name, text string) {
		t.Helper()
		for _, l := range strings.Split(text, "\n") {
			if n := utf8.RuneCountInString(l); n > 80 {
				t.Errorf("%s: line of %d columns:\n%s", name, n, l)
			}
		}
	}
	check("sim", mustRun(t, "sim"))
	check("fixture", mustRun(t, "", "-root", devstattest.Machine(t)))
	mod, util := 7, 100
	mw, total := uint64(600499), uint64(128<<30)
	wide := devstat.Device{
		Index: 7, PCIAddress: "0000:ff:1f.7", ASIC: device.Gaudi2D.String(), ModuleID: &mod, PowerMW: &mw, UtilizationPercent: &util,
		MemoryTotalBytes: &total, MemoryUsedBytes: &total, Temperatures: []devstat.Temperature{{Sensor: "temp1", Celsius: 105}},
	}
	var text bytes.Buffer
	for _, st := range []string{"operational", "in reset", "disabled", "needs reset", "in device creation", "in reset after device release", "malfunction"} {
		d := wide
		d.Status = st
		s := &devstat.Snapshot{Source: "hardware", Devices: []devstat.Device{d}}
		if err := writeText(&text, s, nil, &config{}); err != nil {
			t.Fatal(err)
		}
	}
	check("widest", text.String())
	if !strings.Contains(text.String(), "128.0/128.0 GiB") || !strings.Contains(text.String(), "105C") {
		t.Errorf("widest table lacks its values:\n%s", text.String())
	}
}

func TestTextShowsWhatHLSMIShows(t *testing.T) {
	out := mustRun(t, "", "-root", devstattest.Machine(t), "-v")
	spaces := regexp.MustCompile(` +`)
	flat := spaces.ReplaceAllString(out, " ")
	for _, want := range []string{
		"3 device(s), hardware, upstream driver linux 6.12.57+deb12-amd64",
		"driver upstream",
		"0    0000:19:00.0  GAUDI2  3    51C   -      -     -             operational",
		"1    0000:1a:00.0  GAUDI2  5    -     -      -     -             in reset",
		"PROCESSES",
		"0    100  compute  python3",
		"1    200  control  hl-smi",
		"serial                AN00000001",
		"temperature           temp1 45.5°C, temp2 (board) 38°C, temp10 51°C",
		"pcie link             16 GT/s x16 (max 32 GT/s x16)",
		"resets                hard 2, soft 0",
		"error open            ENOENT: open /dev/accel/accel_controlD0: no such file or directory",
	} {
		if !strings.Contains(flat, spaces.ReplaceAllString(want, " ")) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestOwnerOfSimulatedDevice: a process that holds a simulated device's
// compute context shows in the process table.
func TestOwnerOfSimulatedDevice(t *testing.T) {
	d, err := simdevice.Open("sim:1")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	out := mustRun(t, "sim")
	if !regexp.MustCompile(`(?m)^1\s+` + itoa(os.Getpid()) + `\s+compute\s`).MatchString(out) {
		t.Errorf("process table lacks this process (pid %d) as device 1's owner:\n%s", os.Getpid(), out)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestEngines(t *testing.T) {
	out := mustRun(t, "sim:0", "-engines")
	for _, want := range []string{"device 0 engines: idle yes, busy engine mask 0x0 0x0 0x0 0x0", "is_idle", "PDMA"} {
		if !strings.Contains(out, want) {
			t.Errorf("-engines output lacks %q:\n%s", want, out)
		}
	}
	// The driver ends each string of the dump with a NUL; none is printed.
	if strings.Contains(out, "\x00") {
		t.Errorf("-engines output holds a NUL:\n%q", out)
	}
}

func TestVersionAndHelp(t *testing.T) {
	out, err := hlinfo(t, "", "-version")
	if !errors.Is(err, cli.ErrVersion) || !strings.HasPrefix(out, "hlinfo ") || !strings.HasSuffix(out, " (JSON schema 2)\n") {
		t.Errorf("-version: %v, %q", err, out)
	}
	out, stderr, err := hlinfoCtx(t, context.Background(), "", "-h")
	if !errors.Is(err, flag.ErrHelp) || cli.ExitCode(err) != 0 || stderr != "" {
		t.Errorf("-h: %v, stderr %q; want flag.ErrHelp, exit 0 and nothing on stderr", err, stderr)
	}
	for _, want := range []string{"Usage:\n  hlinfo [-device SEL]", "GAUDI_DEVICE", "GAUDI_SIM", "-query-device FIELDS", "-l SECONDS", "-device SEL", "-version"} {
		if !strings.Contains(out, want) {
			t.Errorf("-h lacks %q:\n%s", want, out)
		}
	}
}
