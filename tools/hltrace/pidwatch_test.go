package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The -duration of these tests is long enough that a -p trace that does
// not stop by itself fails them on its output (an exit after the whole
// duration says nothing of the process) rather than by a test timeout.
const pidTestDuration = "90s"

// TestPIDNoSuchProcess: -p with a pid that names no process fails at once
// with the errno's name, instead of tracing for the whole duration and then
// blaming the simulator.
func TestPIDNoSuchProcess(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	pidMax, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// Pids are below pid_max: pid_max itself never names a process.
	code, _, stderr := runHltrace(t, "-p", strconv.Itoa(pidMax), "-duration", pidTestDuration)
	want := "-p " + strconv.Itoa(pidMax) + ": no such process (ESRCH)"
	if code != exitFailed || !strings.Contains(stderr, want) || strings.Contains(stderr, "simulator") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q, no word about the simulator", code, stderr, exitFailed, want)
	}
}

// TestPIDExited: the trace of -p ends when the process exits (here one
// that has exited before the trace starts, a zombie its pidfd still
// names), and says so, instead of running for the whole -duration.
func TestPIDExited(t *testing.T) {
	requireRoot(t)
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Not reaped yet: the pid still names the (exited) process.
	pid := strconv.Itoa(cmd.Process.Pid)
	code, _, stderr := runHltrace(t, "-p", pid, "-duration", pidTestDuration)
	if want := "process " + pid + " exited; stopped tracing"; code != 0 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 0 and %q", code, stderr, want)
	}
}
