package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The README's hltrace section shows two runs. TestIntegrationREADME
// reruns the first (with the demo built beforehand rather than by go run)
// and compares its calls and the demo's output with the README's, and
// checks the second's note against what hltrace writes for it.

const (
	readmeDemo     = "$ go run ./tools/hltrace -asic gaudi2 -- go run ./tools/hltrace/internal/ioctldemo"
	readmeSim      = "$ go run ./tools/hltrace -- go run ./examples/dma"
	readmeSelector = "$ GAUDI_DEVICE=sim go run ./tools/hltrace -- go run ./examples/dma"
)

// fencedBlock returns the lines of the README's fenced block that starts
// with the line first, without it.
func fencedBlock(t *testing.T, readme, first string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "```\n"+first+"\n")
	if !ok {
		t.Fatalf("README.md has no block starting with %q", first)
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("README.md: the block starting with %q does not end", first)
	}
	return strings.Split(strings.TrimSuffix(block, "\n"), "\n")
}

var (
	callLine = regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{6}\s+\d+\s+\d+\s+`)
	varying  = []struct {
		re   *regexp.Regexp
		with string
	}{
		{callLine, "TIME PID TID "},
		{regexp.MustCompile(`buf=0x[0-9a-f]+`), "buf=ADDR"},
		{regexp.MustCompile(`\(\d+\.\d+(µs|ms)\)$`), "(DURATION)"},
		{regexp.MustCompile(`pid \d+`), "pid N"},
	}
)

// normalized returns the lines that match keep, with what varies from
// run to run replaced.
func normalized(lines []string, keep func(string) bool) []string {
	var out []string
	for _, l := range lines {
		if !keep(l) {
			continue
		}
		for _, v := range varying {
			l = v.re.ReplaceAllString(l, v.with)
		}
		out = append(out, l)
	}
	return out
}

func goTool(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"go", "/usr/local/go/bin/go"} {
		if p, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	t.Fatal("no go command (in PATH or /usr/local/go/bin) to build the README's demo")
	return ""
}

func TestIntegrationREADME(t *testing.T) {
	requireRoot(t)
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)

	demo := filepath.Join(t.TempDir(), "ioctldemo")
	build := exec.Command(goTool(t), "build", "-o", demo, "./internal/ioctldemo")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	code, stdout, stderr := runHltrace(t, "-asic", "gaudi2", "--", demo)
	if code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
	}
	block := fencedBlock(t, readme, readmeDemo)
	isCall := callLine.MatchString
	want, got := normalized(block, isCall), normalized(strings.Split(stderr, "\n"), isCall)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("the README shows the calls\n%s\nhltrace prints\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
	isDemo := func(l string) bool { return strings.HasPrefix(l, "ioctldemo") }
	want, got = normalized(block, isDemo), normalized(strings.Split(stdout, "\n"), isDemo)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("the README shows the demo's output\n%s\nthe demo prints\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}

	// The simulator run: the note, for "go" as the command, as words
	// (the wrapping depends on the pid's digits).
	var note bytes.Buffer
	p := newPrinter(&bytes.Buffer{}, outputOptions{}, nil)
	writeNothingSeen(&note, p, Counters{}, "go (pid 1) or the processes it started")
	wantNote := noteWords(strings.Split(note.String(), "\n"))
	gotNote := noteWords(fencedBlock(t, readme, readmeSim))
	if wantNote == "" || !strings.Contains(gotNote, wantNote) {
		t.Errorf("the README's simulator run says\n%s\nhltrace writes\n%s", gotNote, wantNote)
	}
}

// noteWords returns the words of hltrace's lines from "saw no" to the
// command's exit, pids replaced.
func noteWords(lines []string) string {
	var words []string
	in := false
	for _, l := range lines {
		l, ok := strings.CutPrefix(l, "hltrace:")
		if !ok {
			continue
		}
		in = in || strings.Contains(l, "saw no")
		if !in || strings.Contains(l, "exited with status") {
			continue
		}
		words = append(words, strings.Fields(varying[3].re.ReplaceAllString(l, "pid N"))...)
	}
	return strings.Join(words, " ")
}

// TestREADMESimulatorSelector reruns the README's run with
// GAUDI_DEVICE=sim, which fails before anything is loaded (so it needs no
// root): hltrace's lines and its exit status, as go run reports it, are
// the README's.
func TestREADMESimulatorSelector(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := fencedBlock(t, string(b), readmeSelector)
	t.Setenv("GAUDI_DEVICE", "sim")
	code, stdout, stderr := runHltrace(t, "--", goTool(t), "run", "./examples/dma")
	isOurs := func(l string) bool { return strings.HasPrefix(l, "hltrace:") }
	want, got := normalized(block, isOurs), normalized(strings.Split(stderr, "\n"), isOurs)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("the README shows\n%s\nhltrace prints\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
	if line := fmt.Sprintf("exit status %d", code); !slices.Contains(block, line) || code != exitTraceFailed {
		t.Errorf("hltrace exited %d (want %d); the README shows\n%s", code, exitTraceFailed, strings.Join(block, "\n"))
	}
	if stdout != "" {
		t.Errorf("stdout: %q", stdout)
	}
}
