package main

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gaudi-go/gaudi/tools/internal/devstat"
)

// TestREADMEShowsRealOutput serves the simulator as the README's example
// does and compares the lines its curl | grep prints with the README's.
func TestREADMEShowsRealOutput(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const cmd = "    $ curl -s 127.0.0.1:41611/metrics | grep '^habanalabs_power_mW{'"
	_, after, ok := strings.Cut(string(b), cmd+"\n")
	if !ok {
		t.Fatalf("README lacks %q", cmd)
	}
	var want []string
	for _, l := range strings.Split(after, "\n") {
		code, isCode := strings.CutPrefix(l, "    ")
		if !isCode || strings.HasPrefix(code, "$ ") {
			break
		}
		want = append(want, code)
	}
	if !strings.Contains(string(b), "    $ GAUDI_SIM=gaudi2:2 GAUDI_DEVICE=sim hlexporter -listen 127.0.0.1:41611 &\n    hlexporter: serving http://127.0.0.1:41611/metrics\n") {
		t.Error("README's hlexporter command or the line it logs changed")
	}
	if os.Getenv("GAUDI_SIM") != "gaudi2:2" {
		t.Fatalf("the test runs with GAUDI_SIM=%q, the README with gaudi2:2", os.Getenv("GAUDI_SIM"))
	}
	var got []string
	for _, l := range strings.Split(scrape(t, startExporter(t, &config{opts: devstat.Options{Selection: mustSelect(t, "sim")}, habanaNames: true})), "\n") {
		if strings.HasPrefix(l, "habanalabs_power_mW{") {
			got = append(got, l)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("README's habanalabs_power_mW lines (-README +real):\n%s", d)
	}
}
