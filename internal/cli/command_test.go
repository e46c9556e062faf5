package cli

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/internal/leakcheck"
	"github.com/gaudi-go/gaudi/simdevice"
)

// The simulated server is built once per process: two Gaudi2 here, with
// lock files of this test's own.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cli-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("GAUDI_SIM", "gaudi2:2")
	os.Setenv("GAUDI_SIM_LOCKDIR", dir)
	os.Unsetenv("GAUDI_DEVICE")
	// The simulated server is the process's; it is closed before the
	// leak check (internal/leakcheck).
	code := leakcheck.Run(m, leakcheck.AfterRun(func() {
		if s, err := simdevice.System(); err == nil {
			s.Close()
		}
	}))
	os.RemoveAll(dir)
	os.Exit(code)
}

func newTestCommand() (*Command, *bytes.Buffer, *bytes.Buffer) {
	c := New("tool", "tool [-device SEL] [-n N]", "Tool does things.")
	c.Flags.Int("n", 1, "how many")
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	return c, &out, &errOut
}

func TestHelp(t *testing.T) {
	for _, arg := range []string{"-h", "-help", "--help"} {
		c, out, errOut := newTestCommand()
		err := c.Parse([]string{arg})
		if !errors.Is(err, flag.ErrHelp) || ExitCode(err) != 0 {
			t.Errorf("%s: %v (exit %d), want flag.ErrHelp and 0", arg, err, ExitCode(err))
		}
		for _, want := range []string{"Usage:\n  tool [-device SEL] [-n N]\n", "Tool does things.", "-device", "-version", "-n int",
			"Environment:", "GAUDI_DEVICE", "GAUDI_ROOT", "hlsim serve", "GAUDI_SIM ", "gaudi3:4", "gaudi2:8:oot",
			"GAUDI_SIM_DRIVER", "GAUDI_SIM_LOCKDIR"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: help lacks %q:\n%s", arg, want, out.String())
			}
		}
		if errOut.Len() != 0 {
			t.Errorf("%s: wrote to stderr: %q", arg, errOut.String())
		}
	}
}

// TestHelpSections checks that the sections follow the environment, in
// order, their lines indented and their blank lines kept.
func TestHelpSections(t *testing.T) {
	c, out, _ := newTestCommand()
	c.Sections = []Section{
		{"Exit status", "0 when it worked,\n2 for a bad flag.\n"},
		{"Examples", "\ntool -n 2\n\ntool -device 1\n"},
	}
	if err := c.Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	want := "\nExit status:\n  0 when it worked,\n  2 for a bad flag.\n\nExamples:\n  tool -n 2\n\n  tool -device 1\n"
	if !strings.HasSuffix(out.String(), want) {
		t.Errorf("help ends\n%s\nwant it to end\n%s", out.String(), want)
	}
	if env, sec := strings.Index(out.String(), "Environment:"), strings.Index(out.String(), "Exit status:"); env < 0 || sec < env {
		t.Errorf("the sections do not follow the environment:\n%s", out.String())
	}
}

func TestVersionFlag(t *testing.T) {
	c, out, _ := newTestCommand()
	err := c.Parse([]string{"-version"})
	if !errors.Is(err, ErrVersion) || ExitCode(err) != 0 {
		t.Fatalf("-version: %v", err)
	}
	if !strings.HasPrefix(out.String(), "tool ") || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("-version printed %q", out.String())
	}
	c, out, _ = newTestCommand()
	c.VersionNote = "JSON schema 3"
	if err := c.Parse([]string{"-version"}); !errors.Is(err, ErrVersion) || !strings.HasSuffix(out.String(), " (JSON schema 3)\n") {
		t.Errorf("-version with a note: %v, %q", err, out.String())
	}
}

func TestVersionFrom(t *testing.T) {
	for _, tc := range []struct {
		info debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.0"}}, "v1.2.0 go1.26.0"},
		{debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-01-02T15:04:05Z"}, {Key: "vcs.modified", Value: "true"},
		}}, "(devel) rev 0123456789ab+dirty 2026-01-02T15:04:05Z go1.26.0"},
		{debug.BuildInfo{}, "(devel)"},
	} {
		if got := versionFrom(&tc.info); got != tc.want {
			t.Errorf("versionFrom = %q, want %q", got, tc.want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"-nope"}, {"-n", "x"}, {"-device", "sim:x"}, {"-device", "-1"}} {
		c, out, errOut := newTestCommand()
		err := c.Parse(args)
		if !errors.Is(err, ErrUsage) || ExitCode(err) != 2 {
			t.Errorf("%q: %v (exit %d), want ErrUsage and 2", args, err, ExitCode(err))
		}
		if out.Len() != 0 || !strings.Contains(errOut.String(), "tool: ") || !strings.Contains(errOut.String(), "run tool -h for usage") {
			t.Errorf("%q: stdout %q, stderr %q", args, out.String(), errOut.String())
		}
	}
	c, _, errOut := newTestCommand()
	err := c.UsageError("-json and -csv exclude each other")
	if !errors.Is(err, ErrUsage) || !strings.Contains(errOut.String(), "tool: -json and -csv exclude each other") {
		t.Errorf("UsageError: %v, %q", err, errOut.String())
	}
	if ExitCode(nil) != 0 || ExitCode(errors.New("x")) != 1 {
		t.Error("ExitCode of nil or a failure")
	}
}
