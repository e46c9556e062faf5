package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/tools/internal/devstat"
	"github.com/google/go-cmp/cmp"
)

// TestDriverAgreesWithHlinfo: hlperf names the driver of a device as
// hlinfo does (package devstat, the same INFO probe): its flavour and
// version in -json, and "<flavour> driver [version]" in the table, as in
// hlinfo's heading. Before, hlperf said "sim" where hlinfo said
// "upstream".
func TestDriverAgreesWithHlinfo(t *testing.T) {
	sel, err := cli.ParseSelection("-device", "sim:0")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := devstat.Collect(devstat.Options{Selection: sel})
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runHlperf(t, "-json", "-device", "sim:0", "-dir", "h2d", "-min", "4K", "-max", "4K", "-iters", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Devices []map[string]any `json:"devices"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Devices) != 1 {
		t.Fatalf("decode: %v, %s", err, out)
	}
	str := func(p *string) any {
		if p == nil {
			return nil
		}
		return *p
	}
	want := map[string]any{"driver": str(snap.Driver), "driver_version": str(snap.DriverVersion)}
	got := map[string]any{"driver": doc.Devices[0]["driver"], "driver_version": doc.Devices[0]["driver_version"]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hlperf -json's driver against hlinfo's (-hlinfo +hlperf):\n%s", diff)
	}
	code, out, errOut = runHlperf(t, "-device", "sim:0", "-dir", "h2d", "-min", "4K", "-max", "4K", "-iters", "1")
	if code != 0 || snap.Driver == nil {
		t.Fatalf("exit %d, hlinfo's driver %v: %s", code, snap.Driver, errOut)
	}
	text := ", " + *snap.Driver + " driver"
	if snap.DriverVersion != nil {
		text += " " + *snap.DriverVersion
	}
	if !strings.Contains(out, text+",") {
		t.Errorf("the table does not name the driver as hlinfo does (%q):\n%s", text, out)
	}
}
