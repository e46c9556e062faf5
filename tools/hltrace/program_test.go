package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/uapi/hl"
)

// The launcher and command tests need programs for hltrace to start. This
// test binary is that program when programEnv names what it should do;
// runTestProgram, called from TestMain, does it and exits.

const (
	programEnv = "HLTRACE_TEST_PROGRAM" // what the program does
	reportEnv  = "HLTRACE_TEST_REPORT"  // a file it writes what it saw to
	depthEnv   = "HLTRACE_TEST_DEPTH"   // "tree": how many generations below it
	exitEnv    = "HLTRACE_TEST_EXIT"    // "exit": the status, or "signal:N"
)

// programOp is the INFO op the "tree" program at depth d issues: each
// generation's ioctl is told apart by it.
func programOp(depth int) uint32 { return 0xfe00 + uint32(depth) }

// programReport is what a test program writes to the report file.
type programReport struct {
	Args []string `json:"args"`
	Env  []string `json:"env"`
	PIDs []int    `json:"pids"` // "tree": its pid, then its descendants'
}

// runTestProgram runs the program programEnv asks for and exits, or
// returns when none is asked for. The programs:
//   - "exit": reports its args and environment, then exits with the
//     status exitEnv gives, or kills itself with signal N ("signal:N").
//   - "tree": issues INFO op programOp(depth) on /dev/null, then, while
//     depthEnv is above 0, starts itself one generation down, waits for
//     it, and reports the pids of the generations.
//   - "quiet": makes no traced call and exits 0.
//   - "wait": reports, then waits up to 60 s for SIGTERM or SIGINT, and
//     exits 0 when one came (so that the test can tell it from a kill).
func runTestProgram() {
	mode := os.Getenv(programEnv)
	if mode == "" {
		return
	}
	// report writes the report whole, by a rename: the tests poll for it,
	// and a reader between os.WriteFile's truncate and its write read an
	// empty report (TestIntegrationCommandSignals failed so once in CI:
	// "report .../report: unexpected end of JSON input").
	report := func(r programReport) {
		b, _ := json.Marshal(r)
		path := os.Getenv(reportEnv)
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "test program:", err)
			os.Exit(99)
		}
		if err := os.Rename(tmp, path); err != nil {
			fmt.Fprintln(os.Stderr, "test program:", err)
			os.Exit(99)
		}
	}
	switch mode {
	case "g3dma":
		runG3DMA()
	case "exit":
		report(programReport{Args: os.Args, Env: os.Environ()})
		v := os.Getenv(exitEnv)
		if sig, ok := strings.CutPrefix(v, "signal:"); ok {
			n, _ := strconv.Atoi(sig)
			signal.Reset(syscall.Signal(n))
			unix.Kill(os.Getpid(), syscall.Signal(n))
			time.Sleep(10 * time.Second)
			os.Exit(98)
		}
		code, _ := strconv.Atoi(v)
		os.Exit(code)
	case "tree":
		depth, _ := strconv.Atoi(os.Getenv(depthEnv))
		fd, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			os.Exit(97)
		}
		var a hl.InfoArgs
		a.Op = programOp(depth)
		rawIoctl(fd, hl.DRM_IOCTL_HL_INFO, ptr(&a), &a)
		pids := []int{os.Getpid()}
		if depth > 0 {
			sub := os.Getenv(reportEnv) + "." + strconv.Itoa(depth-1)
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), depthEnv+"="+strconv.Itoa(depth-1), reportEnv+"="+sub)
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			if err := cmd.Run(); err != nil {
				os.Exit(96)
			}
			var r programReport
			b, _ := os.ReadFile(sub)
			if json.Unmarshal(b, &r) != nil {
				os.Exit(95)
			}
			pids = append(pids, r.PIDs...)
		}
		report(programReport{Args: os.Args, PIDs: pids})
		os.Exit(0)
	case "quiet":
		os.Exit(0)
	case "wait":
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM, os.Interrupt)
		report(programReport{Args: os.Args, PIDs: []int{os.Getpid()}})
		select {
		case <-term:
			os.Exit(0)
		case <-time.After(60 * time.Second):
			os.Exit(94)
		}
	}
	fmt.Fprintln(os.Stderr, "test program: unknown mode", mode)
	os.Exit(93)
}
