package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gaudi-go/gaudi/tools/internal/golden"
)

// Measured figures differ from run to run: shape masks them, keeping
// every word, count and column.
var (
	heading   = regexp.MustCompile(`(?m)^hlperf .*, \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)
	figure    = regexp.MustCompile(`\d+\.\d+`)
	bar       = regexp.MustCompile(`\|#+ *`)
	blankRuns = regexp.MustCompile(`[ \t]+`)
)

// shape is out with its measured figures masked.
func shape(out string) []string {
	out = heading.ReplaceAllString(out, "hlperf VERSION, TIME")
	out = figure.ReplaceAllString(out, "F")
	out = bar.ReplaceAllString(out, "|### ")
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		lines = append(lines, strings.TrimSpace(blankRuns.ReplaceAllString(l, " ")))
	}
	return lines
}

// TestREADMEShowsRealOutput runs the README's hlperf examples (those
// written "hlperf ...") and compares what they print, stderr then stdout,
// with what the README shows, figures aside.
func TestREADMEShowsRealOutput(t *testing.T) {
	ex := golden.READMEExamples(t, "../../README.md", "hlperf")
	if len(ex) == 0 {
		t.Fatal("README has no hlperf example")
	}
	for _, e := range ex {
		if e.Env["GAUDI_SIM"] != os.Getenv("GAUDI_SIM") {
			t.Errorf("README example %v runs with GAUDI_SIM=%q, the test with %q", e.Args, e.Env["GAUDI_SIM"], os.Getenv("GAUDI_SIM"))
			continue
		}
		_, out, errOut := runHlperf(t, e.Args...)
		if d := cmp.Diff(shape(e.Out), shape(errOut+out)); d != "" {
			t.Errorf("README example hlperf %s (-README +real):\n%s", strings.Join(e.Args, " "), d)
		}
	}
}
