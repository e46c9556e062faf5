package main

import (
	"errors"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/uapi/rdma"
)

// The VM tests need a kernel with kprobes, fentry and a real driver
// function to attach them to: ib_uverbs_ioctl, with Soft-RoCE's
// /dev/infiniband/uverbs0. scripts/vmtest/run.sh boots Debian's 6.12 in
// QEMU with that and runs them with GAUDI_VMTEST=1, where a missing
// feature fails the test; elsewhere they skip and say what is missing.

// vmTest reports whether the test runs in the VM harness.
func vmTest() bool { return os.Getenv("GAUDI_VMTEST") == "1" }

// unavailable skips, or fails in the VM harness, for a missing kernel
// feature or device.
func unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if vmTest() {
		tb.Fatalf(format, args...)
	}
	tb.Skipf(format+" (scripts/vmtest/run.sh runs this test in a 6.12 guest that has it)", args...)
}

// A uverbsCall is one RDMA_VERBS_IOCTL the VM test issues.
type uverbsCall struct {
	name      string
	object    rdma.UverbsDefaultObjects
	method    rdma.UverbsMethodsDevice
	attrs     []rdma.UverbsAttr
	badLength bool   // a header length that does not match num_attrs
	reserved1 uint64 // must be 0
	want      int64  // the return value: 0, -errno, or anyError
}

// anyError accepts whatever error the kernel chose; the event must still
// report the same one.
const anyError = 1

// uverbsCmd is the ioctl argument: the header and its attributes.
type uverbsCmd struct {
	hdr   rdma.UverbsIoctlHdr
	attrs [4]rdma.UverbsAttr
}

// issue sends c on the uverbs fd and returns the system call's result as
// a return value (0 or -errno).
func (c *uverbsCall) issue(fd int) int64 {
	var cmd uverbsCmd
	cmd.hdr.ObjectID = uint16(c.object)
	cmd.hdr.MethodID = uint16(c.method)
	cmd.hdr.NumAttrs = uint16(len(c.attrs))
	cmd.hdr.Length = uint16(24 + 16*len(c.attrs))
	if c.badLength {
		cmd.hdr.Length += 16
	}
	cmd.hdr.Reserved1 = c.reserved1
	cmd.hdr.DriverID = uint32(rdma.RDMA_DRIVER_RXE)
	copy(cmd.attrs[:], c.attrs)
	if errno := rawIoctl(fd, rdma.RDMA_VERBS_IOCTL, ptr(&cmd), &cmd); errno != 0 {
		return -int64(errno)
	}
	return 0
}

// outAttr is a PTR_OUT attribute pointing at v.
func outAttr[T any](id uint16, v *T, size uint16) rdma.UverbsAttr {
	a := rdma.UverbsAttr{AttrID: id, Len: size}
	a.SetData(addr(v))
	return a
}

const (
	uverbsFunc = "ib_uverbs_ioctl"
	uverbsDev  = "/dev/infiniband/uverbs0"
)

// TestVMProbeModes attaches the kprobe and the fentry mode to
// ib_uverbs_ioctl, issues a known sequence of uverbs ioctls (two that the
// driver answers, three that it refuses), and requires one event per
// call, for this process, with the request, the decoded header, the fd,
// the driver's return value and a duration. It then times the same
// refused ioctl untraced and traced, and checks the device filters.
func TestVMProbeModes(t *testing.T) {
	if rdma.RDMA_VERBS_IOCTL != 0xC0181B01 {
		t.Fatalf("RDMA_VERBS_IOCTL is %#x, want 0xc0181b01", rdma.RDMA_VERBS_IOCTL)
	}
	for _, mode := range []string{ProbeKprobe, ProbeFentry} {
		t.Run(mode, func(t *testing.T) {
			t.Run("calls", func(t *testing.T) { testProbeMode(t, mode) })
			t.Run("filters", func(t *testing.T) { testProbeFilters(t, mode) })
			t.Run("command", func(t *testing.T) { testProbeCommand(t, mode) })
		})
	}
}

// openFuncTracer opens a tracer of this process in a function mode on
// ib_uverbs_ioctl, and the uverbs device.
func openFuncTracer(t *testing.T, mode string, opts Options) (*Tracer, int) {
	t.Helper()
	requireRoot(t)
	opts.Probe, opts.IoctlFuncs, opts.NoFuncs, opts.PID = mode, []string{uverbsFunc}, true, os.Getpid()
	tr, err := Open(opts)
	if errors.Is(err, ErrNoKprobes) || errors.Is(err, ErrNoFentry) || errors.Is(err, ErrNoFunc) {
		unavailable(t, "%v", err)
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { tr.Close() })
	if tr.Mode != mode || !cmp.Equal(tr.IoctlFuncs, []string{uverbsFunc}) {
		t.Fatalf("tracer: %s; want %s on %s", tr.Describe(), mode, uverbsFunc)
	}
	fd, err := unix.Open(uverbsDev, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		unavailable(t, "no uverbs device: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return tr, fd
}

func testProbeMode(t *testing.T, mode string) {
	tr, fd := openFuncTracer(t, mode, Options{})
	t.Log(tr.Describe())

	var (
		compVectors uint32
		coreSupport uint64
		port        rdma.UverbsQueryPortRespEx
	)
	getContext := []rdma.UverbsAttr{
		outAttr(uint16(rdma.UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS), &compVectors, 4),
		outAttr(uint16(rdma.UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT), &coreSupport, 8),
	}
	portNum := rdma.UverbsAttr{AttrID: uint16(rdma.UVERBS_ATTR_QUERY_PORT_PORT_NUM), Len: 8} // CONST_IN: inline
	portNum.SetData(1)
	queryPort := []rdma.UverbsAttr{portNum,
		outAttr(uint16(rdma.UVERBS_ATTR_QUERY_PORT_RESP), &port, uint16(reflect.TypeFor[rdma.UverbsQueryPortRespEx]().Size()))}
	calls := []uverbsCall{
		{name: "GET_CONTEXT", object: rdma.UVERBS_OBJECT_DEVICE, method: rdma.UVERBS_METHOD_GET_CONTEXT, attrs: getContext, want: 0},
		{name: "QUERY_PORT", object: rdma.UVERBS_OBJECT_DEVICE, method: rdma.UVERBS_METHOD_QUERY_PORT, attrs: queryPort, want: 0},
		{name: "GET_CONTEXT again", object: rdma.UVERBS_OBJECT_DEVICE, method: rdma.UVERBS_METHOD_GET_CONTEXT, attrs: getContext, want: anyError},
		{name: "bad length", object: rdma.UVERBS_OBJECT_DEVICE, method: rdma.UVERBS_METHOD_GET_CONTEXT, badLength: true, want: -int64(unix.EINVAL)},
		{name: "reserved set", object: rdma.UVERBS_OBJECT_DEVICE, method: rdma.UVERBS_METHOD_QUERY_PORT, reserved1: 1, want: -int64(unix.EPROTONOSUPPORT)},
	}
	rets := make([]int64, len(calls))
	for i := range calls {
		rets[i] = calls[i].issue(fd)
	}
	runtime.KeepAlive(&compVectors)
	runtime.KeepAlive(&coreSupport)
	runtime.KeepAlive(&port)

	n := 0
	evs := readEvents(t, tr, 10*time.Second, func(*Event) bool { n++; return n == len(calls) })
	evs = append(evs, readEvents(t, tr, 300*time.Millisecond, nil)...) // none more
	type seen struct {
		Call           string
		Cmd            uint32
		PID            uint32
		FD             int32
		Object, Method uint16
		NumAttrs       uint16
		Ret            int64
	}
	var got, want []seen
	for i, c := range calls {
		if c.want == anyError && rets[i] >= 0 || c.want != anyError && rets[i] != c.want {
			t.Errorf("%s: the kernel returned %d, the test expects %d", c.name, rets[i], c.want)
		}
		want = append(want, seen{"RDMA_VERBS_IOCTL", 0xC0181B01, uint32(os.Getpid()), int32(fd),
			uint16(c.object), uint16(c.method), uint16(len(c.attrs)), rets[i]})
	}
	for i := range evs {
		e := &evs[i]
		b := e.Uverbs()
		got = append(got, seen{e.CallName(), e.Cmd(), e.PID(), e.FD(), b.ObjectId, b.MethodId, b.NumAttrs, e.Ret()})
		if d := e.Duration(); d <= 0 || d > 10*time.Second {
			t.Errorf("event %d: duration %v", i, d)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("events (-want +got):\n%s%s", d, lines(evs))
	}
	t.Logf("%s: %d calls, %d events:%s", mode, len(calls), len(evs), lines(evs))

	measureOverhead(t, tr, fd)
}

// testProbeFilters checks that -device and the per-function device major keep
// the calls on other files out: the function programs read the device
// number from the struct file they are given.
func testProbeFilters(t *testing.T, mode string) {
	var st unix.Stat_t
	if err := unix.Stat(uverbsDev, &st); err != nil {
		unavailable(t, "no uverbs device: %v", err)
	}
	for _, tc := range []struct {
		name   string
		device string
		major  uint32
		want   bool // the calls are reported
	}{
		{"device uverbs0", uverbsDev, 0, true},
		{"device /dev/null", "/dev/null", 0, false},
		{"major of uverbs0", "", unix.Major(st.Rdev), true},
		{"accel major", "", accelMajor, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.major != 0 {
				ioctlFuncMajors[uverbsFunc] = tc.major
				defer delete(ioctlFuncMajors, uverbsFunc)
			}
			var opts Options
			if tc.device != "" {
				opts.Devices = []DeviceNode{nodeAt(t, tc.device)}
			}
			tr, fd := openFuncTracer(t, mode, opts)
			const calls = 3
			bad := uverbsCall{object: rdma.UVERBS_OBJECT_DEVICE, method: rdma.UVERBS_METHOD_GET_CONTEXT, badLength: true}
			for range calls {
				if ret := bad.issue(fd); ret != -int64(unix.EINVAL) {
					t.Fatalf("bad length: the kernel returned %d, want -EINVAL", ret)
				}
			}
			evs := readEvents(t, tr, 500*time.Millisecond, nil)
			want := 0
			if tc.want {
				want = calls
			}
			if len(evs) != want {
				t.Errorf("%d events, want %d:%s", len(evs), want, lines(evs))
			}
		})
	}
}

// measureOverhead times a refused ioctl (a bad header length, answered by
// ib_uverbs_ioctl itself) with the tracer's links in place, then again
// after Close, and reports the time per call of each, the best of a few
// batches (the guest shares a loaded host). It checks every traced call
// made an event.
func measureOverhead(t *testing.T, tr *Tracer, fd int) {
	const batches, n = 5, 1000
	bad := uverbsCall{object: rdma.UVERBS_OBJECT_DEVICE, method: rdma.UVERBS_METHOD_GET_CONTEXT, badLength: true}
	best := func() time.Duration {
		var min time.Duration
		for b := range batches {
			start := time.Now()
			for range n {
				bad.issue(fd)
			}
			if d := time.Since(start) / n; b == 0 || d < min {
				min = d
			}
		}
		return min
	}
	before, err := tr.Counters()
	if err != nil {
		t.Fatal(err)
	}
	traced := best()
	after, err := tr.Counters()
	if err != nil {
		t.Fatal(err)
	}
	tr.Close()
	untraced := best()
	if ev := after.Events - before.Events; ev != batches*n || after.Lost != 0 {
		t.Errorf("%d traced calls made %d events, %d lost", batches*n, ev, after.Lost)
	}
	t.Logf("%s: per ioctl %v untraced, %v traced (%v added); best of %d batches of %d calls",
		tr.Mode, untraced, traced, traced-untraced, batches, n)
}

// testProbeCommand runs hltrace itself, as another process, with -probe
// and -func, and requires its summary to count this process's calls.
func testProbeCommand(t *testing.T, mode string) {
	requireRoot(t)
	// Open checks what the kernel offers, and skips or fails as above.
	tr, fd := openFuncTracer(t, mode, Options{})
	tr.Close()
	p := startTracer(t, "-probe", mode, "-func", uverbsFunc, "-p", strconv.Itoa(os.Getpid()), "-summary", "-no-funcs")
	const calls = 25
	bad := uverbsCall{object: rdma.UVERBS_OBJECT_DEVICE, method: rdma.UVERBS_METHOD_GET_CONTEXT, badLength: true}
	for range calls {
		bad.issue(fd)
	}
	time.Sleep(100 * time.Millisecond) // hltrace polls every few milliseconds
	events, lost := p.stop(t)
	if events != calls || lost != 0 {
		t.Errorf("hltrace counted %d events (%d lost), want %d:\n%s", events, lost, calls, p.stdout.String())
	}
	out := p.stdout.String()
	if !strings.Contains(out, "RDMA_VERBS_IOCTL") || !strings.Contains(out, "EINVAL:25") {
		t.Errorf("the summary lacks RDMA_VERBS_IOCTL or EINVAL:25:\n%s", out)
	}
	t.Logf("hltrace -probe %s -func %s -summary:\n%s", mode, uverbsFunc, out)
}
