package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/tools/internal/devstat"
)

// TestOutOfTreeDriverText: the header names the driver and its version,
// -v shows what only the out-of-tree driver reports, -Q has the driver.
func TestOutOfTreeDriverText(t *testing.T) {
	oot, version, no, yes := "out-of-tree", "1.24.1-a1b2c3d", false, true
	d := devstat.Device{
		Index: 0, PCIAddress: "0000:19:00.0", ASIC: "GAUDI2", Status: "operational", Driver: &oot,
		Details: &devstat.Details{OutOfTree: &devstat.OutOfTree{
			DRMAccel: &yes, MMEMask: 0xF, SchedArcMask: 0x3F, NICInitialized: &no,
			ModuleParams: &devstat.ModuleParams{TimeoutLockedS: 30, ResetOnLockup: true, TPCMask: 0x1FFFFFF, FWLoadingMask: 7},
		}},
	}
	s := &devstat.Snapshot{Source: "hardware", Driver: &oot, DriverVersion: &version, Devices: []devstat.Device{d}}
	var out bytes.Buffer
	if err := writeText(&out, s, nil, &config{Options: devstat.Options{Details: true}}); err != nil {
		t.Fatal(err)
	}
	flat := regexp.MustCompile(` +`).ReplaceAllString(out.String(), " ")
	for _, want := range []string{
		"1 device(s), hardware, out-of-tree driver 1.24.1-a1b2c3d",
		"driver out-of-tree",
		"drm accel yes",
		"nic ports 0x0, external 0x0, initialized no",
		"engines (oot) mme 0xf, scheduler arcs 0x3f, odp no",
		"module params timeout 30 s, reset on lockup yes, tpc 0x1ffffff, nic ports 0x0, firmware 0x7",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, l := range strings.Split(strings.SplitN(out.String(), "\n\n", 2)[0], "\n") {
		if len(l) > 80 {
			t.Errorf("table line of %d columns: %s", len(l), l)
		}
	}
	var csv bytes.Buffer
	q, err := parseFields("index,driver,driver_version")
	if err != nil {
		t.Fatal(err)
	}
	if err := writeCSV(&csv, s, q, true, true); err != nil {
		t.Fatal(err)
	}
	if got, want := csv.String(), "index,driver,driver_version\n0,out-of-tree,1.24.1-a1b2c3d\n"; got != want {
		t.Errorf("CSV %q, want %q", got, want)
	}
}
