package ipc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/internal/leakcheck"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
	"golang.org/x/sys/unix"
)

const childEnv = "GAUDI_IPC_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		// The examples open the process's simulated server, which stays
		// for the process; it is closed before the leak check.
		os.Exit(leakcheck.Run(m, leakcheck.AfterRun(func() {
			if s, err := simdevice.System(); err == nil {
				s.Close()
			}
		})))
	case "export":
		os.Exit(childExport())
	case "import":
		os.Exit(childImport())
	case "pidfd":
		os.Exit(childImportPidfd())
	case "cache":
		os.Exit(childCache())
	case "watch":
		os.Exit(childWatch())
	case "device-export":
		os.Exit(childDeviceExport())
	case "served-export":
		os.Exit(childServedExport())
	case "self-import":
		os.Exit(childSelfImport())
	case "impostor":
		os.Exit(childImpostor())
	default:
		fmt.Fprintln(os.Stderr, "unknown child mode")
		os.Exit(2)
	}
}

const testSize = 64 << 10

func pattern(i int) byte { return byte(i*7 + i>>8) }

// newMemfd returns a memfd of testSize bytes holding pattern.
func newMemfd() (int, error) {
	fd, err := unix.MemfdCreate("ipc-test", unix.MFD_CLOEXEC)
	if err != nil {
		return -1, err
	}
	b := make([]byte, testSize)
	for i := range b {
		b[i] = pattern(i)
	}
	if _, err := unix.Pwrite(fd, b, 0); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

var testDev = DeviceID{PCIAddress: "0000:10:00.0", ModuleID: 0}

// childExport serves one memfd on $ADDR, prints its handle, and exits when
// stdin closes. With STALL set it prints STALL and blocks on the first
// request instead of answering.
func childExport() int {
	e, err := NewExporter(os.Getenv("ADDR"), ExporterOptions{})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	if os.Getenv("STALL") != "" {
		e.setBeforeReply(func() {
			fmt.Println("STALL")
			select {}
		})
	}
	fd, err := newMemfd()
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	h, err := e.ExportFD(fd, testDev, 0x1000_0000, testSize, 0)
	unix.Close(fd)
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("HANDLE", h.String())
	if ref, err := e.PidfdRef(h); err == nil {
		fmt.Println("REF", ref.String())
	} else {
		fmt.Println("ERR", err)
	}
	io.Copy(io.Discard, os.Stdin)
	e.Close()
	return 0
}

// childImport imports $HANDLE from $ADDR and prints OK or the error class.
func childImport() int {
	h, err := ParseHandle(os.Getenv("HANDLE"))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return reportImport(Import(ctx, os.Getenv("ADDR"), h))
}

// reportImport prints a child importer's verdict for the parent: OK when the
// bytes match, NOTALLOWED when refused by policy, ERR otherwise.
func reportImport(im *Imported, err error) int {
	switch {
	case errors.Is(err, ErrNotAllowed):
		fmt.Println("NOTALLOWED", err)
		return 0
	case err != nil:
		fmt.Println("ERR", err)
		return 1
	}
	defer im.Close()
	if err := checkPattern(im); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("OK")
	return 0
}

// checkPattern checks the imported bytes: a memfd's by mapping it, a
// simulated Gaudi dma-buf's through the simulator's test hook (the CPU
// cannot map a Gaudi dma-buf).
func checkPattern(im *Imported) error {
	var m []byte
	if _, err := sim.ExportKindOf(int(im.File.Fd())); err == nil {
		m = make([]byte, im.Size)
		if _, err := sim.TestHookReadDMABuf(int(im.File.Fd()), 0, m); err != nil {
			return err
		}
	} else {
		mem, err := unix.Mmap(int(im.File.Fd()), 0, int(im.Size), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return err
		}
		defer unix.Munmap(mem)
		m = mem
	}
	for i, c := range m {
		if c != pattern(i) {
			return fmt.Errorf("byte %d = %#x, want %#x", i, c, pattern(i))
		}
	}
	return nil
}

func abstractAddr(t *testing.T) string {
	return fmt.Sprintf("@gaudi-ipc-test-%d-%s-%d", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_"), time.Now().UnixNano())
}

type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

func startChild(t *testing.T, bin string, env []string, cred *syscall.Credential) *child {
	t.Helper()
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: in, lines: make(chan string, 16)}
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			c.lines <- s.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return c
}

func (c *child) line(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			t.Fatal("child exited without output")
		}
		return l
	case <-time.After(20 * time.Second):
		t.Fatal("child silent for 20 s")
	}
	return ""
}

func selfExe(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestImportFromChildExporter: another process exports, this one imports
// and reads the bytes.
func TestImportFromChildExporter(t *testing.T) {
	addr := abstractAddr(t)
	c := startChild(t, selfExe(t), []string{childEnv + "=export", "ADDR=" + addr}, nil)
	l := c.line(t)
	hs, ok := strings.CutPrefix(l, "HANDLE ")
	if !ok {
		t.Fatalf("child: %s", l)
	}
	h, err := ParseHandle(hs)
	if err != nil {
		t.Fatal(err)
	}
	if h.PID != uint32(c.cmd.Process.Pid) {
		t.Errorf("handle pid %d, child pid %d", h.PID, c.cmd.Process.Pid)
	}
	for range 3 {
		im, err := Import(context.Background(), addr, h)
		if err != nil {
			t.Fatal(err)
		}
		if im.Size != testSize || im.Offset != 0 {
			t.Errorf("imported %d bytes at %d", im.Size, im.Offset)
		}
		if err := checkPattern(im); err != nil {
			t.Error(err)
		}
		im.Close()
	}
	c.stdin.Close()
}

// TestImportInChildImporter: this process exports, a child imports.
func TestImportInChildImporter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ipc.sock")
	e, err := NewExporter(path, ExporterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	fd, err := newMemfd()
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.ExportFD(fd, testDev, 0x2000, testSize, 0)
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	c := startChild(t, selfExe(t), []string{childEnv + "=import", "ADDR=" + path, "HANDLE=" + h.String()}, nil)
	if l := c.line(t); l != "OK" {
		t.Fatalf("child importer: %s", l)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket file left after Close: %v", err)
	}
}

// TestOtherUIDRefused: a child running as nobody is refused by an exporter
// of root with the default policy, and admitted with an allowlist.
func TestOtherUIDRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the importer child as another uid (nobody)")
	}
	bin := copyForNobody(t)
	const nobody = 65534
	for _, allow := range [][]uint32{nil, {0, nobody}} {
		e, err := NewExporter(abstractAddr(t), ExporterOptions{AllowUIDs: allow})
		if err != nil {
			t.Fatal(err)
		}
		fd, err := newMemfd()
		if err != nil {
			t.Fatal(err)
		}
		h, err := e.ExportFD(fd, testDev, 0x2000, testSize, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		c := startChild(t, bin, []string{childEnv + "=import", "ADDR=" + e.Addr(), "HANDLE=" + h.String()},
			&syscall.Credential{Uid: nobody, Gid: nobody})
		l := c.line(t)
		want := "NOTALLOWED"
		if allow != nil {
			want = "OK"
		}
		if !strings.HasPrefix(l, want) {
			t.Errorf("allow %v: child as nobody says %q, want %s", allow, l, want)
		} else {
			t.Logf("allow %v: %s", allow, l)
		}
		e.Close()
	}
}

// TestExporterKilledDuringImport: the import fails promptly with
// ErrExporterGone when the exporter dies before it answers.
func TestExporterKilledDuringImport(t *testing.T) {
	addr := abstractAddr(t)
	c := startChild(t, selfExe(t), []string{childEnv + "=export", "ADDR=" + addr, "STALL=1"}, nil)
	hs, ok := strings.CutPrefix(c.line(t), "HANDLE ")
	if !ok {
		t.Fatal("no handle")
	}
	h, err := ParseHandle(hs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		im, err := Import(ctx, addr, h)
		if im != nil {
			im.Close()
		}
		done <- err
	}()
	l := c.line(t)
	if strings.HasPrefix(l, "REF ") {
		l = c.line(t)
	}
	if l != "STALL" {
		t.Fatalf("child: %s", l)
	}
	start := time.Now()
	c.cmd.Process.Kill()
	select {
	case err := <-done:
		if !errors.Is(err, ErrExporterGone) {
			t.Fatalf("import after the exporter died: %v, want ErrExporterGone", err)
		}
		t.Logf("%v after %v", err, time.Since(start))
	case <-time.After(10 * time.Second):
		t.Fatal("import hangs after the exporter died")
	}
	// Nobody listens any more.
	if _, err := Import(ctx, addr, h); !errors.Is(err, ErrExporterGone) {
		t.Errorf("import from a dead exporter: %v", err)
	}
}

func newTestExporter(t *testing.T) (*Exporter, Handle) {
	t.Helper()
	return newTestExporterWith(t, ExporterOptions{})
}

// newTestExporterWith is newTestExporter with opts.
func newTestExporterWith(t *testing.T, opts ExporterOptions) (*Exporter, Handle) {
	t.Helper()
	e, err := NewExporter("", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	fd, err := newMemfd()
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.ExportFD(fd, testDev, 0x3000, testSize, 0)
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	return e, h
}

func TestRefusals(t *testing.T) {
	e, h := newTestExporter(t)
	ctx := context.Background()

	other := h
	other.BufferID[0] ^= 1
	if _, err := Import(ctx, e.Addr(), other); !errors.Is(err, ErrUnknownBuffer) {
		t.Errorf("unknown buffer id: %v", err)
	}
	wrongSize := h
	wrongSize.Size--
	if _, err := Import(ctx, e.Addr(), wrongSize); !errors.Is(err, ErrUnknownBuffer) {
		t.Errorf("handle with another size: %v", err)
	}
	otherPID := h
	otherPID.PID++
	// The importer refuses the socket of another process than the
	// handle's exporter before it asks; the exporter refuses the handle
	// of another pid too.
	if _, err := Import(ctx, e.Addr(), otherPID); !errors.Is(err, ErrUnexpectedPeer) {
		t.Errorf("handle of another pid: %v, want ErrUnexpectedPeer", err)
	}
	if req, err := encodeRequest(otherPID); err != nil {
		t.Error(err)
	} else if code, msg := rawRequest(t, e.Addr(), req); code != CodeUnknown {
		t.Errorf("exporter asked for a handle of another pid: %v %s, want %v", code, msg, CodeUnknown)
	}
	otherBoot := h
	otherBoot.BootID[0] ^= 1
	if _, err := Import(ctx, e.Addr(), otherBoot); !errors.Is(err, ErrOtherHost) {
		t.Errorf("handle of another boot: %v", err)
	}

	im, err := Import(ctx, e.Addr(), h)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Revoke(h); err != nil {
		t.Fatal(err)
	}
	// What was imported stays valid.
	if err := checkPattern(im); err != nil {
		t.Errorf("imported before revoke: %v", err)
	}
	im.Close()
	_, err = Import(ctx, e.Addr(), h)
	var re *RefusedError
	if !errors.Is(err, ErrRevoked) || !errors.As(err, &re) || re.Code != CodeRevoked {
		t.Errorf("import after revoke: %v", err)
	}
	if err := e.Revoke(h); !errors.Is(err, ErrUnknownBuffer) {
		t.Errorf("second revoke: %v", err)
	}
	if e.Exported() != 0 {
		t.Errorf("%d exported after revoke", e.Exported())
	}

	addr := e.Addr()
	e.Close()
	if _, err := Import(ctx, addr, h); !errors.Is(err, ErrExporterGone) {
		t.Errorf("import after Close: %v", err)
	}
	if _, err := e.ExportFD(0, testDev, 0, 1, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("export after Close: %v", err)
	}
	if _, err := Import(ctx, "@gaudi-ipc-nobody-listens-here", h); !errors.Is(err, ErrExporterGone) {
		t.Errorf("import with nobody listening: %v", err)
	}
}

// rawRequest sends b to the exporter and returns its answer.
func rawRequest(t *testing.T, addr string, b []byte) (Code, string) {
	t.Helper()
	c, err := net.Dial("unixpacket", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	oob := make([]byte, 128)
	n, oobn, _, _, err := c.(*net.UnixConn).ReadMsgUnix(buf, oob)
	if err != nil {
		t.Fatal(err)
	}
	fds, _ := rights(oob[:oobn])
	for _, fd := range fds {
		unix.Close(fd)
	}
	code, _, _, msg, err := decodeReply(buf[:n])
	if err != nil {
		t.Fatal(err)
	}
	if code != CodeOK && len(fds) != 0 {
		t.Errorf("refusal carries %d descriptors", len(fds))
	}
	return code, msg
}

func TestMalformedRequests(t *testing.T) {
	e, h := newTestExporter(t)
	good, err := encodeRequest(h)
	if err != nil {
		t.Fatal(err)
	}
	if code, msg := rawRequest(t, e.Addr(), good); code != CodeOK {
		t.Fatalf("good request: %v %s", code, msg)
	}
	bad := map[string][]byte{
		"garbage":        []byte("hello exporter"),
		"truncated":      good[:len(good)-3],
		"header only":    good[:reqHeaderLen],
		"trailing":       append(bytes.Clone(good), 1),
		"handle version": func() []byte { b := bytes.Clone(good); b[reqHeaderLen+4] = 9; return b }(),
		"proto version":  func() []byte { b := bytes.Clone(good); b[4] = 9; return b }(),
		"unknown op":     func() []byte { b := bytes.Clone(good); b[5] = 7; return b }(),
		"too long":       make([]byte, 4000),
	}
	for name, b := range bad {
		if code, msg := rawRequest(t, e.Addr(), b); code != CodeBadRequest {
			t.Errorf("%s: %v %s, want bad request", name, code, msg)
		} else {
			t.Logf("%s: %s", name, msg)
		}
	}
	// A request that smuggles a descriptor: the exporter closes it.
	before := countFDs(t)
	c, err := net.Dial("unixpacket", e.Addr())
	if err != nil {
		t.Fatal(err)
	}
	fd, _ := newMemfd()
	if _, _, err := c.(*net.UnixConn).WriteMsgUnix(good, unix.UnixRights(fd), nil); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	buf := make([]byte, 4096)
	oob := make([]byte, 128)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	_, oobn, _, _, err := c.(*net.UnixConn).ReadMsgUnix(buf, oob)
	if err != nil {
		t.Fatal(err)
	}
	closeRights(oob[:oobn])
	c.Close()
	// Connections of the cases above may still be closing on the
	// exporter's goroutines, so "before" can be high: no leak means the
	// count comes back to it or below.
	waitFDsAtMost(t, before)
}

// waitFDsAtMost waits until at most want descriptors are open.
func waitFDsAtMost(t *testing.T, want int) {
	t.Helper()
	var n int
	for range 100 {
		if n = countFDs(t); n <= want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("%d descriptors open, want at most %d", n, want)
}

func TestImportContextDeadline(t *testing.T) {
	e, h := newTestExporter(t)
	release := make(chan struct{})
	var once sync.Once
	e.setBeforeReply(func() { <-release })
	defer once.Do(func() { close(release) })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Import(ctx, e.Addr(), h)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("import from a stalled exporter: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v", d)
	}
	once.Do(func() { close(release) })
}

func countFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// waitFDs waits for the exporter's handlers to finish, then checks the
// descriptor count.
func waitFDs(t *testing.T, want int) {
	t.Helper()
	var n int
	for range 100 {
		if n = countFDs(t); n == want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("%d descriptors open, want %d", n, want)
}

func TestFDsSteady(t *testing.T) {
	const imports = 10000
	before := countFDs(t)
	e, h := newTestExporter(t)
	withExport := countFDs(t)
	early := earlyEOFs.Load()
	ctx := context.Background()
	for i := range imports {
		im, err := Import(ctx, e.Addr(), h)
		if err != nil {
			t.Fatalf("import %d: %v", i, err)
		}
		if i%100 == 0 {
			if err := checkPattern(im); err != nil {
				t.Fatal(err)
			}
		}
		im.Close()
	}
	waitFDs(t, withExport)
	t.Logf("%d imports: %d descriptors before the exporter, %d with it, %d after the imports; %d replies read again after an early end of file (see recvMsg)", imports, before, withExport, countFDs(t), earlyEOFs.Load()-early)
	e.Close()
	waitFDs(t, before)
}

// copyForNobody copies the test binary where uid nobody can execute it:
// it lives in a 0700 build directory.
func copyForNobody(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ipc-uid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "ipc.test")
	data, err := os.ReadFile(selfExe(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}
