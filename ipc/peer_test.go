package ipc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// childImpostor listens on $ADDR, as an impostor that took over the
// socket name of an exporter that exited, and answers every import with
// its own memfd of the handle's size starting with "EVIL", and every
// watch with an acceptance. It prints READY and serves until stdin closes.
func childImpostor() int {
	h, err := ParseHandle(os.Getenv("HANDLE"))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fd, err := unix.MemfdCreate("evil", unix.MFD_CLOEXEC)
	if err == nil {
		err = unix.Ftruncate(fd, int64(h.Size))
	}
	if err == nil {
		_, err = unix.Pwrite(fd, []byte("EVIL"), 0)
	}
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: os.Getenv("ADDR"), Net: "unixpacket"})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	go func() {
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, maxRequest+1)
				n, err := c.Read(buf)
				if err != nil {
					c.Close()
					return
				}
				op, _, _ := decodeRequest(buf[:n])
				if op == opWatch {
					c.Write(encodeReply(CodeOK, 0, 0, ""))
					return // kept open: the watcher hears nothing more
				}
				c.WriteMsgUnix(encodeReply(CodeOK, h.Size, h.Offset, ""), unix.UnixRights(fd), nil)
				c.Close()
			}()
		}
	}()
	fmt.Println("READY")
	io.Copy(io.Discard, os.Stdin)
	ln.Close()
	return 0
}

// TestImpostorRefused: the exporter exits, a process of another uid binds
// the same abstract socket name and hands out its own descriptor. Import,
// Watch and a Cache must refuse it: the socket is not the handle's
// exporter (another pid, a uid the importer does not allow).
func TestImpostorRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the impostor as another uid (nobody)")
	}
	bin := copyForNobody(t)
	addr := abstractAddr(t)
	exp, h, _ := exporterChild(t, addr)
	exp.stdin.Close()
	exp.cmd.Wait()

	const nobody = 65534
	imp := startChild(t, bin, []string{childEnv + "=impostor", "ADDR=" + addr, "HANDLE=" + h.String()},
		&syscall.Credential{Uid: nobody, Gid: nobody})
	if l := imp.line(t); l != "READY" {
		t.Fatalf("impostor: %s", l)
	}
	refusedImpostor(t, addr, h, fmt.Sprintf("an impostor of uid %d", nobody))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := Watch(ctx, addr)
	if err == nil {
		w.Close()
		t.Fatal("Watch of an impostor succeeded")
	}
	if !errors.Is(err, ErrUnexpectedPeer) {
		t.Errorf("Watch of an impostor: %v, want ErrUnexpectedPeer", err)
	}
}

// refusedImpostor checks that Import, WatchExporter and a Cache refuse
// the impostor listening on addr with ErrUnexpectedPeer; who names it in
// failures.
func refusedImpostor(t *testing.T, addr string, h Handle, who string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	im, err := Import(ctx, addr, h)
	if err == nil {
		b := make([]byte, 4)
		im.File.ReadAt(b, 0)
		im.Close()
		t.Fatalf("Import from %s succeeded; the memory reads %q", who, b)
	}
	if !errors.Is(err, ErrUnexpectedPeer) {
		t.Fatalf("Import from %s: %v, want ErrUnexpectedPeer", who, err)
	}
	t.Log(err)
	if w, err := WatchExporter(ctx, addr, h, ImportOptions{}); err == nil {
		w.Close()
		t.Errorf("WatchExporter of %s succeeded", who)
	} else if !errors.Is(err, ErrUnexpectedPeer) {
		t.Errorf("WatchExporter of %s: %v, want ErrUnexpectedPeer", who, err)
	}
	c := NewCache(4)
	defer c.Close()
	if ci, err := c.Get(ctx, addr, h); err == nil {
		ci.Release()
		t.Errorf("Cache.Get from %s succeeded", who)
	} else if !errors.Is(err, ErrUnexpectedPeer) {
		t.Errorf("Cache.Get from %s: %v, want ErrUnexpectedPeer", who, err)
	}
}

// TestImpostorSameUIDOtherPID: an impostor of an allowed uid (this test's
// own) that is not the handle's exporter is refused for its pid.
func TestImpostorSameUIDOtherPID(t *testing.T) {
	e, h := newTestExporter(t)
	addr := abstractAddr(t)
	// A handle as if this process had exported it on addr, served by a
	// child (same uid, another pid).
	imp := startChild(t, selfExe(t), []string{childEnv + "=impostor", "ADDR=" + addr, "HANDLE=" + h.String()}, nil)
	if l := imp.line(t); l != "READY" {
		t.Fatalf("impostor: %s", l)
	}
	_ = e
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	im, err := Import(ctx, addr, h)
	if err == nil {
		im.Close()
		t.Fatal("Import from another process than the handle's exporter succeeded")
	}
	if !errors.Is(err, ErrUnexpectedPeer) {
		t.Fatalf("Import from another pid: %v, want ErrUnexpectedPeer", err)
	}
	other := h
	other.PIDNamespace++
	if _, err := Import(ctx, e.Addr(), other); !errors.Is(err, ErrOtherNamespace) {
		t.Errorf("Import of a handle of another pid namespace: %v, want ErrOtherNamespace", err)
	}
}

// TestImpostorReusedPID: the exporter exits, and a process of the same
// uid (which the importer allows) that got the exporter's very pid binds
// its socket name and hands out its own descriptor. The pid and the uid
// match; the start time does not, so Import, WatchExporter and a Cache
// refuse it with ErrUnexpectedPeer, and ImportPidfd, which reaches the exporter by its
// pid, with ErrExporterGone.
func TestImpostorReusedPID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to choose the next pid (/proc/sys/kernel/ns_last_pid)")
	}
	addr := abstractAddr(t)
	exp, h, ref := exporterChild(t, addr)
	pid := exp.cmd.Process.Pid
	if h.PID != uint32(pid) {
		t.Fatalf("handle of pid %d from child %d", h.PID, pid)
	}
	exp.stdin.Close()
	exp.cmd.Wait()
	// A start time counts clock ticks (10 ms): a process started within
	// the exporter's own tick is not told apart, so the impostor starts
	// after it.
	afterTick(t, h.StartTime)

	imp := atPid(t, pid, []string{childEnv + "=impostor", "ADDR=" + addr, "HANDLE=" + h.String()})
	if l := imp.line(t); l != "READY" {
		t.Fatalf("impostor: %s", l)
	}
	refusedImpostor(t, addr, h, fmt.Sprintf("a process that got the exporter's pid %d", pid))
	if im, err := ImportPidfd(h, ref); err == nil {
		im.Close()
		t.Error("ImportPidfd from a process that got the exporter's pid succeeded")
	} else if !errors.Is(err, ErrExporterGone) {
		t.Errorf("ImportPidfd from a process that got the exporter's pid: %v, want ErrExporterGone", err)
	}
}

// afterTick waits until the boot clock (/proc/uptime, in the 10 ms clock
// ticks of /proc/PID/stat) is past tick.
func afterTick(t *testing.T, tick uint64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		b, err := os.ReadFile("/proc/uptime")
		if err != nil {
			t.Fatal(err)
		}
		var up float64
		if _, err := fmt.Sscanf(string(b), "%f", &up); err != nil {
			t.Fatalf("/proc/uptime %q: %v", b, err)
		}
		if uint64(up*100) > tick {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the boot clock stayed at tick %d or before for 10 s", tick)
		}
	}
}

// atPid starts a child of this test binary with env as process pid, which
// must be free: the kernel's next pid is set just below it (ns_last_pid)
// and the start retried while another process (or a thread) takes it
// first.
func atPid(t *testing.T, pid int, env []string) *child {
	t.Helper()
	for range 200 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			t.Fatalf("set the next pid: %v", err)
		}
		c := startChild(t, selfExe(t), env, nil)
		if c.cmd.Process.Pid == pid {
			return c
		}
		c.stdin.Close()
		c.cmd.Process.Kill()
		c.cmd.Wait()
	}
	t.Fatalf("no child got pid %d in 200 tries", pid)
	return nil
}

// readReply reads one answer of the exporter on c, which sent nothing.
func readReply(c *net.UnixConn) (Code, error) {
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, repHeaderLen+maxMessage)
	n, err := c.Read(buf)
	if err != nil {
		return 0, err
	}
	code, _, _, _, err := decodeReply(buf[:n])
	return code, err
}

// TestDisallowedUIDCostsNothing: connections of a uid the exporter does
// not allow are answered at once, before any request, and closed; they
// hold no handler while they stay silent.
func TestDisallowedUIDCostsNothing(t *testing.T) {
	e, err := NewExporter("", ExporterOptions{AllowUIDs: []uint32{uint32(os.Geteuid()) + 1}, RequestTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const conns = 300
	var cs []*net.UnixConn
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for i := range conns {
		nc, err := net.Dial("unixpacket", e.Addr())
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		cs = append(cs, nc.(*net.UnixConn))
	}
	for i, c := range cs {
		code, err := readReply(c)
		if err != nil {
			t.Fatalf("connection %d of a disallowed uid, silent: %v, want an immediate not-allowed answer", i, err)
		}
		if code != CodeNotAllowed {
			t.Fatalf("connection %d: %v, want %v", i, code, CodeNotAllowed)
		}
	}
	if n := e.handlers(); n != 0 {
		t.Errorf("%d handlers run for %d silent connections of a disallowed uid", n, conns)
	}
}

// TestConnectionsBounded: an allowed peer that opens connections and
// stays silent holds at most MaxConnections handlers; the next connection
// is told the exporter is busy, and an import succeeds again once they
// close.
func TestConnectionsBounded(t *testing.T) {
	e, h := newTestExporterWith(t, ExporterOptions{RequestTimeout: time.Minute})
	var cs []*net.UnixConn
	closeAll := func() {
		for _, c := range cs {
			c.Close()
		}
		cs = nil
	}
	defer closeAll()
	for i := range DefaultMaxConnections {
		nc, err := net.Dial("unixpacket", e.Addr())
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		cs = append(cs, nc.(*net.UnixConn))
	}
	nc, err := net.Dial("unixpacket", e.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	code, err := readReply(nc.(*net.UnixConn))
	if err != nil || code != CodeBusy {
		t.Fatalf("connection beyond %d silent ones: %v %v, want %v", DefaultMaxConnections, code, err, CodeBusy)
	}
	if n := e.handlers(); n > DefaultMaxConnections {
		t.Errorf("%d handlers, bound %d", n, DefaultMaxConnections)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := Import(ctx, e.Addr(), h); !errors.Is(err, ErrBusy) {
		t.Errorf("import while busy: %v, want ErrBusy", err)
	}
	closeAll()
	for e.handlers() != 0 {
		if ctx.Err() != nil {
			t.Fatal("handlers of closed connections never ended")
		}
		time.Sleep(time.Millisecond)
	}
	im, err := Import(ctx, e.Addr(), h)
	if err != nil {
		t.Fatalf("import after the silent connections closed: %v", err)
	}
	im.Close()
}

// TestSilentWatcherTimesOut: a watch connection whose importer stops
// answering the exporter's keepalives is closed by the exporter.
func TestSilentWatcherTimesOut(t *testing.T) {
	e, err := NewExporter("", ExporterOptions{WatchKeepalive: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c, err := net.Dial("unixpacket", e.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(encodeWatchRequest()); err != nil {
		t.Fatal(err)
	}
	if code, err := readReply(c.(*net.UnixConn)); err != nil || code != CodeOK {
		t.Fatalf("watch: %v %v", code, err)
	}
	// Read (so the exporter's writes never block) but never answer.
	buf := make([]byte, 64)
	c.SetReadDeadline(time.Now().Add(time.Minute))
	for {
		n, err := c.Read(buf)
		if err != nil || n == 0 {
			break
		}
	}
	if n := e.Watchers(); n != 0 {
		t.Fatalf("%d watchers after the connection ended", n)
	}
}

// TestWatchOfSilentExporterTimesOut: a Watcher whose exporter stops
// sending keepalives ends with ErrExporterGone.
func TestWatchOfSilentExporterTimesOut(t *testing.T) {
	addr := abstractAddr(t)
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: addr, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		defer c.Close()
		c.Read(make([]byte, 64))
		// Accept with a keepalive of 20 ms, then say nothing more.
		c.Write(encodeReply(CodeOK, uint64(20*time.Millisecond), 0, ""))
		c.SetReadDeadline(time.Now().Add(time.Minute))
		io.Copy(io.Discard, c)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := Watch(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Next(ctx); !errors.Is(err, ErrExporterGone) {
		t.Fatalf("watch of an exporter that went silent: %v, want ErrExporterGone", err)
	}
}

var _ = bytes.Equal

// TestRefusalAfterStall: an exporter that refuses a connection's uid
// answers it, however long its goroutine was descheduled before the
// answer (the hook stands for that), and the importer hears the refusal
// (ErrNotAllowed), not the connection's end. refuse bounded its write by
// a 10 ms deadline, which expired under a stall and made Go skip the
// write: ipc TestOtherUIDRefused failed so in CI's VM ("exporter gone:
// ... connection closed during reply").
func TestRefusalAfterStall(t *testing.T) {
	e, h := newTestExporterWith(t, ExporterOptions{AllowUIDs: []uint32{12345}}) // not this process's uid
	stall := func() { time.Sleep(50 * time.Millisecond) }
	testHookRefusing.Store(&stall)
	t.Cleanup(func() { testHookRefusing.Store(nil) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	im, err := ImportWith(ctx, e.Addr(), h, ImportOptions{AllowUIDs: []uint32{uint32(os.Geteuid())}})
	if err == nil {
		im.Close()
		t.Fatal("an import by a uid the exporter does not allow succeeded")
	}
	if !errors.Is(err, ErrNotAllowed) {
		t.Fatalf("import by a uid the exporter does not allow, its answer delayed: %v, want ErrNotAllowed", err)
	}
}
