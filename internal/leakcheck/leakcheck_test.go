package leakcheck

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/internal/leak"
	"golang.org/x/sys/unix"
)

// childEnv makes the test binary a child that leaks one kind of thing in
// TestChild, under Run, for TestRunReports.
const childEnv = "LEAKCHECK_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(Run(m, Settle(300*time.Millisecond)))
	}
	os.Exit(Run(m))
}

// held keeps what a child leaks on purpose reachable, so that no cleanup
// closes it.
var held []any

// TestChild leaks what childEnv names; it runs only in a child.
func TestChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("runs in a child of TestRunReports")
	}
	switch mode {
	case "none":
	case "fd":
		if _, err := unix.MemfdCreate("leakcheck-child-fd", unix.MFD_CLOEXEC); err != nil {
			t.Fatal(err)
		}
	case "filemap":
		fd, err := unix.MemfdCreate("leakcheck-child-map", unix.MFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		unix.Ftruncate(fd, 4096)
		if _, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ, unix.MAP_SHARED); err != nil {
			t.Fatal(err)
		}
		unix.Close(fd) // the mapping alone is the leak
	case "libmap":
		mem, err := unix.Mmap(-1, 0, 3*4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			t.Fatal(err)
		}
		leak.Mapped(mem, "test host buffer")
	case "goroutine":
		block := make(chan struct{})
		held = append(held, block)
		go leakedGoroutine(block)
	case "object":
		obj := new(tracked)
		leak.Track(obj, leak.Info{Type: "*leakcheck.tracked", Device: "test:leak", FD: -1}, 0)
	default:
		t.Fatalf("unknown mode %q", mode)
	}
}

func leakedGoroutine(c chan struct{}) { <-c }

type tracked struct{ _ [64]byte }

// TestRunReports runs Run in a child process that leaks each kind of
// thing, and checks the exit code and that the report names the leak.
func TestRunReports(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, tc := range []struct {
		mode string
		want []string // in stderr; nil: exit 0
	}{
		{"none", nil},
		{"fd", []string{"file descriptors (1)", "memfd:leakcheck-child-fd"}},
		{"filemap", []string{"mappings of files (1)", "memfd:leakcheck-child-map"}},
		{"libmap", []string{"mappings the library made", "(12288 bytes): test host buffer"}},
		{"goroutine", []string{"goroutines (1)", "leakcheck.leakedGoroutine"}},
		{"object", []string{"objects garbage-collected without Close (1)", "*leakcheck.tracked", "device test:leak", "leakcheck.TestChild"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"="+tc.mode)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("clean child: %v\n%s", err, stderr.String())
			case tc.want == nil:
				if strings.Contains(stderr.String(), "leakcheck") {
					t.Errorf("clean child reported:\n%s", stderr.String())
				}
				return
			case !errors.As(err, &exit) || exit.ExitCode() != 1:
				t.Fatalf("leaking child: %v, want exit status 1\n%s", err, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

func TestDiffFD(t *testing.T) {
	before := mustTake(t)
	fd, err := unix.MemfdCreate("leakcheck-fd", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	r := diff(before, mustTake(t))
	if len(r.fds) != 1 || r.fds[0].fd != fd || !strings.Contains(r.fds[0].target, "memfd:leakcheck-fd") {
		t.Errorf("open memfd %d: leaked fds %v", fd, r.fds)
	}
	unix.Close(fd)
	if r := diff(before, mustTake(t)); len(r.fds) != 0 {
		t.Errorf("after close: leaked fds %v", r.fds)
	}
}

func TestDiffFileMapping(t *testing.T) {
	fd, err := unix.MemfdCreate("leakcheck-map", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, 2*4096); err != nil {
		t.Fatal(err)
	}
	before := mustTake(t)
	mem, err := unix.Mmap(fd, 4096, 4096, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	r := diff(before, mustTake(t))
	if len(r.fileMaps) != 1 || !strings.Contains(r.fileMaps[0].key.path, "memfd:leakcheck-map") || r.fileMaps[0].key.offset != 4096 {
		t.Errorf("mapped memfd: leaked file mappings %+v", r.fileMaps)
	}
	unix.Munmap(mem)
	if r := diff(before, mustTake(t)); len(r.fileMaps) != 0 {
		t.Errorf("after munmap: leaked file mappings %+v", r.fileMaps)
	}
}

func TestDiffLibraryMapping(t *testing.T) {
	leak.Enable()
	before := mustTake(t)
	mem, err := unix.Mmap(-1, 0, 4*4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	leak.Mapped(mem, "test mapping")
	r := diff(before, mustTake(t))
	if len(r.libMaps) != 1 || r.libMaps[0].What != "test mapping" || r.libMaps[0].End-r.libMaps[0].Start != 4*4096 || r.libMaps[0].line == "" {
		t.Errorf("recorded mapping: leaked %+v", r.libMaps)
	}
	// A partial unmap leaves the rest recorded.
	unix.Munmap(mem[:4096])
	leak.Unmapped(mem[:4096])
	r = diff(before, mustTake(t))
	if len(r.libMaps) != 1 || r.libMaps[0].End-r.libMaps[0].Start != 3*4096 {
		t.Errorf("after a partial unmap: leaked %+v", r.libMaps)
	}
	unix.Munmap(mem[4096:])
	leak.Unmapped(mem[4096:])
	if r := diff(before, mustTake(t)); len(r.libMaps) != 0 {
		t.Errorf("after munmap: leaked %+v", r.libMaps)
	}
}

// TestHeapGrowthIsNotALeak grows the Go heap by hundreds of MiB, which
// maps anonymous memory, and expects no mapping in the report.
func TestHeapGrowthIsNotALeak(t *testing.T) {
	before := mustTake(t)
	var keep [][]byte
	for range 64 {
		b := make([]byte, 8<<20)
		b[len(b)-1] = 1
		keep = append(keep, b)
	}
	r := diff(before, mustTake(t))
	runtime.KeepAlive(keep)
	if len(r.fileMaps) != 0 || len(r.libMaps) != 0 {
		t.Errorf("heap growth reported: %+v %+v", r.fileMaps, r.libMaps)
	}
}

func TestDiffGoroutine(t *testing.T) {
	before := mustTake(t)
	block := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		leakedGoroutine(block)
	}()
	// Wait until the goroutine has started and blocked.
	var r *report
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		r = diff(before, mustTake(t))
		if len(r.goroutines) > 0 && strings.Contains(r.goroutines[0].stack, "leakcheck.leakedGoroutine") {
			break
		}
	}
	if len(r.goroutines) != 1 || !strings.Contains(r.goroutines[0].stack, "leakcheck.leakedGoroutine") {
		t.Errorf("blocked goroutine: leaked %+v", r.goroutines)
	}
	close(block)
	<-done
	r, err := settle(before, 5*time.Second, func() []leak.Info { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !r.empty() {
		t.Errorf("after the goroutine ended:\n%s", r)
	}
}

func TestLongLived(t *testing.T) {
	for _, tc := range []struct {
		stack string
		want  bool
	}{
		{"goroutine 5 [chan receive]:\nmain.f()\n\t/x.go:1\ncreated by main.g in goroutine 1\n\t/x.go:2", false},
		{"goroutine 6 [syscall]:\nos/signal.signal_recv()\n\t/s.go:1\nos/signal.loop()\ncreated by os/signal.Notify.func1.1 in goroutine 1", true},
		{"goroutine 2 [force gc (idle)]:\nruntime.gopark(...)\ncreated by runtime.init.7 in goroutine 1", true},
		{"goroutine 1 [running]:\nmain.main()\n\t/x.go:1", true},
	} {
		if got := longLived(tc.stack); got != tc.want {
			t.Errorf("longLived(%q) = %v, want %v", tc.stack, got, tc.want)
		}
	}
}

func TestParseMaps(t *testing.T) {
	in := "00400000-004b0000 r-xp 00000000 fe:00 10119170                           /tmp/exe\n" +
		"7fa152900000-7fa154a00000 rw-p 00000000 00:00 0 \n" +
		"7f0000001000-7f0000003000 rw-s 00001000 00:01 4242                       /memfd:gaudi-sim-cb (deleted)\n" +
		"7ffe011b1000-7ffe011d2000 rw-p 00000000 00:00 0                          [stack]\n"
	got, err := parseMaps([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []mapKey{
		{0x400000, 0x4b0000, 0, 10119170, "/tmp/exe"},
		{0x7fa152900000, 0x7fa154a00000, 0, 0, ""},
		{0x7f0000001000, 0x7f0000003000, 0x1000, 4242, "/memfd:gaudi-sim-cb (deleted)"},
		{0x7ffe011b1000, 0x7ffe011d2000, 0, 0, "[stack]"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].key != want[i] {
			t.Errorf("line %d: %+v, want %+v", i, got[i].key, want[i])
		}
	}
	if fb := []bool{got[0].fileBacked(), got[1].fileBacked(), got[2].fileBacked(), got[3].fileBacked()}; fb[0] != true || fb[1] || !fb[2] || fb[3] {
		t.Errorf("fileBacked = %v, want [true false true false]", fb)
	}
	if _, err := parseMaps([]byte("zz-1 rw-p 0 00:00 0\n")); err == nil {
		t.Error("bad line parsed")
	}
}

func TestTrackReports(t *testing.T) {
	got := make(chan leak.Info, 1)
	leak.SetReporter(func(i leak.Info) { got <- i })
	defer leak.SetReporter(nil)
	func() {
		obj := new(tracked)
		leak.Track(obj, leak.Info{Type: "*t", VA: 0x1000, Size: 4096, FD: -1}, 0)
	}()
	closed := new(tracked)
	c := leak.Track(closed, leak.Info{Type: "*closed", FD: -1}, 0)
	c.Stop()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		runtime.GC()
		select {
		case i := <-got:
			if i.Type != "*t" || i.VA != 0x1000 || i.Size != 4096 {
				t.Errorf("report %+v", i)
			}
			s := i.String()
			if !strings.Contains(s, "*t garbage-collected without Close: va 0x1000 size 4096; created at:") || !strings.Contains(s, "leakcheck.TestTrackReports") {
				t.Errorf("report text %q", s)
			}
			flushCleanups()
			select {
			case i := <-got:
				t.Errorf("second report %+v", i)
			default:
			}
			runtime.KeepAlive(closed)
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("no report for an object dropped without Close")
}

func mustTake(t *testing.T) *snapshot {
	t.Helper()
	s, err := take()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
