package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/tools/internal/devstat/devstattest"
)

// acc and ctl are the nodes of the fixture machine's accelN
// (devstattest: compute 261:N, control 508:N).
func acc(n uint32) DeviceNode {
	return DeviceNode{Path: "/dev/accel/accel" + itoa(n), Rdev: 261<<20 | n}
}

func ctl(n uint32) DeviceNode {
	return DeviceNode{Path: "/dev/accel/accel_controlD" + itoa(n), Rdev: 508<<20 | n}
}

// TestResolveDevices resolves selectors on the fixture machine (accel0
// and accel1 Gaudi2, module 3 and 5; accel2 a Gaudi at 0000:4d:00.0) and
// on one without a Gaudi.
func TestResolveDevices(t *testing.T) {
	machine, empty := devstattest.Machine(t), t.TempDir()
	null := nodeAt(t, "/dev/null")
	for _, tc := range []struct {
		root, sel string
		want      []DeviceNode
		gaudi     bool
		err       error  // what the error matches
		msg       string // what it says
	}{
		{root: machine, sel: ""},
		{root: empty, sel: ""},
		{root: machine, sel: "0", want: []DeviceNode{acc(0), ctl(0)}, gaudi: true},
		{root: machine, sel: "gaudi2", want: []DeviceNode{acc(0), ctl(0), acc(1), ctl(1)}, gaudi: true},
		{root: machine, sel: "gaudi", want: []DeviceNode{acc(2), ctl(2)}, gaudi: true},
		{root: machine, sel: "4d:00.0", want: []DeviceNode{acc(2), ctl(2)}, gaudi: true},
		{root: machine, sel: "module:5", want: []DeviceNode{acc(1), ctl(1)}, gaudi: true},
		{root: machine, sel: "/dev/accel/accel_controlD1", want: []DeviceNode{ctl(1)}, gaudi: true},
		{root: machine, sel: "/dev/accel/accel2", want: []DeviceNode{acc(2)}, gaudi: true},
		{root: machine, sel: "/dev/null", want: []DeviceNode{null}},
		{root: empty, sel: "/dev/null", want: []DeviceNode{null}},
		{root: machine, sel: "7", err: device.ErrNoDevice, msg: "GAUDI_DEVICE=7: no Gaudi matches"},
		{root: machine, sel: "gaudi3", err: device.ErrNoDevice, msg: "no Gaudi matches"},
		{root: empty, sel: "0", err: device.ErrNoDevice, msg: `GAUDI_DEVICE=0: no Gaudi on this machine to match "0"`},
		{root: machine, sel: "/dev/accel/accel9", err: os.ErrNotExist, msg: "GAUDI_DEVICE=/dev/accel/accel9: device /dev/accel/accel9:"},
		{root: machine, sel: "/etc/passwd", msg: "device /etc/passwd: not a device node"},
		{root: machine, sel: "sim", err: ErrSimulated, msg: `GAUDI_DEVICE=sim: hltrace sees only the kernel's devices`},
		{root: empty, sel: "sim:1", err: ErrSimulated, msg: `or -device "" for every device`},
	} {
		sel, err := cli.ParseSelection("GAUDI_DEVICE", tc.sel)
		if err != nil {
			t.Fatal(err)
		}
		f, err := resolveDevices(sel, tc.root)
		where := map[string]string{machine: "fixture", empty: "no Gaudi"}[tc.root]
		if tc.msg != "" {
			if err == nil || tc.err != nil && !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("%s: %q: error %v, want %q matching %v", where, tc.sel, err, tc.msg, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %q: %v", where, tc.sel, err)
			continue
		}
		if !cmp.Equal(f.nodes, tc.want) || f.gaudi != tc.gaudi {
			t.Errorf("%s: %q: nodes %v (gaudi %v), want %v (%v)", where, tc.sel, f.nodes, f.gaudi, tc.want, tc.gaudi)
		}
	}
}

// TestDeviceFilterText checks what the banner says of a filter, and the
// command's environment: -device's selector when it named Gaudis, nothing
// for GAUDI_DEVICE (inherited) or another device node.
func TestDeviceFilterText(t *testing.T) {
	machine := devstattest.Machine(t)
	for _, tc := range []struct {
		from, sel string
		env       []string
		banner    []string
	}{
		{"-device", "", nil, nil},
		{"-device", "gaudi2", []string{"GAUDI_DEVICE=gaudi2"}, []string{
			"only the ioctls on /dev/accel/accel0, /dev/accel/accel_controlD0,",
			"  /dev/accel/accel1, /dev/accel/accel_controlD1",
			"  (-device gaudi2; the command runs with GAUDI_DEVICE=gaudi2)"}},
		{"GAUDI_DEVICE", "1", nil, []string{
			"only the ioctls on /dev/accel/accel1, /dev/accel/accel_controlD1",
			"  (GAUDI_DEVICE=1)"}},
		{"-device", "/dev/null", nil, []string{"only the ioctls on /dev/null", "  (-device /dev/null)"}},
	} {
		sel, err := cli.ParseSelection(tc.from, tc.sel)
		if err != nil {
			t.Fatal(err)
		}
		f, err := resolveDevices(sel, machine)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.commandEnv(); !slices.Equal(got, tc.env) {
			t.Errorf("%s %q: the command's environment gains %q, want %q", tc.from, tc.sel, got, tc.env)
		}
		if got := f.describe(bannerWidth); !slices.Equal(got, tc.banner) {
			t.Errorf("%s %q: banner\n%q\nwant\n%q", tc.from, tc.sel, got, tc.banner)
		}
		if got, want := (&Options{Devices: f.nodes}).who(), map[int]string{0: "every process", 1: "every process, on /dev/null"}[len(f.nodes)]; want != "" && got != want {
			t.Errorf("%s %q: who = %q, want %q", tc.from, tc.sel, got, want)
		}
	}
}

func TestParseDevNumber(t *testing.T) {
	for v, want := range map[string]uint32{"261:0": 261 << 20, "508:17": 508<<20 | 17, "4095:1048575": 1<<32 - 1} {
		if got, err := parseDevNumber(v); err != nil || got != want {
			t.Errorf("parseDevNumber(%q) = %#x, %v; want %#x", v, got, err, want)
		}
	}
	for _, bad := range []string{"", "261", "261:", ":0", "4096:0", "1:1048576", "-1:0", "0x1:0", "1:2:3"} {
		if got, err := parseDevNumber(bad); err == nil {
			t.Errorf("parseDevNumber(%q) = %#x", bad, got)
		}
	}
}

// TestDeviceSelectionFails checks that a selection hltrace cannot trace
// stops it before anything is loaded: a failure (1, or 125 with a
// command) when it comes from GAUDI_DEVICE or names no device, and the
// command does not run.
func TestDeviceSelectionFails(t *testing.T) {
	old := sysfsRoot
	sysfsRoot = devstattest.Machine(t)
	defer func() { sysfsRoot = old }()
	ran := filepath.Join(t.TempDir(), "ran")
	for _, tc := range []struct {
		env  string // GAUDI_DEVICE
		args []string
		code int
		want string
	}{
		{"sim", nil, exitFailed, "GAUDI_DEVICE=sim: hltrace sees only the kernel's devices"},
		{"sim:0", []string{"--", "touch", ran}, exitTraceFailed, "GAUDI_DEVICE=sim:0: hltrace sees only"},
		{"bogus", []string{"--", "touch", ran}, exitTraceFailed, `GAUDI_DEVICE: bad device selector "bogus"`},
		{"", []string{"-device", "9"}, exitFailed, "-device 9: no Gaudi matches"},
		{"", []string{"-device", "gaudi3", "--", "touch", ran}, exitTraceFailed, "-device gaudi3: no Gaudi matches"},
		{"", []string{"-device", "/no/such/node"}, exitFailed, "-device /no/such/node: device /no/such/node: no such file"},
	} {
		t.Setenv("GAUDI_DEVICE", tc.env)
		var stdout, stderr strings.Builder
		code := hltrace(tc.args, nil, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) || stdout.Len() != 0 {
			t.Errorf("GAUDI_DEVICE=%s hltrace %q: status %d, stderr %q; want %d and %q", tc.env, tc.args, code, stderr.String(), tc.code, tc.want)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Fatalf("GAUDI_DEVICE=%s hltrace %q: the command ran", tc.env, tc.args)
		}
	}
}

// TestIntegrationDeviceFilter traces ioctls on /dev/zero, /dev/null and
// /dev/full with a filter naming the first two: the BPF side keeps the
// calls on each of its devices and drops the others', and reports the
// openat of its paths only, whole (a longer path on the same device is not
// reported).
func TestIntegrationDeviceFilter(t *testing.T) {
	requireRoot(t)
	// Device nodes of our own, with paths short enough for the filter: a
	// second /dev/null whose path extends the first's.
	dir, err := os.MkdirTemp("", "ht")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	short, long := filepath.Join(dir, "n"), filepath.Join(dir, "n2")
	for _, p := range []string{short, long} {
		if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			t.Skipf("mknod %s: %v (the file system refuses device nodes)", p, err)
		}
	}
	tr := openTracer(t, Options{Devices: []DeviceNode{nodeAt(t, "/dev/zero"), nodeAt(t, short)}, NoFuncs: true})

	open := func(path string) int {
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	full, zero, null, null2 := open("/dev/full"), open("/dev/zero"), open(short), open(long)
	for _, fd := range []int{full, zero, null, null2} {
		issueMarker(t, fd)
	}
	evs := readEvents(t, tr, 2*time.Second, func(e *Event) bool { return isMarker(e) && e.FD() == int32(null2) })
	var got []string
	for i := range evs {
		e := &evs[i]
		switch {
		case e.Call() == bpfCallCALL_OPENAT:
			got = append(got, "openat "+cstr(e.Open().Path[:]))
		case isMarker(e):
			got = append(got, "INFO "+map[int32]string{int32(full): "full", int32(zero): "zero", int32(null): "n", int32(null2): "n2"}[e.FD()])
		}
	}
	// Not /dev/full's calls. n2 is /dev/null too: its ioctl passes the
	// device filter, its openat not the path's.
	if want := []string{"openat /dev/zero", "openat " + short, "INFO zero", "INFO n", "INFO n2"}; !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q:%s", got, want, lines(evs))
	}
}

// TestIntegrationDeviceCommand runs a command under -device and under
// GAUDI_DEVICE, on the fixture machine's devices: the banner says what is
// traced, and -device's selector becomes the command's GAUDI_DEVICE.
// The deprecated -d still traces a device node, and says it is
// deprecated.
func TestIntegrationDeviceCommand(t *testing.T) {
	requireRoot(t)
	old := sysfsRoot
	sysfsRoot = devstattest.Machine(t)
	defer func() { sysfsRoot = old }()
	t.Setenv(programEnv, "exit")
	t.Setenv(exitEnv, "0")
	for _, tc := range []struct {
		env    string // GAUDI_DEVICE
		args   []string
		banner string // words of the banner
		gets   string // the command's GAUDI_DEVICE; "" for none
	}{
		{"", []string{"-device", "1"},
			"only the ioctls on /dev/accel/accel1, /dev/accel/accel_controlD1 (-device 1; the command runs with GAUDI_DEVICE=1)", "1"},
		{"3", []string{"-device", "module:5"}, "(-device module:5; the command runs with GAUDI_DEVICE=module:5)", "module:5"},
		{"gaudi", nil, "only the ioctls on /dev/accel/accel2, /dev/accel/accel_controlD2 (GAUDI_DEVICE=gaudi)", "gaudi"},
		{"", []string{"-device", "/dev/null"}, "only the ioctls on /dev/null (-device /dev/null)", ""},
		{"", []string{"-d", "/dev/null"}, "-d is deprecated: use -device, which takes the selectors of GAUDI_DEVICE", ""},
	} {
		t.Run(strings.Join(append([]string{"GAUDI_DEVICE=" + tc.env}, tc.args...), " "), func(t *testing.T) {
			report := filepath.Join(t.TempDir(), "report")
			t.Setenv(reportEnv, report)
			t.Setenv("GAUDI_DEVICE", tc.env)
			code, stdout, stderr := runHltrace(t, append(tc.args, "-no-funcs", "--", testExe(t))...)
			if code != 0 {
				t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
			}
			if !strings.Contains(wordsOf(stderr), tc.banner) {
				t.Errorf("stderr lacks %q:\n%s", tc.banner, stderr)
			}
			r, ok := readReport(t, report)
			if !ok {
				t.Fatalf("the command did not run; stdout %q, stderr:\n%s", stdout, stderr)
			}
			var gets []string
			for _, kv := range r.Env {
				if v, ok := strings.CutPrefix(kv, "GAUDI_DEVICE="); ok && v != "" {
					gets = append(gets, v)
				}
			}
			if want := []string{tc.gets}; tc.gets == "" && len(gets) != 0 || tc.gets != "" && !slices.Equal(gets, want) {
				t.Errorf("the command's GAUDI_DEVICE: %q, want %q", gets, tc.gets)
			}
		})
	}
}
