package main

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/internal/hlsimtest"
)

// TestServedErrorsNamed runs hlperf on nodes "hlsim serve" serves, as a
// program reaches a Gaudi, and makes the device fail: a WAIT_CS that
// times out (hlsim ctl fault ... ETIMEDOUT), a CS the device aborts (EIO),
// and the server killed during the run (the kernel aborts the FUSE
// connection). Each time the point cut short keeps its samples, the
// error is one line under the table with the errno's name beside its
// text, and the exit status is 1.
func TestServedErrorsNamed(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:2")
	t.Setenv("GAUDI_ROOT", s.Dir)
	ctl := func(args ...string) {
		t.Helper()
		out, err := exec.Command(hlsimtest.Binary(t), append([]string{"ctl", "-dir", s.Dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("hlsim ctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// The 10th WAIT_CS of a run: after the fill (1) and the 4 KiB point
	// (2 untimed, 3 timed copies), the second timed copy at 16 KiB.
	for _, tc := range []struct {
		errno, want string
	}{
		{"ETIMEDOUT", `ioctl WAIT_CS: ETIMEDOUT \(connection timed out\)`},
		// EIO with no reset behind it (the fault alone): the driver's
		// word for a reset it postponed, the CS held (dma's resetwait.go).
		{"EIO", `wait aborted for a device reset not done yet: device not operational \(ioctl WAIT_CS: EIO \(input/output error\)\)`},
	} {
		ctl("fault", "0", "WAIT_CS", "10", tc.errno)
		code, out, errOut := runHlperf(t, "-device", "0", "-dir", "h2d", "-min", "4K", "-max", "16K", "-iters", "3")
		if code != 1 {
			t.Errorf("%s: exit %d, want 1\nstderr:\n%s", tc.errno, code, errOut)
		}
		for _, re := range []string{
			`(?m)^ +h2d +4 KiB +3 +\d`,
			`(?m)^ +h2d +16 KiB +1\* +\d`,
			`(?m)^error: h2d 16 KiB: wait for CS \d+: ` + tc.want + `$`,
			`(?m)^N\* the point's samples before the error its device reports$`,
		} {
			if !regexp.MustCompile(re).MatchString(out) {
				t.Errorf("%s: the table does not match %s:\n%s", tc.errno, re, out)
			}
		}
	}

	cmd, stdout, stderr := startChild(t, "-device", "1", "-dir", "h2d", "-min", "4K", "-max", "4K", "-duration", "1h")
	s.Kill()
	if code := waitExit(t, cmd); code != 1 {
		t.Errorf("server killed: exit %d, want 1\nstderr:\n%s", code, stderr)
	}
	// A request under way when the connection ends answers ECONNABORTED;
	// one made after it, ENOTCONN.
	re := regexp.MustCompile(`(?m)^error: .*(ECONNABORTED \(software caused connection abort\)|ENOTCONN \(transport endpoint is not connected\))`)
	if !re.MatchString(stdout.String()) {
		t.Errorf("server killed: the table does not match %s:\n%s\nstderr:\n%s", re, stdout, stderr)
	}
}
