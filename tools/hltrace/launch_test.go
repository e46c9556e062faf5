package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/uapi/hl"
)

// testExe is this test binary, the program the command tests start.
func testExe(tb testing.TB) string {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	return exe
}

// readReport reads what a test program reported, or returns false when
// it wrote nothing.
func readReport(tb testing.TB, path string) (programReport, bool) {
	tb.Helper()
	var r programReport
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return r, false
	}
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		tb.Fatalf("report %s: %v: %s", path, err, b)
	}
	return r, true
}

// TestLauncher starts test programs through the launcher, without a
// tracer: the command runs with the arguments and environment it was
// given (less the launcher's variable), only once released, and its
// status comes back as a shell reports it.
func TestLauncher(t *testing.T) {
	exe := testExe(t)
	args := []string{"plain", "two words", "", "-x", "--", "ünï"}
	for _, tc := range []struct {
		exit string
		want int
	}{
		{"0", 0},
		{"3", 3},
		{"signal:9", 128 + 9},
		{"signal:15", 128 + 15},
	} {
		t.Run(tc.exit, func(t *testing.T) {
			report := filepath.Join(t.TempDir(), "report")
			t.Setenv(programEnv, "exit")
			t.Setenv(reportEnv, report)
			t.Setenv(exitEnv, tc.exit)
			t.Setenv("HLTRACE_TEST_MARK", "kept")
			argv := append([]string{"argv0-as-given"}, args...)
			c, err := startCommand(argv, exe, nil, nil, os.Stdout, os.Stderr)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
			if _, ok := readReport(t, report); ok {
				t.Fatal("the command ran before it was released")
			}
			if err := c.run(); err != nil {
				t.Fatal(err)
			}
			<-c.done
			if got := exitStatus(c.state); got != tc.want {
				t.Errorf("exit status %d (%s), want %d", got, describeExit(c.state), tc.want)
			}
			r, ok := readReport(t, report)
			if !ok {
				t.Fatal("the command did not run")
			}
			if !slices.Equal(r.Args, argv) {
				t.Errorf("args %q, want %q", r.Args, argv)
			}
			if !slices.Contains(r.Env, "HLTRACE_TEST_MARK=kept") {
				t.Errorf("the environment lacks HLTRACE_TEST_MARK=kept: %q", r.Env)
			}
			for _, kv := range r.Env {
				if strings.HasPrefix(kv, launchEnv+"=") {
					t.Errorf("the launcher's variable reached the command: %s", kv)
				}
			}
		})
	}

	t.Run("aborted", func(t *testing.T) {
		report := filepath.Join(t.TempDir(), "report")
		t.Setenv(programEnv, "exit")
		t.Setenv(reportEnv, report)
		t.Setenv(exitEnv, "0")
		c, err := startCommand([]string{exe}, exe, nil, nil, os.Stdout, os.Stderr)
		if err != nil {
			t.Fatal(err)
		}
		c.abort()
		if got := exitStatus(c.state); got != exitTraceFailed {
			t.Errorf("aborted launcher exited %d, want %d", got, exitTraceFailed)
		}
		if _, ok := readReport(t, report); ok {
			t.Error("the command ran although the launch was aborted")
		}
	})

	t.Run("exec fails", func(t *testing.T) {
		notExec := filepath.Join(t.TempDir(), "data")
		if err := os.WriteFile(notExec, []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		c, err := startCommand([]string{"data"}, notExec, nil, nil, os.Stdout, &stderr)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.run(); err != nil {
			t.Fatal(err)
		}
		<-c.done
		if got := exitStatus(c.state); got != exitNotRunnable {
			t.Errorf("exec of a data file: status %d, want %d; stderr %q", got, exitNotRunnable, stderr.String())
		}
		if !strings.Contains(stderr.String(), "permission denied") {
			t.Errorf("stderr %q does not say why", stderr.String())
		}
	})
}

func TestFindCommand(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.WriteFile(data, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		code int
	}{
		{"sh", 0},
		{"/bin/sh", 0},
		{"hltrace-test-no-such-command", exitNotFound},
		{filepath.Join(dir, "missing"), exitNotFound},
		{data, exitNotRunnable},
		{dir, exitNotRunnable},
	} {
		path, code, err := findCommand(tc.name)
		if code != tc.code || (code == 0) != (err == nil) || (code == 0 && path == "") {
			t.Errorf("findCommand(%q) = %q, %d, %v; want status %d", tc.name, path, code, err, tc.code)
		}
	}
}

// runHltrace runs hltrace in this process with args, the command's and
// the trace's output going to files, and returns the exit status, the
// command's stdout and hltrace's stderr.
func runHltrace(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	dir := t.TempDir()
	stdout, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	code := hltrace(args, nil, stdout, stderr)
	out, _ := os.ReadFile(stdout.Name())
	errOut, _ := os.ReadFile(stderr.Name())
	return code, string(out), string(errOut)
}

// jsonCalls reads the "call" lines of a JSON trace.
func jsonCalls(t *testing.T, path string) []jsonCall {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var calls []jsonCall
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var c jsonCall
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%v: %s", err, sc.Bytes())
		}
		if c.Type == "call" {
			calls = append(calls, c)
		}
	}
	return calls
}

// TestIntegrationCommandTree traces a command that starts a child that
// starts a grandchild, each issuing one INFO, while this process issues
// its own: the trace holds the three generations' calls, with their
// pids, and none of this process's.
func TestIntegrationCommandTree(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	report, trace := filepath.Join(dir, "report"), filepath.Join(dir, "trace.jsonl")
	t.Setenv(programEnv, "tree")
	t.Setenv(depthEnv, "2")
	t.Setenv(reportEnv, report)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // this process is the command's parent, not one it starts
		defer wg.Done()
		fd := openNull(t)
		for {
			select {
			case <-stop:
				return
			default:
			}
			issueMarker(t, fd)
			time.Sleep(time.Millisecond)
		}
	}()
	code, _, stderr := runHltrace(t, "-json", "-o", trace, "--", testExe(t))
	close(stop)
	wg.Wait()
	if code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
	}
	r, ok := readReport(t, report)
	if !ok || len(r.PIDs) != 3 {
		t.Fatalf("the program reported %+v; stderr:\n%s", r, stderr)
	}
	if want := fmt.Sprintf("tracing %s (pid %d)", testExe(t), r.PIDs[0]); !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	calls := jsonCalls(t, trace)
	for depth := 2; depth >= 0; depth-- {
		pid := uint32(r.PIDs[2-depth])
		op := fmt.Sprintf("OP_%d", programOp(depth))
		found := slices.ContainsFunc(calls, func(c jsonCall) bool { return c.Call == "INFO" && c.Op == op && c.PID == pid })
		if !found {
			t.Errorf("no INFO %s from pid %d (depth %d) in the trace: %+v", op, pid, depth, calls)
		}
	}
	for _, c := range calls {
		if !slices.Contains(r.PIDs, int(c.PID)) {
			t.Errorf("a call from pid %d, not the command's tree %v: %+v", c.PID, r.PIDs, c)
		}
	}
	if strings.Contains(stderr, "saw no") {
		t.Errorf("stderr says nothing was seen:\n%s", stderr)
	}
}

// TestIntegrationCommandStatus checks that hltrace exits with the
// command's status, 128+N for a signal, and says when it saw nothing.
func TestIntegrationCommandStatus(t *testing.T) {
	requireRoot(t)
	for _, tc := range []struct {
		exit string
		want int
		says string
	}{
		{"0", 0, "exited with status 0"},
		{"7", 7, "exited with status 7"},
		{"signal:9", 137, "was killed by signal 9 (SIGKILL)"},
		{"signal:1", 129, "was killed by signal 1 (SIGHUP)"},
	} {
		t.Run(tc.exit, func(t *testing.T) {
			t.Setenv(programEnv, "exit")
			t.Setenv(reportEnv, filepath.Join(t.TempDir(), "report"))
			t.Setenv(exitEnv, tc.exit)
			code, _, stderr := runHltrace(t, "-no-funcs", "-summary", "--", testExe(t), "x")
			if code != tc.want {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, tc.want, stderr)
			}
			words := wordsOf(stderr)
			for _, want := range []string{tc.says, "saw no Gaudi, RDMA or dma-buf ioctl", "in-process simulator", "GAUDI_DEVICE=sim"} {
				if !strings.Contains(words, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if strings.Contains(stderr, "0 events") {
				t.Errorf("stderr prints an empty summary:\n%s", stderr)
			}
		})
	}
	t.Run("left running", func(t *testing.T) {
		code, _, stderr := runHltrace(t, "-no-funcs", "--", "sh", "-c", "sleep 3 & echo $! >&2")
		var pid int
		fmt.Sscanf(strings.SplitN(stderr[strings.Index(stderr, "starts\n")+len("starts\n"):], "\n", 2)[0], "%d", &pid)
		want := fmt.Sprintf("a process sh started is still running, no longer traced: pid %d\n", pid)
		if code != 0 || pid == 0 || !strings.Contains(stderr, want) {
			t.Errorf("exit status %d; stderr lacks %q:\n%s", code, want, stderr)
		}
		if pid != 0 {
			unix.Kill(pid, unix.SIGKILL)
		}
	})
	t.Run("not found", func(t *testing.T) {
		code, _, stderr := runHltrace(t, "--", "hltrace-test-no-such-command")
		if code != exitNotFound || !strings.Contains(stderr, "command not found") {
			t.Errorf("exit status %d, want %d; stderr:\n%s", code, exitNotFound, stderr)
		}
	})
}

// TestIntegrationNothingSeen traces this process for a moment without a
// command: no call, and hltrace says so rather than "0 events".
func TestIntegrationNothingSeen(t *testing.T) {
	requireRoot(t)
	code, stdout, stderr := runHltrace(t, "-no-funcs", "-summary", "-p", strconv.Itoa(os.Getpid()), "-duration", "300ms")
	if code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
	}
	want := fmt.Sprintf("saw no Gaudi, RDMA or dma-buf ioctl from pid %d in 300ms", os.Getpid())
	if words := wordsOf(stderr); !strings.Contains(words, want) || !strings.Contains(words, "in-process simulator") {
		t.Errorf("stderr lacks %q and the simulator note:\n%s", want, stderr)
	}
	if strings.Contains(stdout, "0 events") {
		t.Errorf("stdout prints an empty summary:\n%s", stdout)
	}
}

// TestIntegrationCommandOutput checks -o and -errors with a command: the
// trace goes to the file, filtered; the command's stdout stays its own.
func TestIntegrationCommandOutput(t *testing.T) {
	requireRoot(t)
	t.Setenv(programEnv, "tree")
	t.Setenv(depthEnv, "0")
	for _, tc := range []struct {
		flags []string
		want  []string // calls in the file
	}{
		{nil, []string{"openat", "INFO"}},
		{[]string{"-errors"}, []string{"INFO"}},
	} {
		t.Run(strings.Join(append([]string{"flags"}, tc.flags...), " "), func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv(reportEnv, filepath.Join(dir, "report"))
			file := filepath.Join(dir, "trace")
			args := append([]string{"-no-funcs", "-device", "/dev/null", "-o", file}, tc.flags...)
			code, stdout, stderr := runHltrace(t, append(args, "--", testExe(t))...)
			if code != 0 {
				t.Fatalf("exit status %d; stderr:\n%s", code, stderr)
			}
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if f := strings.Fields(l); len(f) > 4 {
					got = append(got, f[4])
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("calls %q in the trace, want %q:\n%s", got, tc.want, b)
			}
			if stdout != "" || strings.Contains(stderr, " INFO ") || !strings.Contains(stderr, "writing the trace to "+file) {
				t.Errorf("stdout %q; stderr:\n%s", stdout, stderr)
			}
		})
	}
}

// TestIntegrationCommandSignals sends SIGTERM and SIGINT to hltrace (a
// process of its own, in a session without a terminal): each reaches the
// command, which exits 0 when it gets one, and so does hltrace.
func TestIntegrationCommandSignals(t *testing.T) {
	requireRoot(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			report := filepath.Join(t.TempDir(), "report")
			cmd := exec.Command(testExe(t), "-no-funcs", "--", testExe(t))
			cmd.Env = append(os.Environ(), "HLTRACE_TEST_MAIN=1", programEnv+"=wait", reportEnv+"="+report)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(60 * time.Second) // the VM harness's guest is slow
			for {
				if _, ok := readReport(t, report); ok {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("the command did not start; stderr:\n%s", stderr.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			if err != nil {
				t.Errorf("hltrace: %v (the command exits 0 when the signal reaches it); stderr:\n%s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), "exited with status 0") {
				t.Errorf("stderr:\n%s", stderr.String())
			}
		})
	}
}

// TestIntegrationInfoAnswer checks what the BPF side reads for naming:
// the device of a CS and of an INFO HW_IP_INFO, the PCI id and revision
// in the HW_IP_INFO answer (read even though /dev/null refuses the call),
// and the ids of an engine core command.
func TestIntegrationInfoAnswer(t *testing.T) {
	tr := openTracer(t, Options{NoFuncs: true})
	fd := openNull(t)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	nullDev := unix.Major(st.Rdev)<<20 | unix.Minor(st.Rdev)

	answer := make([]hl.InfoHWIPInfo, 1)
	answer[0].DeviceID = 0x1020
	answer[0].RevisionID = 3
	var info hl.InfoArgs
	info.Op = hl.HL_INFO_HW_IP_INFO
	info.ReturnSize = uint32(sizeofHWIPInfo)
	info.ReturnPointer = hl.SlicePointer(answer)
	rawIoctl(fd, hl.DRM_IOCTL_HL_INFO, ptr(&info), &info, answer)

	cores := []uint32{0, 6, 68}
	var cs hl.CSEngineCoresArgs
	cs.EngineCores = hl.SlicePointer(cores)
	cs.NumEngineCores = uint32(len(cores))
	cs.CoreCommand = uint32(hl.HL_ENGINE_CORE_HALT)
	cs.CSFlags = hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND
	rawIoctl(fd, hl.DRM_IOCTL_HL_CS, ptr(&cs), &cs, cores)

	chunks := make([]hl.CSSignalChunk, 1)
	chunks[0].QueueIndex = 5
	chunks[0].CollectiveEngineID = 9
	coll := hl.CSChunksArgs{ChunksExecute: hl.SlicePointer(chunks), NumChunksExecute: 1, CSFlags: hl.HL_CS_FLAGS_COLLECTIVE_WAIT}
	rawIoctl(fd, hl.DRM_IOCTL_HL_CS, ptr(&coll), &coll, chunks)
	issueMarker(t, fd)

	evs := readEvents(t, tr, 5*time.Second, isMarker)
	if len(evs) != 4 {
		t.Fatalf("got %d events, want 4:%s", len(evs), lines(evs))
	}
	if b := evs[0].Info(); b.Rdev != nullDev || b.Answered != 1 || b.DeviceId != 0x1020 || b.Revision != 3 {
		t.Errorf("HW_IP_INFO: rdev %#x (want %#x) answered %d device %#x revision %d, want the answer's 0x1020 and 3",
			b.Rdev, nullDev, b.Answered, b.DeviceId, b.Revision)
	}
	ids := evs[1].CSIDs()
	if ids.Rdev != nullDev || ids.Nids != 3 || ids.NumIds != 3 || !slices.Equal(ids.Id[:3], cores) || ids.Command != uint32(hl.HL_ENGINE_CORE_HALT) {
		t.Errorf("engine core CS: %+v", *ids)
	}
	if c := evs[2].CS(); c.Rdev != nullDev || c.Nchunks != 1 || c.Chunk[0].Queue != 5 || c.Chunk[0].Engine != 9 {
		t.Errorf("collective wait CS: %+v", *c)
	}
	// The answer of a call that failed teaches nothing.
	r := newASICResolver(t.TempDir(), 0)
	r.observe(&evs[0])
	if a := r.of(nullDev); a != 0 {
		t.Errorf("a refused HW_IP_INFO made /dev/null a %v", a)
	}
}

// wordsOf returns hltrace's diagnostics as words, without the "hltrace:"
// of each line: what they say, however they were wrapped.
func wordsOf(stderr string) string {
	var words []string
	for _, w := range strings.Fields(stderr) {
		if w != "hltrace:" {
			words = append(words, w)
		}
	}
	return strings.Join(words, " ")
}
