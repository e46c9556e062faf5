package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/internal/leakcheck"
	"github.com/gaudi-go/gaudi/simdevice"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hlperf-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("GAUDI_DEVICE", "sim")
	os.Setenv("GAUDI_SIM", "gaudi2:1")
	os.Setenv("GAUDI_SIM_LOCKDIR", dir)
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

func TestRunOnSimulator(t *testing.T) {
	res, err := run(config{dirs: []string{"h2d", "d2h", "d2d", "bidir"}, min: 4096, max: 1 << 20, iters: 3, warmup: 1, streams: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Sizes 4K, 16K, 64K, 256K, 1M for each of four directions.
	if len(res) != 20 {
		t.Fatalf("%d results, want 20", len(res))
	}
	for _, r := range res {
		if r.GBps <= 0 || r.P50us <= 0 || r.P99us < r.P50us || r.Iters != 3 || !strings.Contains(r.Device, "GAUDI2") {
			t.Errorf("implausible result %+v", r)
		}
	}
	var tbl, js, cs bytes.Buffer
	if err := writeTable(&tbl, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tbl.String(), "bidir") || strings.Count(tbl.String(), "\n") != 22 {
		t.Errorf("table:\n%s", tbl.String())
	}
	if err := writeJSON(&js, res); err != nil {
		t.Fatal(err)
	}
	var back []result
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back) != 20 {
		t.Errorf("JSON round trip: %v, %d results", err, len(back))
	}
	if err := writeCSV(&cs, res); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&cs).ReadAll()
	if err != nil || len(rows) != 21 || rows[0][1] != "direction" {
		t.Errorf("CSV: %v, %d rows", err, len(rows))
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]uint64{"4096": 4096, "4K": 4096, "64M": 64 << 20, "1G": 1 << 30} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v", in, got, err)
		}
	}
	if _, err := parseSize("lots"); err == nil {
		t.Error("parseSize accepted junk")
	}
	if _, err := parseDirs("h2d,up"); err == nil {
		t.Error("parseDirs accepted an unknown direction")
	}
}
