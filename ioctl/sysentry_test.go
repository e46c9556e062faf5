package ioctl_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/internal/hlsimtest"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// sysentryChild marks the child process of TestBlockedWaitLetsOthersRun.
const sysentryChild = "GAUDI_TEST_SYSENTRY_CHILD"

// watchdogAfter is when the child's watchdog continues the stopped server
// if nothing else did.
const watchdogAfter = 20 * time.Second

// TestBlockedWaitLetsOthersRun checks the system call entry of a blocking
// ioctl (issue 29 item 3, and the table in doc.go): while one goroutine is
// blocked in the kernel in a WAIT_CS, another must run, even with
// GOMAXPROCS=1. The ordinary entry (unix.Syscall) hands the P to another
// thread when the call blocks; the raw one (unix.RawSyscall) keeps it for
// as long as the call sleeps.
//
// The WAIT_CS blocks for real: the node is served by hlsim over FUSE and
// the server is stopped (SIGSTOP) before the call, so the kernel holds the
// ioctl until the server continues. The one goroutine that continues it is
// started just before the call and records whether it found the server
// still stopped; a watchdog process continues it after watchdogAfter in any
// case. With the ordinary entry the goroutine runs while the call is
// blocked; with the raw entry only after the watchdog, and the test fails.
//
// The check runs in a child process with GOMAXPROCS=1 and
// GODEBUG=asyncpreemptoff=1. The latter keeps the outcome independent of
// the runtime's preemption signal: a call that signal interrupted would
// return EINTR to Go, the library would issue it again, and the goroutine
// could run between the attempts even with the raw entry. (On this
// kernel the stopped server's request is not interrupted, and the raw
// entry fails the test without it too.)
func TestBlockedWaitLetsOthersRun(t *testing.T) {
	if os.Getenv(sysentryChild) == "" {
		hlsimtest.Skip(t)
		cmd := exec.Command(os.Args[0], "-test.run=^TestBlockedWaitLetsOthersRun$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), sysentryChild+"=1", "GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: TestBlockedWaitLetsOthersRun")) {
			t.Fatalf("child process (GOMAXPROCS=1): %v\n%s", err, out)
		}
		return
	}
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("child runs with GOMAXPROCS=%d, want 1", n)
	}
	s := hlsimtest.Serve(t, "gaudi2:1")
	d, err := ioctl.Open(s.Node(0, false)) // probes the encoding while the server runs
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })

	// The watchdog stops the server and continues it after watchdogAfter.
	// It is started before the server stops: starting a process closes
	// this process's descriptors that have close-on-exec set, and closing
	// a FUSE file waits for the server (FLUSH).
	watchdog := exec.Command("/bin/sh", "-c", `kill -STOP "$1" && sleep "$2" && kill -CONT "$1"`, "watchdog",
		fmt.Sprint(s.Pid), fmt.Sprint(int(watchdogAfter/time.Second)))
	if err := watchdog.Start(); err != nil {
		t.Fatal(err)
	}
	// Runs before the server's own cleanup (Stop), whatever happens here.
	t.Cleanup(func() {
		syscall.Kill(s.Pid, syscall.SIGCONT)
		watchdog.Process.Kill()
		watchdog.Wait()
	})
	waitProcState(t, s.Pid, 'T')

	// With one P, this goroutine runs only when the WAIT_CS below gives
	// the P up.
	found := make(chan byte, 1)
	go func() {
		st := procState(s.Pid)
		if st == 'T' {
			syscall.Kill(s.Pid, syscall.SIGCONT)
		}
		found <- st
	}()
	start := time.Now()
	var args hl.WaitCSArgs
	args.In().SetSeq(1) // never submitted: the driver answers EINVAL
	args.In().SetTimeoutUs(1_000_000)
	err = d.WaitCS(t.Context(), &args)
	took := time.Since(start)
	if !errors.Is(err, unix.EINVAL) {
		t.Errorf("WAIT_CS of a sequence never submitted: %v, want EINVAL (the server's answer)", err)
	}
	if st := <-found; st != 'T' {
		t.Fatalf("the goroutine that continues the stopped server ran only after the WAIT_CS returned (%v later, the server in state %q: the watchdog had continued it): the blocked call kept the only P", took.Round(time.Millisecond), st)
	}
}

// procState returns the state letter of process pid (R, S, T, ...) from
// /proc/PID/stat, or 0 if it cannot be read.
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// "pid (comm) S ...": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// waitProcState waits, for up to a minute, until process pid is in state
// st.
func waitProcState(t *testing.T, pid int, st byte) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for procState(pid) != st {
		if time.Now().After(deadline) {
			t.Fatalf("process %d not in state %c after a minute (%s)", pid, st, strings.TrimSpace(fmt.Sprint(procState(pid))))
		}
		time.Sleep(time.Millisecond)
	}
}
