package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startChild runs hlperf's main in a child process (this test binary,
// see TestMain) and returns once it says which device it uses, that is
// when its run is about to start.
func startChild(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), childEnv+"=1", "GAUDI_SIM_LOCKDIR="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		said := false
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if !said && strings.Contains(sc.Text(), "hlperf: using") {
				said = true
				started <- true
			}
		}
		if !said {
			started <- false
		}
	}()
	select {
	case ok := <-started:
		if !ok {
			cmd.Wait()
			t.Fatalf("child ended before starting: %s", stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("child did not start in 30s")
	}
	return cmd, &stdout, &stderr
}

// waitExit waits for the child and returns its exit status.
func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("child did not exit within 30s of SIGINT")
	}
	return -1
}

// TestInterrupt sends SIGINT to a child running hlperf: it prints the
// results so far, marked interrupted, and exits 130.
func TestInterrupt(t *testing.T) {
	// Four points of 2s each: the signal lands in the first or second.
	cmd, stdout, stderr := startChild(t, "-json", "-device", "sim", "-dir", "h2d,d2h", "-min", "4K", "-max", "16K", "-duration", "2s", "-warmup", "0")
	time.Sleep(700 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code := waitExit(t, cmd)
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("exit %v after SIGINT", el)
	}
	if code != 130 {
		t.Errorf("exit status %d, want 130\nstderr:\n%s", code, stderr)
	}
	var rep report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not a report: %v\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if !rep.Interrupted || len(rep.Results) == 0 || len(rep.Results) >= 4 {
		t.Fatalf("interrupted %v, %d results (want 1 to 3)", rep.Interrupted, len(rep.Results))
	}
	last := rep.Results[len(rep.Results)-1]
	if !last.Partial || last.Samples == 0 || last.Direction != "h2d" || last.BandwidthMedianGBps <= 0 {
		t.Errorf("last result %+v: want a partial h2d point with samples", last)
	}
	for _, r := range rep.Results[:len(rep.Results)-1] {
		if r.Partial {
			t.Errorf("earlier point partial: %+v", r)
		}
	}
}

// TestInterruptTable: the table says it was interrupted and marks the
// partial point.
func TestInterruptTable(t *testing.T) {
	cmd, stdout, stderr := startChild(t, "-device", "sim", "-dir", "d2h", "-min", "4K", "-max", "4K", "-duration", "1m")
	time.Sleep(500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd); code != 130 {
		t.Errorf("exit status %d, want 130\nstderr:\n%s", code, stderr)
	}
	out := stdout.String()
	for _, want := range []string{"INTERRUPTED: the results so far", "SIMULATED", "d2h  4 KiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "* ") {
		t.Errorf("no point marked partial:\n%s", out)
	}
}
