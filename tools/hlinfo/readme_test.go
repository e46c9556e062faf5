package main

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// example is a command of the README, indented as a code block ("    $
// ..."), with the output printed below it.
type example struct {
	env  map[string]string
	prog string
	args []string
	out  string
}

// readmeExamples returns the README's examples of prog.
func readmeExamples(t *testing.T, prog string) []example {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []example
	var cur *example
	for _, line := range strings.Split(string(b), "\n") {
		code, isCode := strings.CutPrefix(line, "    ")
		if cmd, ok := strings.CutPrefix(code, "$ "); isCode && ok {
			cur = nil
			e := example{env: map[string]string{}}
			words := strings.Fields(cmd)
			for len(words) > 0 && strings.Contains(words[0], "=") {
				k, v, _ := strings.Cut(words[0], "=")
				e.env[k] = v
				words = words[1:]
			}
			if len(words) > 0 && words[0] == prog {
				e.prog, e.args = words[0], words[1:]
				out = append(out, e)
				cur = &out[len(out)-1]
			}
			continue
		}
		if cur == nil {
			continue
		}
		if !isCode && line != "" {
			cur = nil
			continue
		}
		cur.out += code + "\n"
	}
	for i := range out {
		out[i].out = strings.TrimRight(out[i].out, "\n") + "\n"
	}
	return out
}

// TestREADMEShowsRealOutput runs the README's hlinfo examples and compares
// what they print with what the README shows.
func TestREADMEShowsRealOutput(t *testing.T) {
	ex := readmeExamples(t, "hlinfo")
	if len(ex) < 2 {
		t.Fatalf("README has %d hlinfo examples, want the table and the CSV", len(ex))
	}
	for _, e := range ex {
		if e.env["GAUDI_SIM"] != os.Getenv("GAUDI_SIM") {
			t.Errorf("README example %v runs with GAUDI_SIM=%q, the test with %q", e.args, e.env["GAUDI_SIM"], os.Getenv("GAUDI_SIM"))
			continue
		}
		got := mustRun(t, e.env["GAUDI_DEVICE"], e.args...)
		if d := cmp.Diff(e.out, got); d != "" {
			t.Errorf("README example hlinfo %s (-README +real):\n%s", strings.Join(e.args, " "), d)
		}
	}
}
