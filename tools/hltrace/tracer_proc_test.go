package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// tracerProcess is hltrace running as a child process.
type tracerProcess struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
}

// startTracer starts this test binary as hltrace with args and waits, for
// a minute at most, until its probes are attached. The test's cleanup
// kills it if it is still running.
func startTracer(tb testing.TB, args ...string) *tracerProcess {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	p := &tracerProcess{cmd: exec.Command(exe, args...)}
	p.cmd.Env = append(os.Environ(), "HLTRACE_TEST_MAIN=1")
	p.cmd.Stdout = &p.stdout
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.cmd.Process.Kill() })
	banner := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var all []string
		for sc.Scan() {
			all = append(all, sc.Text())
			if strings.Contains(sc.Text(), "Ctrl-C to stop") {
				banner <- all
				for sc.Scan() { // keep draining
				}
				return
			}
		}
		banner <- all
	}()
	select {
	case lines := <-banner:
		if len(lines) == 0 || !strings.Contains(lines[len(lines)-1], "Ctrl-C to stop") {
			p.cmd.Wait()
			tb.Fatalf("hltrace exited before attaching:\n%s", strings.Join(lines, "\n"))
		}
	case <-time.After(time.Minute):
		tb.Fatal("hltrace did not attach within a minute")
	}
	return p
}

// interrupt stops hltrace as Ctrl-C does and returns what it printed on
// stdout; it fails the test when hltrace does not exit cleanly.
func (p *tracerProcess) interrupt(tb testing.TB) string {
	tb.Helper()
	p.cmd.Process.Signal(os.Interrupt)
	if err := p.cmd.Wait(); err != nil {
		tb.Fatalf("hltrace: %v\n%s", err, p.stdout.String())
	}
	return p.stdout.String()
}
