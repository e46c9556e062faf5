package golden

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// startHolder starts hlperf on sim:0 for a long run and returns once it
// holds the device, with the environment the other commands share.
func startHolder(t *testing.T, bin string) (*exec.Cmd, []string) {
	t.Helper()
	env := append(os.Environ(), "GAUDI_SIM=gaudi2:2", "GAUDI_DEVICE=", "GAUDI_ROOT=", "GAUDI_SIM_LOCKDIR="+t.TempDir())
	holder := exec.Command(filepath.Join(bin, "hlperf"), "-device", "sim:0", "-dir", "h2d", "-max", "4K", "-duration", "1h")
	holder.Env = env
	pipe, err := holder.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	line, err := bufio.NewReader(pipe).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "hlperf: using") {
		t.Fatalf("the holder did not start: %q, %v", line, err)
	}
	go func() { bufio.NewReader(pipe).WriteTo(new(bytes.Buffer)) }()
	return holder, env
}

// TestBusyNamesHolderGolden: a command refused a device another process
// owns (EBUSY) names that process, by pid and command, as hlinfo lists
// it; hlperf -all skips it with the same words.
func TestBusyNamesHolderGolden(t *testing.T) {
	bin := build(t)
	holder, env := startHolder(t, bin)
	pid := strconv.Itoa(holder.Process.Pid)
	for _, tc := range []struct {
		args []string
		want result
	}{
		{[]string{"hlperf", "-device", "sim:0", "-max", "4K", "-iters", "1"},
			result{1, "hlperf: -device sim:0: open sim:accel0: EBUSY (device or resource busy): held by pid PID (hlperf)"}},
		{[]string{"hlperf", "-all", "-device", "sim", "-dir", "h2d", "-max", "4K", "-iters", "1"},
			result{0, "hlperf: -all: skipping sim:accel0: open sim:accel0: EBUSY (device or resource busy): held by pid PID (hlperf)"}},
	} {
		var errb bytes.Buffer
		cmd := exec.Command(filepath.Join(bin, tc.args[0]), tc.args[1:]...)
		cmd.Env = env
		cmd.Stderr = &errb
		got := result{Code: exitCode(t, cmd.Run())}
		got.Stderr, _, _ = strings.Cut(strings.ReplaceAll(errb.String(), "pid "+pid+" ", "pid PID "), "\n")
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s\nstderr:\n%s", strings.Join(tc.args, " "), diff, errb.String())
		}
	}
}
