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

	"github.com/gaudi-go/gaudi/internal/hlsimtest"
)

// startHolder starts hlperf on device sel for a long run, in env, and
// returns once it holds the device.
func startHolder(t *testing.T, bin string, env []string, sel string) *exec.Cmd {
	t.Helper()
	holder := exec.Command(filepath.Join(bin, "hlperf"), "-device", sel, "-dir", "h2d", "-max", "4K", "-duration", "1h")
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
	return holder
}

// busyCase is a command line, with variables added to the shared
// environment, and what it gives, "PID" standing for the holder's pid.
type busyCase struct {
	env  []string
	args []string
	want result
}

// checkBusy runs each case in env and compares its status and first
// line of stderr.
func checkBusy(t *testing.T, bin string, env []string, holder *exec.Cmd, cases []busyCase) {
	t.Helper()
	pid := strconv.Itoa(holder.Process.Pid)
	for _, tc := range cases {
		var errb bytes.Buffer
		cmd := exec.Command(filepath.Join(bin, tc.args[0]), tc.args[1:]...)
		cmd.Env = append(env[:len(env):len(env)], tc.env...)
		cmd.Stderr = &errb
		got := result{Code: exitCode(t, cmd.Run())}
		got.Stderr, _, _ = strings.Cut(strings.ReplaceAll(errb.String(), "pid "+pid+" ", "pid PID "), "\n")
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s\nstderr:\n%s", strings.Join(tc.args, " "), diff, errb.String())
		}
	}
}

// TestBusyNamesHolderGolden: a command refused a device another process
// owns (EBUSY) names that process, by pid and command, as hlinfo lists
// it; hlperf -all skips it with the same words.
func TestBusyNamesHolderGolden(t *testing.T) {
	bin := build(t)
	env := append(os.Environ(), "GAUDI_SIM=gaudi2:2", "GAUDI_DEVICE=", "GAUDI_ROOT=", "GAUDI_SIM_LOCKDIR="+t.TempDir())
	holder := startHolder(t, bin, env, "sim:0")
	checkBusy(t, bin, env, holder, []busyCase{
		{nil, []string{"hlperf", "-device", "sim:0", "-max", "4K", "-iters", "1"},
			result{1, "hlperf: -device sim:0: open sim:accel0: EBUSY (device or resource busy): held by pid PID (hlperf)"}},
		{nil, []string{"hlperf", "-all", "-device", "sim", "-dir", "h2d", "-max", "4K", "-iters", "1"},
			result{0, "hlperf: -all: skipping sim:accel0: open sim:accel0: EBUSY (device or resource busy): held by pid PID (hlperf)"}},
		{nil, []string{"alloc", "-device", "sim:0"},
			result{1, "alloc: -device sim:0: open sim:accel0: EBUSY (device or resource busy): held by pid PID (hlperf)"}},
		// A simulator of one device, the one held (the same lock file).
		{[]string{"GAUDI_SIM=gaudi2:1"}, []string{"hlperf", "-max", "4K", "-iters", "1"},
			result{1, "hlperf: open sim: every simulated device is in use: no gaudi device (sim:accel0 held by pid PID (hlperf))"}},
		{[]string{"GAUDI_SIM=gaudi2:1"}, []string{"hlperf", "-device", "sim", "-max", "4K", "-iters", "1"},
			result{1, "hlperf: -device sim: open sim: every simulated device is in use: no gaudi device (sim:accel0 held by pid PID (hlperf))"}},
		{[]string{"GAUDI_SIM=gaudi2:1"}, []string{"hlperf", "-all", "-max", "4K", "-iters", "1"},
			result{1, "hlperf: -all: skipping sim:accel0: open sim:accel0: EBUSY (device or resource busy): held by pid PID (hlperf)"}},
	})
}

// TestBusyServedNamesHolderGolden is TestBusyNamesHolderGolden on nodes
// hlsim serves: the holder is found by the served file's identity.
func TestBusyServedNamesHolderGolden(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:2")
	bin := build(t)
	env := append(s.Env(), "GAUDI_DEVICE=")
	holder := startHolder(t, bin, env, "0")
	node := s.Node(0, false)
	checkBusy(t, bin, env, holder, []busyCase{
		{nil, []string{"hlperf", "-device", "0", "-max", "4K", "-iters", "1"},
			result{1, "hlperf: -device 0: open " + node + ": EBUSY (device or resource busy): held by pid PID (hlperf)"}},
		{nil, []string{"hlperf", "-all", "-dir", "h2d", "-max", "4K", "-iters", "1"},
			result{0, "hlperf: -all: skipping /dev/accel/accel0: open " + node + ": EBUSY (device or resource busy): held by pid PID (hlperf)"}},
		{nil, []string{"alloc", "-device", "0"},
			result{1, "alloc: -device 0: open " + node + ": EBUSY (device or resource busy): held by pid PID (hlperf)"}},
	})
}
