package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/hlsimtest"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// outcome is what a command line gave: its exit status, the first line
// of its standard error and of its standard output.
type outcome struct {
	Code   int
	Stderr string
	Stdout string
}

// runHlsim runs the hlsim binary with args.
func runHlsim(t *testing.T, args ...string) outcome {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(hlsimtest.Binary(t), args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	code := 0
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	first := func(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }
	return outcome{Code: code, Stderr: first(errb.String()), Stdout: first(out.String())}
}

// TestCommandLineGolden is hlsim's command line against the rules every
// command of the module keeps: -h and -version exit 0 on each command and
// subcommand, a bad command line exits 2 with one line that says why.
func TestCommandLineGolden(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want outcome
	}{
		{[]string{"-version"}, outcome{0, "", "hlsim " + "VERSION"}},
		{[]string{"-h"}, outcome{0, "", "usage: hlsim serve -dir DIR [-sim gaudi2:8] [-force] [-v]"}},
		{[]string{"bogus"}, outcome{2, `hlsim: unknown command "bogus" (want serve, run or ctl)`, ""}},
		{[]string{"ctl", "-h"}, outcome{0, "", "Usage:"}},
		{[]string{"ctl", "-version"}, outcome{0, "", "hlsim ctl VERSION"}},
		{[]string{"ctl"}, outcome{2, "hlsim ctl: -dir DIR is required", ""}},
		{[]string{"ctl", "-dir", "/nonexistent"}, outcome{2, "hlsim ctl: no command", ""}},
		{[]string{"ctl", "-bogus"}, outcome{2, "hlsim ctl: flag provided but not defined: -bogus", ""}},
		{[]string{"serve", "-h"}, outcome{0, "", "Usage:"}},
		{[]string{"serve", "-version"}, outcome{0, "", "hlsim serve VERSION"}},
		{[]string{"serve"}, outcome{2, "hlsim serve: -dir DIR is required, and nothing else", ""}},
		{[]string{"run", "-h"}, outcome{0, "", "Usage:"}},
		{[]string{"run", "-version"}, outcome{0, "", "hlsim run VERSION"}},
		{[]string{"run"}, outcome{2, "hlsim run: no command to run", ""}},
	} {
		got := runHlsim(t, tc.args...)
		// The version depends on the build: only its place is checked.
		if strings.HasSuffix(tc.want.Stdout, " VERSION") {
			prefix := strings.TrimSuffix(tc.want.Stdout, "VERSION")
			if strings.HasPrefix(got.Stdout, prefix) && len(got.Stdout) > len(prefix) {
				got.Stdout = prefix + "VERSION"
			}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("hlsim %s (-want +got):\n%s", strings.Join(tc.args, " "), diff)
		}
	}
}

// TestCtlGolden is hlsim ctl against a server: the server's reply (a
// state, the armed faults) on standard output, and a refusal's reason on
// the client's standard error with exit status 2, not only in the
// server's log.
func TestCtlGolden(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:1")
	for _, tc := range []struct {
		args []string
		want outcome
	}{
		{[]string{"state", "0"}, outcome{0, "", "operational"}},
		{[]string{"state", "0", "needs-reset"}, outcome{0, "", ""}},
		{[]string{"state", "0"}, outcome{0, "", "needs reset"}},
		{[]string{"state", "0", "operational"}, outcome{0, "", ""}},
		{[]string{"state", "0", "broken"}, outcome{2, `hlsim ctl: the server refused "state 0 broken": unknown state "broken" (want operational, in-reset, disabled or needs-reset): bad command`, ""}},
		{[]string{"fault", "0", "MEMORY:ALLOC", "ENOMEM"}, outcome{0, "", ""}},
		{[]string{"fault", "0", "memory:hl_mem_op_free", "3", "EIO"}, outcome{0, "", ""}},
		{[]string{"fault", "0", "MEMORY:ALOC", "EIO"}, outcome{2, `hlsim ctl: the server refused "fault 0 MEMORY:ALOC EIO": bad op "ALOC" for MEMORY (want a number or one of ALLOC, FREE, MAP, UNMAP, MAP_BLOCK, EXPORT_DMABUF_FD, TS_ALLOC): bad command`, ""}},
		{[]string{"fault", "0", "XX", "EIO"}, outcome{2, `hlsim ctl: the server refused "fault 0 XX EIO": unknown kind "XX" (want one of INFO, CB, CS, WAIT_CS, MEMORY, DEBUG, NIC, OPEN, OPEN_CONTROL): bad command`, ""}},
		{[]string{"fault", "0", "INFO", "EWHAT"}, outcome{2, `hlsim ctl: the server refused "fault 0 INFO EWHAT": unknown errno "EWHAT" (want a name such as EIO, or a number): bad command`, ""}},
		{[]string{"faults", "0"}, outcome{0, "", "MEMORY:ALLOC 1 ENOMEM"}},
		{[]string{"clear", "0"}, outcome{0, "", "disarmed 2"}},
		{[]string{"faults", "0"}, outcome{0, "", ""}},
		{[]string{"reset", "7"}, outcome{2, `hlsim ctl: the server refused "reset 7": no device "7" (the server has 1 device): bad command`, ""}},
		{[]string{"explode", "0"}, outcome{2, `hlsim ctl: the server refused "explode 0": unknown command or wrong number of arguments "explode 0": bad command`, ""}},
	} {
		got := runHlsim(t, append([]string{"ctl", "-dir", s.Dir}, tc.args...)...)
		if strings.Join(tc.args, " ") == "fault 0 XX EIO" && !strings.Contains(readme(t), "\n    "+tc.want.Stderr+"\n") {
			t.Errorf("README.md does not show hlsim ctl's refusal as it is: %q", tc.want.Stderr)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("hlsim ctl %s (-want +got):\n%s", strings.Join(tc.args, " "), diff)
		}
	}
}

// readme is the repository's README.md.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCtlFaultByName arms a fault by op name and sees it fire on that op
// alone: MEMORY:ALLOC must not fail a FREE.
func TestCtlFaultByName(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:1")
	d, err := device.Open(s.Node(0, false))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got := runHlsim(t, "ctl", "-dir", s.Dir, "fault", "0", "INFO:DRAM_USAGE", "EIO"); got.Code != 0 {
		t.Fatalf("ctl fault: %+v", got)
	}
	if _, err := d.Status(); err != nil {
		t.Fatalf("DEVICE_STATUS with a fault armed for DRAM_USAGE: %v", err)
	}
	if _, err := d.DRAMUsage(); !errors.Is(err, unix.EIO) {
		t.Fatalf("DRAM_USAGE after the injected fault: %v, want EIO", err)
	}
	if got := runHlsim(t, "ctl", "-dir", s.Dir, "faults", "0"); got != (outcome{}) {
		t.Errorf("armed faults after it fired: %+v, want none", got)
	}
}
