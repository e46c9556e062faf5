package devstat

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gaudi-go/gaudi/simdevice"
)

// TestHolderInAnotherMountNamespace: a process of another mount namespace
// that holds a file of the same path as a device's (here a simulated
// device's lock file, on a tmpfs mounted over the lock directory in its
// namespace only) does not hold the device. Holders are matched by the
// file's identity, not by the path /proc/PID/fd shows; before, it was
// listed as the device's compute holder.
func TestHolderInAnotherMountNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a mount namespace needs root")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare command")
	}
	sys, err := simdevice.System()
	if err != nil {
		t.Fatal(err)
	}
	lock := sys.Devices()[0].LockPath()
	cmd := exec.Command(unshare, "-m", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs none "$1" && exec 3>"$1/$2" && echo ready && exec sleep 600`,
		"sh", filepath.Dir(lock), filepath.Base(lock))
	startReady(t, cmd, "the holder in another namespace")
	s, err := Collect(Options{Selection: mustSelect(t, "sim:0")})
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Devices[0].Processes; len(p) != 0 {
		t.Errorf("device 0 holders %+v, want none: pid %d holds another file of the same path", p, cmd.Process.Pid)
	}
}

// startReady starts cmd, which says "ready" on stdout once it holds what
// the test needs, waits for that line, and kills it when the test ends.
func startReady(t *testing.T, cmd *exec.Cmd, what string) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("%s did not start: %q, %v", what, line, err)
	}
}
