package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeSystem lays out a /proc status, a BTF file and a tracefs tree in a
// temporary directory. It has no kprobe support and an empty kallsyms
// unless withKprobes and withKallsyms add them.
func fakeSystem(t *testing.T, capEff string, btf, tracefs bool, events []string) system {
	t.Helper()
	dir := t.TempDir()
	status := filepath.Join(dir, "status")
	if err := os.WriteFile(status, []byte("Name:\tx\nCapEff:\t"+capEff+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := system{status: status, btf: filepath.Join(dir, "vmlinux"), tracefs: []string{filepath.Join(dir, "tracing")},
		kprobePMU: filepath.Join(dir, "kprobe", "type"), kallsyms: filepath.Join(dir, "kallsyms"),
		mount: func(string) error { return errors.New("mount: operation not permitted") }, euidRoot: func() bool { return false }}
	if err := os.WriteFile(s.kallsyms, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if btf {
		if err := os.WriteFile(s.btf, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if tracefs {
		for _, ev := range events {
			d := filepath.Join(s.tracefs[0], "events", "syscalls", ev)
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, "id"), []byte("1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(filepath.Join(s.tracefs[0], "events"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// withKprobes adds the kprobe perf event source (pmu) and tracefs's
// kprobe_events (events; tracefs must exist) to a fake system.
func withKprobes(t *testing.T, s system, pmu, events bool) system {
	t.Helper()
	var files []string
	if pmu {
		files = append(files, s.kprobePMU)
	}
	if events {
		files = append(files, filepath.Join(s.tracefs[0], "kprobe_events"))
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("6\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestPreflight(t *testing.T) {
	const root, bpfPerfmon, none = "000001ffffffffff", "000000c000000000", "0000000000000000"
	for _, tc := range []struct {
		name    string
		sys     func(t *testing.T) system
		mode    string
		want    string // mode, or error text
		wantErr error
	}{
		{"root", func(t *testing.T) system { return fakeSystem(t, root, true, true, syscallEvents) }, ProbeAuto, ProbeTracepoint, nil},
		{"CAP_BPF and CAP_PERFMON", func(t *testing.T) system { return fakeSystem(t, bpfPerfmon, true, true, syscallEvents) }, ProbeAuto, ProbeTracepoint, nil},
		{"unprivileged", func(t *testing.T) system { return fakeSystem(t, none, true, true, syscallEvents) }, ProbeAuto,
			"needs root, or CAP_BPF and CAP_PERFMON", ErrPrivilege},
		{"no BTF", func(t *testing.T) system { return fakeSystem(t, root, false, true, syscallEvents) }, ProbeAuto,
			"CONFIG_DEBUG_INFO_BTF=y", ErrNoBTF},
		{"no tracefs: auto falls back", func(t *testing.T) system { return fakeSystem(t, root, true, false, nil) }, ProbeAuto, ProbeRaw, nil},
		{"no tracefs: tracepoint asked", func(t *testing.T) system { return fakeSystem(t, root, true, false, nil) }, ProbeTracepoint,
			"tracefs is not mounted", ErrNoTracepoints},
		{"no syscall events", func(t *testing.T) system { return fakeSystem(t, root, true, true, syscallEvents[:2]) }, ProbeTracepoint,
			"CONFIG_FTRACE_SYSCALLS=y", ErrNoTracepoints},
		{"raw asked", func(t *testing.T) system { return fakeSystem(t, root, true, false, nil) }, ProbeRaw, ProbeRaw, nil},
		{"bad mode", func(t *testing.T) system { return fakeSystem(t, root, true, true, syscallEvents) }, "kprobes", "unknown probe mode", nil},
		{"kprobe: perf event source", func(t *testing.T) system {
			return withKprobes(t, fakeSystem(t, root, true, false, nil), true, false)
		}, ProbeKprobe, ProbeKprobe, nil},
		{"kprobe: tracefs kprobe_events", func(t *testing.T) system {
			return withKprobes(t, fakeSystem(t, root, true, true, syscallEvents), false, true)
		}, ProbeKprobe, ProbeKprobe, nil},
		{"kprobe: none", func(t *testing.T) system { return fakeSystem(t, root, true, true, syscallEvents) }, ProbeKprobe,
			"kprobes not available on this kernel (CONFIG_KPROBES? ", ErrNoKprobes},
		{"kprobe: no tracefs either", func(t *testing.T) system { return fakeSystem(t, root, true, false, nil) }, ProbeKprobe,
			"tracefs is not mounted", ErrNoKprobes},
		{"kprobe: unprivileged", func(t *testing.T) system {
			return withKprobes(t, fakeSystem(t, none, true, false, nil), true, false)
		}, ProbeKprobe, "needs root", ErrPrivilege},
		{"fentry", func(t *testing.T) system { return fakeSystem(t, root, true, false, nil) }, ProbeFentry, ProbeFentry, nil},
		{"fentry: no BTF", func(t *testing.T) system { return fakeSystem(t, root, false, false, nil) }, ProbeFentry,
			"CONFIG_DEBUG_INFO_BTF=y", ErrNoBTF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mode, err := tc.sys(t).preflight(tc.mode)
			if tc.want == ProbeTracepoint || tc.want == ProbeRaw || tc.want == ProbeKprobe || tc.want == ProbeFentry {
				if err != nil || mode != tc.want {
					t.Fatalf("got %q, %v; want %q", mode, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %q, %v; want an error containing %q", mode, err, tc.want)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v is not %v", err, tc.wantErr)
			}
		})
	}
}

func TestBuildConfig(t *testing.T) {
	null, err := NodeAt("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	if null.Rdev != 1<<20|3 {
		t.Errorf("/dev/null is %d:%d, want 1:3", null.Rdev>>20, null.Rdev&(1<<20-1))
	}
	cfg, err := buildConfig(Options{PID: 42, Comm: "worker", Devices: []DeviceNode{null}})
	if err != nil {
		t.Fatal(err)
	}
	// A device's path is reported whole: its length counts the NUL.
	if cfg.Pid != 42 || cstr(cfg.Comm[:]) != "worker" || cfg.Flags&bpfConfigFlagCFG_COMM == 0 || cfg.Nrdev != 1 || cfg.Rdev[0] != 1<<20|3 ||
		cfg.Nprefix != 1 || cstr(cfg.Prefix[0][:]) != "/dev/null" || cfg.PrefixLen[0] != 10 {
		t.Errorf("config %+v", cfg)
	}

	// Every node of a full machine: the numbers and whole paths in order.
	var nodes []DeviceNode
	for i := range MaxDevices / 2 {
		nodes = append(nodes, DeviceNode{Path: fmt.Sprintf("/dev/accel/accel%d", i), Rdev: 261<<20 | uint32(i)},
			DeviceNode{Path: fmt.Sprintf("/dev/accel/accel_controlD%d", i), Rdev: 508<<20 | uint32(i)})
	}
	cfg, err = buildConfig(Options{Devices: nodes})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Nrdev != uint32(len(nodes)) || cfg.Nprefix != uint32(len(nodes)) {
		t.Errorf("%d nodes: nrdev %d nprefix %d", len(nodes), cfg.Nrdev, cfg.Nprefix)
	}
	for i, n := range nodes {
		if cfg.Rdev[i] != n.Rdev || string(cfg.Prefix[i][:cfg.PrefixLen[i]]) != n.Path+"\x00" {
			t.Errorf("node %d: rdev %#x prefix %q, want %#x %q", i, cfg.Rdev[i], cfg.Prefix[i][:cfg.PrefixLen[i]], n.Rdev, n.Path)
		}
	}

	long := DeviceNode{Path: "/dev/a-device-node-path-of-32-by", Rdev: 1}
	for _, bad := range []Options{{Comm: "a-name-longer-than-15"}, {PID: -1}, {Devices: append(nodes, null)},
		{Devices: []DeviceNode{{Path: "/dev/x"}}}, {Devices: []DeviceNode{long}}} {
		if _, err := buildConfig(bad); err == nil {
			t.Errorf("buildConfig(%+v) accepted", bad)
		}
	}
	for _, path := range []string{"/etc/passwd", "/no/such"} {
		if n, err := NodeAt(path); err == nil {
			t.Errorf("NodeAt(%s) = %+v", path, n)
		}
	}
	if m := requestCalls(); len(m) != 12+6 {
		t.Errorf("%d traced requests, want 12 habanalabs, uverbs and 5 dma-buf", len(m))
	}
}

// TestRegsConfig reads struct pt_regs from the running kernel's BTF and
// checks the offsets against the x86-64 layout.
func TestRegsConfig(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("the expected offsets are x86-64's, not %s's", runtime.GOARCH)
	}
	if _, err := os.Stat(hostSystem.btf); err != nil {
		t.Skipf("no kernel BTF: %v", err)
	}
	var cfg bpfConfig
	if err := regsConfig(&cfg); err != nil {
		t.Fatal(err)
	}
	type offs struct {
		Syscall    [6]uint32
		Nr         uint32
		Func       [3]uint32
		Ret        uint32
		NrIoctl    uint32
		ConfigFlag bpfConfigFlag
	}
	got := offs{cfg.RegOff, cfg.NrRegOff, cfg.FuncRegOff, cfg.RetRegOff, cfg.NrIoctl, cfg.Flags}
	// di, si, dx, r10, r8, r9; orig_ax; di, si, dx; ax.
	want := offs{[6]uint32{112, 104, 96, 56, 72, 64}, 120, [3]uint32{112, 104, 96}, 80, 16, 0}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("offsets (-want +got):\n%s", d)
	}
}
