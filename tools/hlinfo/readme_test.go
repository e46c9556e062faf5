package main

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gaudi-go/gaudi/tools/internal/golden"
)

// TestREADMEShowsRealOutput runs the README's hlinfo examples and compares
// what they print with what the README shows.
func TestREADMEShowsRealOutput(t *testing.T) {
	ex := golden.READMEExamples(t, "../../README.md", "hlinfo")
	if len(ex) < 2 {
		t.Fatalf("README has %d hlinfo examples, want the table and the CSV", len(ex))
	}
	for _, e := range ex {
		if e.Env["GAUDI_SIM"] != os.Getenv("GAUDI_SIM") {
			t.Errorf("README example %v runs with GAUDI_SIM=%q, the test with %q", e.Args, e.Env["GAUDI_SIM"], os.Getenv("GAUDI_SIM"))
			continue
		}
		got := mustRun(t, e.Env["GAUDI_DEVICE"], e.Args...)
		if d := cmp.Diff(e.Out, got); d != "" {
			t.Errorf("README example hlinfo %s (-README +real):\n%s", strings.Join(e.Args, " "), d)
		}
	}
}
