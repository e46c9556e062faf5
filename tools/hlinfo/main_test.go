package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/internal/leakcheck"
	"github.com/gaudi-go/gaudi/simdevice"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The simulated system is built once per process (simdevice.System), so
// every test here uses the same configuration.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hlinfo-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("GAUDI_SIM", "gaudi2:2")
	os.Setenv("GAUDI_SIM_LOCKDIR", dir)
	// The golden output must not depend on this machine's RDMA NICs.
	listNICs = func() (ib.SysFS, []ib.Device, error) { return ib.SysFS{}, nil, nil }
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

func TestGoldenSim(t *testing.T) {
	var buf bytes.Buffer
	if err := run(&buf, "sim", false, false); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "sim.golden")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), buf.String()); d != "" {
		t.Errorf("hlinfo output (-want +got):\n%s", d)
	}
}

// TestVerboseSim checks that -v reports every INFO query for every device,
// and that an operational simulated Gaudi2 answers all of them.
func TestVerboseSim(t *testing.T) {
	var buf bytes.Buffer
	if err := run(&buf, "sim", true, true); err != nil {
		t.Fatal(err)
	}
	var inv inventory
	if err := json.Unmarshal(buf.Bytes(), &inv); err != nil {
		t.Fatalf("-json output is not JSON: %v\n%s", err, buf.String())
	}
	if inv.Source != "simulator" || len(inv.Devices) != 2 {
		t.Fatalf("inventory: source %q, %d devices", inv.Source, len(inv.Devices))
	}
	for _, r := range inv.Devices {
		if r.ASIC != "GAUDI2" || r.DeviceID != "0x1020" || r.DRAMTotal != 127*768<<20 || r.DRAMFree != r.DRAMTotal || r.Encoding != "drm" {
			t.Errorf("device %d: %+v", r.Index, r)
		}
		var got []string
		for _, f := range r.Info {
			got = append(got, f.Name)
		}
		var want []string
		for _, q := range queries {
			want = append(want, q.name)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("device %d: INFO values (-want +got):\n%s\nerrors: %v", r.Index, d, r.Errors)
		}
	}
	var text bytes.Buffer
	if err := run(&text, "sim", true, false); err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		if !strings.Contains(text.String(), "  "+q.name+" ") {
			t.Errorf("-v text lacks %s", q.name)
		}
	}
}
