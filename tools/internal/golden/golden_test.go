package golden

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// build builds the module's commands into a directory and returns it.
func build(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+"/", "../../hlinfo", "../../hlperf", "../../hltrace", "../../hlexporter", "../../hlsim", "../../../examples/alloc")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// result is what a command line gave: its status and the first line of
// its standard error.
type result struct {
	Code   int
	Stderr string
}

// exitCode is the status of a command that ran, given what Run returned.
func exitCode(t *testing.T, err error) int {
	t.Helper()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0
}

// TestRefusalsGolden runs each command with bad input: the same words for
// the same mistake in every command, and status 2 for every bad command
// line.
func TestRefusalsGolden(t *testing.T) {
	bin := build(t)
	for _, tc := range []struct {
		args []string
		want result
	}{
		{[]string{"hlinfo", "-device", "sim:7"}, result{1, "hlinfo: -device sim:7: no gaudi device: the simulator has 2 devices, sim:0 to sim:1 (GAUDI_SIM sets how many)"}},
		{[]string{"hlperf", "-device", "sim:7"}, result{1, "hlperf: -device sim:7: no gaudi device: the simulator has 2 devices, sim:0 to sim:1 (GAUDI_SIM sets how many)"}},
		{[]string{"hlinfo", "-device", "foo"}, result{2, `hlinfo: invalid value "foo" for flag -device: bad device selector "foo": want "", an index, a PCI address, module:N, an absolute device path or a chip name (gaudi, gaudi2, gaudi3), or sim or sim:N (simulated devices)`}},
		{[]string{"hlperf", "-device", "foo"}, result{2, `hlperf: invalid value "foo" for flag -device: bad device selector "foo": want "", an index, a PCI address, module:N, an absolute device path or a chip name (gaudi, gaudi2, gaudi3), or sim or sim:N (simulated devices)`}},
		{[]string{"hlperf", "-duration", "0s"}, result{2, "hlperf: -duration 0s: want a positive duration, such as 10s"}},
		{[]string{"hlperf", "-duration", "abc"}, result{2, `hlperf: invalid value "abc" for flag -duration: want a duration with a unit, such as 500us, 10ms, 2s or 1m`}},
		{[]string{"hlinfo", "-Q", ""}, result{2, `hlinfo: -query-device "": want comma-separated fields (-query-device help lists them)`}},
		{[]string{"hltrace", "-probe", "foo"}, result{2, `hltrace: -probe "foo": want auto, tracepoint, raw, kprobe or fentry`}},
		{[]string{"hltrace", "-slower", "abc"}, result{2, `hltrace: invalid value "abc" for flag -slower: want a duration with a unit, such as 500us, 10ms, 2s or 1m`}},
	} {
		var errb bytes.Buffer
		cmd := exec.Command(filepath.Join(bin, tc.args[0]), tc.args[1:]...)
		cmd.Env = append(os.Environ(), "GAUDI_SIM=gaudi2:2", "GAUDI_DEVICE=", "GAUDI_ROOT=", "GAUDI_SIM_LOCKDIR="+t.TempDir())
		cmd.Stderr = &errb
		got := result{Code: exitCode(t, cmd.Run())}
		got.Stderr, _, _ = strings.Cut(errb.String(), "\n")
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", strings.Join(tc.args, " "), diff)
		}
	}
}
