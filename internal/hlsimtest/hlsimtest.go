// Package hlsimtest serves simulated Gaudis as device nodes for tests: it
// builds tools/hlsim once per test binary and runs "hlsim serve" on a
// temporary directory, which the test reaches through the kernel (FUSE)
// like any program would.
//
// Serving needs root and /dev/fuse; Serve skips the test with the reason
// when either is missing, and fails it on anything else.
package hlsimtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is a running "hlsim serve".
type Server struct {
	// Dir is the served directory: GAUDI_ROOT for the library, with
	// Dir/dev/accel/accelN the nodes.
	Dir string
	// Pid is the server's process id.
	Pid int

	cmd    *exec.Cmd
	stderr *lockedBuffer
}

// Node returns the path of device i's compute node, or of its control
// node when control is set.
func (s *Server) Node(i int, control bool) string {
	if control {
		return fmt.Sprintf("%s/dev/accel/accel_controlD%d", s.Dir, i)
	}
	return fmt.Sprintf("%s/dev/accel/accel%d", s.Dir, i)
}

// Env returns the environment of a program that should find the served
// devices: GAUDI_ROOT set, GAUDI_DEVICE unset.
func (s *Server) Env() []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GAUDI_ROOT=") && !strings.HasPrefix(e, "GAUDI_DEVICE=") {
			env = append(env, e)
		}
	}
	return append(env, "GAUDI_ROOT="+s.Dir)
}

// Log returns what the server printed on stderr so far.
func (s *Server) Log() string { return s.stderr.String() }

// Skip skips t unless this process can serve devices: root and /dev/fuse.
func Skip(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("serving simulated devices over FUSE needs root (mount, process_vm_readv of clients, FUSE passthrough)")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("no /dev/fuse (%v): the kernel has no FUSE (modprobe fuse)", err)
	}
	if _, err := goCommand(); err != nil {
		// The VM harness runs static test binaries in a guest without Go;
		// the served tests run on the host.
		t.Skipf("no go command to build hlsim with: %v", err)
	}
}

// goCommand returns the go command Binary builds hlsim with: go on PATH,
// else $GOROOT/bin/go.
func goCommand() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	p := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no go on PATH, and %w", err)
	}
	return p, nil
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary returns the path of an hlsim built for this test binary.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		// One directory per test process, named after it; those of
		// processes that are gone are removed.
		removeStale()
		dir := filepath.Join(os.TempDir(), binDirPrefix+strconv.Itoa(os.Getpid()))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "hlsim")
		gocmd, err := goCommand()
		if err != nil {
			buildErr = err
			return
		}
		out, err := exec.Command(gocmd, "build", "-o", binPath, "github.com/gaudi-go/gaudi/tools/hlsim").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build tools/hlsim: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// binDirPrefix names the directories Binary builds in.
const binDirPrefix = "hlsimtest-bin-"

// removeStale removes the build directories of test processes that are
// gone.
func removeStale() {
	ents, err := os.ReadDir(os.TempDir())
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(strings.TrimPrefix(e.Name(), binDirPrefix))
		if !strings.HasPrefix(e.Name(), binDirPrefix) || err != nil || pid == os.Getpid() {
			continue
		}
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			os.RemoveAll(filepath.Join(os.TempDir(), e.Name()))
		}
	}
}

// Serve runs "hlsim serve -sim spec" (spec in GAUDI_SIM's grammar, such as
// "gaudi2:2") on a new temporary directory until the test ends, after
// skipping the test when serving is not possible (Skip).
func Serve(t testing.TB, spec string, extra ...string) *Server {
	t.Helper()
	Skip(t)
	dir, err := os.MkdirTemp("", "hlsimtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A server the test killed leaves its mount: detach it.
		if mounted(dir) {
			syscall.Unmount(dir, syscall.MNT_DETACH)
		}
		os.Remove(dir)
	})
	s, err := Start(Binary(t), dir, spec, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop hlsim: %v\n%s", err, s.Log())
		}
	})
	return s
}

// Start runs bin serve on dir and waits until it serves.
func Start(bin, dir, spec string, extra ...string) (*Server, error) {
	args := append([]string{"serve", "-dir", dir, "-sim", spec}, extra...)
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, cmd: cmd, stderr: &lockedBuffer{}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s.Pid = cmd.Process.Pid
	ready := make(chan error, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, err := r.ReadString('\n')
		if err == nil && !strings.HasPrefix(line, "hlsim: serving") {
			err = fmt.Errorf("unexpected first line %q", line)
		}
		ready <- err
		io.Copy(io.Discard, r)
	}()
	select {
	case err := <-ready:
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, fmt.Errorf("hlsim serve %s: %v\n%s", dir, err, s.stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("hlsim serve %s: not serving after 30s\n%s", dir, s.stderr.String())
	}
	return s, nil
}

// Stop sends SIGTERM and waits for the server to unmount and exit.
func (s *Server) Stop() error {
	if s.cmd.ProcessState != nil {
		return nil
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-done
		return errors.New("hlsim did not exit 30s after SIGTERM")
	}
}

// Kill ends the server with SIGKILL, leaving its mount behind (stale).
func (s *Server) Kill() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
}

// WaitLog waits until the server's stderr holds s, for at most d, and
// reports whether it does. The server prints a message before it answers
// the call the message is about, but what it prints reaches Log through a
// pipe and a copying goroutine, so a test that reads Log right after the
// call may not see it yet: wait for the line, not for a while.
func (s *Server) WaitLog(substr string, d time.Duration) bool {
	timeout := time.After(d)
	for {
		text, changed := s.stderr.snapshot()
		if strings.Contains(text, substr) {
			return true
		}
		select {
		case <-changed:
		case <-timeout:
			return false
		}
	}
}

type lockedBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed by the next Write
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	return l.b.Write(p)
}

// snapshot returns the text so far and a channel the next Write closes.
func (l *lockedBuffer) snapshot() (string, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.b.String(), l.changed
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// mounted reports whether something is mounted on dir.
func mounted(dir string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

// Run runs "hlsim run -sim spec -- args..." with env (nil: this process's)
// and returns its standard output and exit status, after skipping the
// test when serving is not possible (Skip). Its standard error goes to
// the test log when the status is not 0.
func Run(t testing.TB, spec string, env []string, args ...string) (string, int) {
	t.Helper()
	Skip(t)
	cmd := exec.Command(Binary(t), append([]string{"run", "-sim", spec, "--"}, args...)...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		t.Logf("hlsim run %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
		return stdout.String(), exit.ExitCode()
	case err != nil:
		t.Fatalf("hlsim run: %v\n%s", err, stderr.String())
	}
	return stdout.String(), 0
}
