package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/hlsimtest"
	"golang.org/x/sys/unix"
)

// Tests of what the server trusts: who may drive it, what reaches the
// commands it runs, and what a client can cost the others.

// nobody is the unprivileged user the tests act as (CI runs as root).
const nobody = 65534

// asNobody runs the shell command script as uid and gid 65534 and
// returns its combined output and error.
func asNobody(script string) (string, error) {
	c := exec.Command("/bin/sh", "-c", script)
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	c.Dir = "/"
	out, err := c.CombinedOutput()
	return string(out), err
}

// TestControlFilesNeedRoot: hlsim/ctl (0600) and the hard_reset
// attributes (0200) are root's; another user's write is refused and resets
// nothing, root's works (TestCtl).
func TestControlFilesNeedRoot(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:1")
	d, err := device.OpenControl(s.Node(0, true))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	before, err := d.ResetCount()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		filepath.Join(s.Dir, "hlsim", "ctl"),
		filepath.Join(s.Dir, "sys/class/accel/accel0/device/hard_reset"),
	} {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		// ctl answers on the file it was written (hlsim ctl reads the
		// reply), so root reads it too; hard_reset is write-only.
		want := uint32(0o200)
		if strings.HasSuffix(p, "ctl") {
			want = 0o600
		}
		if st.Mode&0o777 != want || st.Uid != 0 {
			t.Errorf("%s: mode %o uid %d, want %o root", p, st.Mode&0o777, st.Uid, want)
		}
		var line string
		if strings.HasSuffix(p, "ctl") {
			line = "reset 0"
		} else {
			line = "1"
		}
		out, err := asNobody(fmt.Sprintf("echo %s > %s", line, p))
		if err == nil {
			t.Errorf("uid %d wrote %q to %s: accepted", nobody, line, p)
		} else if !strings.Contains(out, "Permission denied") {
			t.Errorf("uid %d writing %s: %v %q, want Permission denied", nobody, p, err, out)
		}
	}
	after, err := d.ResetCount()
	if err != nil {
		t.Fatal(err)
	}
	if after.Hard != before.Hard {
		t.Fatalf("hard resets %d -> %d after uid %d's writes", before.Hard, after.Hard, nobody)
	}
	// Another user still reads the attributes and opens the nodes.
	if out, err := asNobody("cat " + filepath.Join(s.Dir, "sys/class/accel/accel0/device/pci_addr")); err != nil || strings.TrimSpace(out) != "0000:19:00.0" {
		t.Errorf("uid %d reading pci_addr: %v %q", nobody, err, out)
	}
}

// TestAttrReadSizes reads the attributes as sysfs lets any reader: any
// size at any offset.
func TestAttrReadSizes(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:1")
	p := filepath.Join(s.Dir, "sys/class/accel/accel0/device/pci_addr")
	want := []byte("0000:19:00.0\n")
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, size := range []int{1, 3, 5, 12, 13, 14, 4096} {
		for _, off := range []int{0, 1, 5, 11, 12, 13, 20} {
			buf := make([]byte, size)
			n, err := unix.Pread(int(f.Fd()), buf, int64(off))
			w := want[min(off, len(want)):min(off+size, len(want))]
			if err != nil || !bytes.Equal(buf[:max(n, 0)], w) {
				t.Errorf("pread(%d bytes at %d) = %d %q, %v; want %q", size, off, n, buf[:max(n, 0)], err, w)
			}
		}
	}
	for _, bs := range []string{"1", "5", "12", "13"} {
		out, err := exec.Command("dd", "if="+p, "bs="+bs, "status=none").CombinedOutput()
		if err != nil || !bytes.Equal(out, want) {
			t.Errorf("dd bs=%s: %v %q, want %q", bs, err, out, want)
		}
	}
}

// openFDs lists this process's descriptors beyond stdio with what they
// are, as "N TARGET".
func openFDs() []string {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return []string{"error " + err.Error()}
	}
	var l []string
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n <= 2 {
			continue
		}
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			continue // the directory read above, closed since
		}
		l = append(l, fmt.Sprintf("%d %s", n, target))
	}
	return l
}

// TestRunNoServerDescriptors: the command hlsim run starts holds none of
// the server's descriptors (its /dev/fuse above all).
func TestRunNoServerDescriptors(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, code := hlsimtest.Run(t, "gaudi2:1", append(os.Environ(), hlsimChildEnv+"=fds"), exe)
	if code != 0 || !strings.HasSuffix(strings.TrimSpace(out), "end") {
		t.Fatalf("child: status %d\n%s", code, out)
	}
	var leaked []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		// The Go runtime's own (its poller, and the cgroup CPU limit files
		// it reads for GOMAXPROCS) are the child's.
		if l == "end" || strings.Contains(l, "anon_inode:[eventpoll]") || strings.Contains(l, "anon_inode:[eventfd]") ||
			strings.Contains(l, " /sys/fs/cgroup/") {
			continue
		}
		leaked = append(leaked, l)
	}
	if len(leaked) != 0 {
		t.Fatalf("the command holds descriptors it did not open:\n%s", strings.Join(leaked, "\n"))
	}
}

// waitMany is the child of TestRunServerKilled: it blocks the device with
// a CS that never completes, waits for it from many threads, and reports
// when every wait returned.
func waitMany(path string) int {
	s, seq, err := blockDeviceFor(path, 10*time.Minute)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Printf("server %d connection %d client %d\n", os.Getppid(), unix.Minor(st.Dev), os.Getpid())
	const waiters = 32
	var wg sync.WaitGroup
	errs := make(chan error, waiters)
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Wait(context.Background(), seq)
			errs <- err
		}()
	}
	fmt.Println("waiting")
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			failed++
		}
	}
	fmt.Printf("returned: %d of %d failed\n", failed, waiters)
	return 0
}

// blockedInIoctl counts the threads of process pid blocked in ioctl(2).
func blockedInIoctl(pid int) int {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	n := 0
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/syscall", pid, task.Name()))
		if err == nil && strings.HasPrefix(string(b), strconv.Itoa(unix.SYS_IOCTL)+" ") {
			n++
		}
	}
	return n
}

// processState is the State line of /proc/PID/status.
func processState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "State:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// TestRunServerKilled kills the server of hlsim run under a client whose
// threads wait in ioctls: every wait fails and the client exits, instead
// of staying in D state on a connection nobody serves.
func TestRunServerKilled(t *testing.T) {
	hlsimtest.Skip(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(hlsimtest.Binary(t), "run", "-sim", "gaudi2:1", "--", exe)
	cmd.Env = append(os.Environ(), hlsimChildEnv+"=waitmany /dev/accel/accel0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A cleanup, not a defer: the one below that lets a hanging client go
	// must run first, or Wait (for the client's end of the pipe) hangs.
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func(what string) string {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the client ended before %s\n%s", what, stderr.String())
			}
			return l
		case <-time.After(2 * time.Minute):
			t.Fatalf("no %s from the client in 2 minutes\n%s", what, stderr.String())
		}
		return ""
	}
	var server, conn, client int
	if l := next("its server"); func() bool {
		_, err := fmt.Sscanf(l, "server %d connection %d client %d", &server, &conn, &client)
		return err != nil
	}() {
		t.Fatalf("client: %q", l)
	}
	t.Cleanup(func() {
		// A client left hanging on the dead connection is let go.
		os.WriteFile(fmt.Sprintf("/sys/fs/fuse/connections/%d/abort", conn), []byte("1"), 0)
		unix.Kill(client, unix.SIGKILL)
	})
	if l := next("its waits"); l != "waiting" {
		t.Fatalf("client: %q", l)
	}
	for deadline := time.Now().Add(2 * time.Minute); blockedInIoctl(client) < 8; {
		if time.Now().After(deadline) {
			t.Fatalf("the client's threads are not waiting in ioctls (%d are)", blockedInIoctl(client))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := unix.Kill(server, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-lines:
		if !strings.HasPrefix(l, "returned: ") || strings.HasPrefix(l, "returned: 0 of") {
			t.Fatalf("client after the server was killed: %q", l)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the client (process %d) is still waiting a minute after its server was killed: state %s, %d threads in ioctl",
			client, processState(client), blockedInIoctl(client))
	}
	// It exits: its standard output closes.
	for range lines {
	}
}

// TestEventfdFullCounter: a client that leaves its registered eventfd at
// the counter's maximum loses its own notification; resets still finish,
// its release frees the device, and another client opens it.
func TestEventfdFullCounter(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:1")
	fd, err := unix.Open(s.Node(0, false), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC) // blocking: a write past the maximum waits
	if err != nil {
		t.Fatal(err)
	}
	drained := false
	defer func() {
		if !drained {
			// Let a server stuck in the write go, for its cleanup.
			var b [8]byte
			unix.Read(efd, b[:])
		}
		unix.Close(efd)
	}()
	if err := registerEventfd(fd, efd); err != nil {
		t.Fatal(err)
	}
	full := []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff} // 2^64-2, the maximum
	if _, err := unix.Write(efd, full); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, hlsimtest.Binary(t), "ctl", "-dir", s.Dir, "reset", "0").CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("reset %d with the client's eventfd full: %v (a minute bound)\n%s", i+1, err, out)
		}
	}
	unix.Close(fd)
	if got := runChild(t, "open "+s.Node(0, false)); got != "ok" {
		t.Fatalf("another client's open after the first closed: %s, want ok\n%s", got, s.Log())
	}
	var b [8]byte
	if _, err := unix.Read(efd, b[:]); err != nil || !bytes.Equal(b[:], full) {
		t.Fatalf("eventfd counter %x %v, want the client's own %x", b, err, full)
	}
	drained = true
}
