package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/internal/hlsimtest"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The hostile-client test of the served nodes (issue 23 item 7): clients
// of an unprivileged user send the server what a hostile program can:
// ioctls known and unknown with arguments of random bytes, bad pointers
// (NULL, kernel addresses, unmapped and read-only memory) and wrong size
// encodings, reads and writes of the nodes, mmaps of any offset and length
// and stores into them (register blocks included), open/close storms,
// descriptors duplicated and passed to other processes, and clients
// killed in the middle of their calls. Meanwhile and afterwards a
// well-behaved client must be served, and once the hostile clients are
// gone the server must hold no more descriptors than before and a bounded
// amount more memory.
//
// go test -run TestHostileClients ./tools/hlsim runs it for a few
// seconds; -hostile=10m for ten minutes (half on a Gaudi2, half on a
// Gaudi3 server), which prints the figures.

var hostileFor = flag.Duration("hostile", 4*time.Second, "how long TestHostileClients runs (half per ASIC)")

// Bounds of what the hostile clients may leave the server holding once
// they are gone.
const (
	// spliceFDs bounds the descriptors go-fuse's splice pool may add,
	// the only ones the server may hold more than before: a pipe pair
	// for each spliced READ reply in flight at once, kept for reuse
	// (go-fuse splice/pool.go), and the /dev/null the pool empties pipes
	// into, opened once (splice/splice.go devNullFD). A hostile client's
	// large read is such a reply. 16 pairs: go-fuse's most readers
	// (fuse/server.go maxMaxReaders).
	spliceFDs = 2*16 + 1
	// Resident bytes more than before (the Go heap's high water mark).
	hostileRSSSlack = 256 << 20
)

// hostileChild runs a hostile client: "hostile SEED DIR", until killed;
// "hostile-pass": ioctls on descriptor 3, which another process passed.
func hostileChild(f []string) int {
	switch f[0] {
	case "hostile":
		seed, _ := strconv.ParseUint(f[1], 10, 64)
		const workers = 4
		for w := range workers {
			go hostileWorker(seed, uint64(w), f[2])
		}
		// What it did so far, for the test's figures (it is killed).
		for range time.Tick(50 * time.Millisecond) {
			fmt.Printf("ops %d\n", hostileOps.Load())
		}
	case "waitraw":
		return waitRaw(f[1])
	case "registershort":
		n, _ := strconv.Atoi(f[2])
		return registerShort(f[1], n)
	case "hostile-pass":
		seed, _ := strconv.ParseUint(f[1], 10, 64)
		h := newHostile(seed, 99, "")
		for range 50 {
			h.ioctl(3)
		}
		return 0
	}
	fmt.Println("unknown command", f)
	return 2
}

// hostileOps counts the calls a hostile client made.
var hostileOps atomic.Int64

// hostile is one worker of a hostile client.
type hostile struct {
	rng   *rand.Rand
	dir   string
	fds   []int
	arg   []byte // ioctl arguments and what their pointers point to
	ro    []byte // read-only memory
	none  []byte // inaccessible memory
	nodes []string
}

func newHostile(seed, w uint64, dir string) *hostile {
	h := &hostile{rng: rand.New(rand.NewPCG(seed, w)), dir: dir}
	var err error
	if h.arg, err = unix.Mmap(-1, 0, 1<<16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err != nil {
		panic(err)
	}
	if h.ro, err = unix.Mmap(-1, 0, 1<<12, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err != nil {
		panic(err)
	}
	if h.none, err = unix.Mmap(-1, 0, 1<<12, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err != nil {
		panic(err)
	}
	if dir != "" {
		h.nodes, _ = filepath.Glob(filepath.Join(dir, "dev/accel/*"))
		attrs, _ := filepath.Glob(filepath.Join(dir, "sys/class/accel/*/device/*"))
		h.nodes = append(h.nodes, attrs...)
		h.nodes = append(h.nodes, filepath.Join(dir, "hlsim/ctl"))
	}
	return h
}

func hostileWorker(seed, w uint64, dir string) {
	runtime.LockOSThread() // FUSE names the calling thread; keep a few distinct
	debug.SetPanicOnFault(true)
	h := newHostile(seed, w, dir)
	for {
		h.step()
	}
}

// addr returns the address of b's byte i.
func addr(b []byte, i int) uint64 { return uint64(uintptr(unsafe.Pointer(&b[i]))) }

// pointer returns a pointer a hostile client may put in an argument.
func (h *hostile) pointer() uint64 {
	switch h.rng.IntN(10) {
	case 0:
		return 0
	case 1:
		return 8
	case 2:
		return 0xffff888000000000 + h.rng.Uint64N(1<<30) // the kernel's direct map
	case 3:
		return 0xffffffff81000000 // kernel text
	case 4:
		return addr(h.ro, h.rng.IntN(len(h.ro)))
	case 5:
		return addr(h.none, h.rng.IntN(len(h.none)))
	case 6:
		return h.rng.Uint64()
	case 7:
		return addr(h.arg, len(h.arg)-1-h.rng.IntN(64)) // a range running off the end
	}
	return addr(h.arg, h.rng.IntN(len(h.arg)))
}

// number returns a size, count or handle a hostile client may send.
func (h *hostile) number() uint64 {
	switch h.rng.IntN(8) {
	case 0:
		return 0
	case 1:
		return 1<<64 - 1 - h.rng.Uint64N(16)
	case 2:
		return 1 << h.rng.IntN(64)
	case 3:
		return h.rng.Uint64N(64)
	case 4:
		return uint64(h.rng.Uint32())
	}
	return h.rng.Uint64()
}

// fill writes n bytes of argument at the start of h.arg: random words,
// pointers and numbers.
func (h *hostile) fill(n int) {
	n = min(n, len(h.arg)/2)
	for i := 0; i+8 <= n; i += 8 {
		var v uint64
		switch h.rng.IntN(3) {
		case 0:
			v = h.pointer()
		case 1:
			v = h.number()
		default:
			v = h.rng.Uint64()
		}
		*(*uint64)(unsafe.Pointer(&h.arg[i])) = v
	}
	// The rest of the buffer, which pointers reach, is random too.
	for i := len(h.arg) / 2; i < len(h.arg); i += 64 {
		h.arg[i] = byte(h.rng.Uint32())
	}
}

// request returns an ioctl request: one of the driver's, perhaps with its
// size or direction changed, or any.
func (h *hostile) request() uint32 {
	known := []uint32{hl.DRM_IOCTL_HL_INFO, hl.DRM_IOCTL_HL_CB, hl.DRM_IOCTL_HL_CS, hl.DRM_IOCTL_HL_WAIT_CS,
		hl.DRM_IOCTL_HL_MEMORY, hl.DRM_IOCTL_HL_DEBUG, hl.DRM_IOCTL_HL_NIC}
	req := known[h.rng.IntN(len(known))]
	switch h.rng.IntN(6) {
	case 0:
		req = req&^(0x3fff<<16) | uint32(h.rng.IntN(0x4000))<<16 // size
	case 1:
		req = req&^(3<<30) | uint32(h.rng.IntN(4))<<30 // direction
	case 2:
		req = req&^0xff | uint32(h.rng.IntN(256)) // number
	case 3:
		req = h.rng.Uint32()
	}
	return req
}

// ioctl sends a random request on fd.
func (h *hostile) ioctl(fd int) {
	req := h.request()
	h.fill(int(req >> 16 & 0x3fff))
	arg := addr(h.arg, 0)
	if h.rng.IntN(10) == 0 {
		arg = h.pointer()
	}
	unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
}

// fd returns a descriptor of the worker's, or -1.
func (h *hostile) fd() int {
	if len(h.fds) == 0 {
		return -1
	}
	return h.fds[h.rng.IntN(len(h.fds))]
}

// drop closes the worker's descriptor i.
func (h *hostile) drop(i int) {
	unix.Close(h.fds[i])
	h.fds = append(h.fds[:i], h.fds[i+1:]...)
}

func (h *hostile) step() {
	hostileOps.Add(1)
	switch op := h.rng.IntN(100); {
	case op < 12:
		if len(h.fds) >= 8 {
			h.drop(h.rng.IntN(len(h.fds)))
		}
		flags := []int{unix.O_RDWR, unix.O_RDONLY, unix.O_WRONLY, unix.O_RDWR | unix.O_NONBLOCK}[h.rng.IntN(4)]
		if fd, err := unix.Open(h.nodes[h.rng.IntN(len(h.nodes))], flags|unix.O_CLOEXEC, 0); err == nil {
			h.fds = append(h.fds, fd)
		}
	case op < 18:
		if len(h.fds) > 0 {
			h.drop(h.rng.IntN(len(h.fds)))
		}
	case op < 65:
		if fd := h.fd(); fd >= 0 {
			h.ioctl(fd)
		}
	case op < 72:
		if fd := h.fd(); fd >= 0 {
			n := int(h.rng.Uint64N(1 << h.rng.IntN(17)))
			b := h.arg[:min(n, len(h.arg))]
			if h.rng.IntN(2) == 0 {
				unix.Pread(fd, b, int64(h.number()>>1))
			} else {
				h.fill(len(b))
				unix.Pwrite(fd, b, int64(h.number()>>1))
			}
		}
	case op < 85:
		if fd := h.fd(); fd >= 0 {
			h.mmap(fd)
		}
	case op < 88:
		if fd := h.fd(); fd >= 0 && len(h.fds) < 8 {
			if d, err := unix.Dup(fd); err == nil {
				unix.CloseOnExec(d)
				h.fds = append(h.fds, d)
			}
		}
	case op < 89:
		if fd := h.fd(); fd >= 0 {
			h.pass(fd)
		}
	default:
		// An ioctl on a descriptor number the worker does not own:
		// another worker's, or nothing.
		h.ioctl(3 + h.rng.IntN(40))
	}
}

// mmap maps fd at an offset a client may choose and stores into it.
func (h *hostile) mmap(fd int) {
	off := int64(h.rng.Uint64N(1<<20)) << 12
	switch h.rng.IntN(4) {
	case 0:
		off = 0
	case 1:
		off = int64(h.number()>>1) &^ 0xfff
	}
	n := (1 + h.rng.IntN(64)) << 12
	prot := []int{unix.PROT_READ, unix.PROT_READ | unix.PROT_WRITE}[h.rng.IntN(2)]
	flags := []int{unix.MAP_SHARED, unix.MAP_PRIVATE}[h.rng.IntN(2)]
	b, err := unix.Mmap(fd, off, n, prot, flags)
	if err != nil {
		return
	}
	func() {
		defer func() { recover() }() // a SIGBUS is the client's own
		for range 16 {
			i := h.rng.IntN(len(b)) &^ 3
			if prot&unix.PROT_WRITE != 0 {
				*(*uint32)(unsafe.Pointer(&b[i])) = uint32(h.number())
			} else {
				_ = *(*uint32)(unsafe.Pointer(&b[i]))
			}
		}
	}()
	unix.Munmap(b)
}

// pass hands fd to a new process, which sends ioctls on it.
func (h *hostile) pass(fd int) {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	c := exec.Command(exe)
	c.Env = append(os.Environ(), hlsimChildEnv+"=hostile-pass "+strconv.FormatUint(h.rng.Uint64(), 10))
	c.ExtraFiles = []*os.File{os.NewFile(uintptr(fd), "passed")}
	if err := c.Start(); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		c.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		c.Process.Kill()
		<-done
	}
}

// serverUse is what the server process holds.
type serverUse struct {
	fds int
	rss uint64 // bytes
}

func (u serverUse) String() string {
	return fmt.Sprintf("%d descriptors, RSS %.1f MiB", u.fds, float64(u.rss)/(1<<20))
}

// useOf reads what process pid holds.
func useOf(t *testing.T, pid int) serverUse {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	var rss uint64
	for _, l := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			rss = kb << 10
		}
	}
	return serverUse{fds: len(ents), rss: rss}
}

// nobodyBinary copies this test binary where uid 65534 can run it.
func nobodyBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "hlsim-hostile-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "hlsim.test")
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// wellBehaved runs INFO HW_IP_INFO on path and returns "ok" or what
// failed, within a minute.
func wellBehaved(path string) string {
	res := make(chan string, 1)
	go func() {
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			res <- "open: " + err.Error()
			return
		}
		defer unix.Close(fd)
		res <- hwIPInfoAny(fd)
	}()
	select {
	case r := <-res:
		return r
	case <-time.After(time.Minute):
		return "no answer in a minute"
	}
}

// hwIPInfoAny is hwIPInfo for a device of any ASIC.
func hwIPInfoAny(fd int) string {
	var r hl.InfoHWIPInfo
	a := hl.InfoArgs{ReturnPointer: hl.NewPointer(unsafe.Pointer(&r)), ReturnSize: uint32(unsafe.Sizeof(r)), Op: hl.HL_INFO_HW_IP_INFO}
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(hl.DRM_IOCTL_HL_INFO), uintptr(unsafe.Pointer(&a))); e != 0 {
		return "INFO: " + e.Error()
	}
	if r.DeviceID == 0 {
		return "INFO: no device id"
	}
	return "ok"
}

// TestHostileClients runs hostile clients of uid 65534 against a server
// (see above) for -hostile, half on a Gaudi2 and half on a Gaudi3.
func TestHostileClients(t *testing.T) {
	hlsimtest.Skip(t)
	bin := nobodyBinary(t)
	for _, spec := range []string{"gaudi2:2", "gaudi3:1"} {
		t.Run(spec, func(t *testing.T) {
			hostileRun(t, bin, spec, *hostileFor/2)
		})
	}
}

func hostileRun(t *testing.T, bin, spec string, d time.Duration) {
	s := hlsimtest.Serve(t, spec)
	// Warm up: each node opened and used once, as the clients will.
	for _, ctl := range []bool{false, true} {
		if r := wellBehaved(s.Node(0, ctl)); r != "ok" {
			t.Fatalf("before: %s: %s", s.Node(0, ctl), r)
		}
	}
	before := useOf(t, s.Pid)
	beforeFDs := fdsOf(s.Pid)

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	var (
		mu      sync.Mutex
		clients []*exec.Cmd
		outs    = map[*exec.Cmd]*bytes.Buffer{}
		started atomic.Int64
		ops     int64
	)
	start := func() {
		c := exec.Command(bin)
		c.Env = append(os.Environ(), hlsimChildEnv+"=hostile "+strconv.FormatUint(seed+uint64(started.Add(1)), 10)+" "+s.Dir)
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		c.Dir = "/"
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		clients = append(clients, c)
		outs[c] = &out
		mu.Unlock()
	}
	killOne := func(i int) {
		mu.Lock()
		c := clients[i]
		clients = append(clients[:i], clients[i+1:]...)
		mu.Unlock()
		c.Process.Kill()
		c.Wait()
		l := strings.Split(strings.TrimSpace(outs[c].String()), "\n")
		var n int64
		fmt.Sscanf(l[len(l)-1], "ops %d", &n)
		ops += n
	}
	const parallel = 3
	for range parallel {
		start()
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	checks := 0
	for end := time.Now().Add(d); time.Now().Before(end); {
		time.Sleep(time.Duration(50+rng.IntN(450)) * time.Millisecond)
		// A client killed in the middle of whatever it was doing.
		killOne(rng.IntN(parallel))
		start()
		// The control node stays served for a well-behaved client.
		if r := wellBehaved(s.Node(0, true)); r != "ok" {
			t.Fatalf("a well-behaved client's INFO on the control node while hostile clients run: %s\n%s", r, tail(s.Log()))
		}
		checks++
	}
	for len(clients) > 0 {
		killOne(0)
	}
	// The compute node is served again once the kernel has released the
	// hostile clients' files.
	var r string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if r = wellBehaved(s.Node(0, false)); r == "ok" || time.Now().After(deadline) {
			break
		}
	}
	if r != "ok" {
		t.Fatalf("a well-behaved client's INFO on the compute node after the hostile clients: %s\n%s", r, tail(s.Log()))
	}
	if got := runChild(t, "open "+s.Node(0, false)); got != "ok" {
		t.Fatalf("a well-behaved client's open after the hostile clients: %s", got)
	}
	// Once the last files are released (the kernel sends RELEASE after
	// the close), the server holds what it held before, and at most the
	// splice pool's pipes and /dev/null more.
	var after serverUse
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		after = useOf(t, s.Pid)
		other, pool := addedFDs(s.Pid, beforeFDs, fdsOf(s.Pid))
		if len(other) == 0 && pool <= spliceFDs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after the hostile clients were killed the server holds %d descriptors more than before that are not go-fuse's splice pool, and %d of the pool (at most %d):\n%s\nall:\n%s\nbefore:\n%s\nprocesses of uid %d:\n%s\n%s",
				len(other), pool, spliceFDs, strings.Join(other, "\n"), strings.Join(fdsOf(s.Pid), "\n"), strings.Join(beforeFDs, "\n"), nobody, strings.Join(processesOf(nobody), "\n"), tail(s.Log()))
		}
	}
	t.Logf("%s for %v: %d hostile clients of uid %d started (and killed), %d calls they reported, %d well-behaved checks; server before: %s; after: %s",
		spec, d, started.Load(), nobody, ops, checks, before, after)
	if after.rss > before.rss+hostileRSSSlack {
		t.Errorf("the server's RSS grew from %s to %s (bound %d MiB)", before, after, hostileRSSSlack>>20)
	}
}

// addedFDs returns the descriptors of process pid in after ("N TARGET",
// as fdsOf lists them) that before has not, split into go-fuse's splice
// pool, counted, and every other. The pool's are a pipe whose read end
// and write end are both here, and /dev/null opened for writing; a
// client's pipe or /dev/null that the server took and kept (one end, or
// /dev/null opened for reading, as a child's stdin is) is another.
func addedFDs(pid int, before, after []string) (other []string, pool int) {
	pipes := map[string][]string{} // pipe target: its added descriptors
	devNull := 0
	for _, fd := range after {
		if slices.Contains(before, fd) {
			continue
		}
		n, target, _ := strings.Cut(fd, " ")
		switch {
		case strings.HasPrefix(target, "pipe:["):
			pipes[target] = append(pipes[target], n)
		case target == "/dev/null" && devNull == 0 && accessMode(pid, n) == unix.O_WRONLY:
			devNull++
			pool++
		default:
			other = append(other, fd)
		}
	}
	for target, fds := range pipes {
		if len(fds) == 2 && accessMode(pid, fds[0])^accessMode(pid, fds[1]) == unix.O_RDONLY^unix.O_WRONLY {
			pool += 2
			continue
		}
		for _, n := range fds {
			other = append(other, n+" "+target)
		}
	}
	return other, pool
}

// accessMode returns the access mode (O_RDONLY, O_WRONLY, O_RDWR) of
// descriptor n of process pid, from its fdinfo; -1 if unknown.
func accessMode(pid int, n string) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, n))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "flags:"); ok {
			f, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			if err != nil {
				return -1
			}
			return int(f) & unix.O_ACCMODE
		}
	}
	return -1
}

// fdsOf lists the descriptors of process pid, as "N TARGET".
func fdsOf(pid int) []string {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	var l []string
	for _, e := range ents {
		target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		l = append(l, e.Name()+" "+target)
	}
	return l
}

// processesOf lists the processes of uid with their state and what they
// wait in.
func processesOf(uid uint32) []string {
	ents, _ := os.ReadDir("/proc")
	var l []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+e.Name(), &st) != nil || st.Uid != uid {
			continue
		}
		wchan, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid))
		l = append(l, fmt.Sprintf("%d %s %s threads in ioctl %d", pid, processState(pid), wchan, blockedInIoctl(pid)))
	}
	return l
}

// tail returns the last lines of a server log.
func tail(log string) string {
	l := strings.Split(strings.TrimSpace(log), "\n")
	return strings.Join(l[max(0, len(l)-40):], "\n")
}

// TestKilledWaiterExits kills a client whose threads wait in WAIT_CS for
// ever on a CS that never completes: the kernel interrupts their requests
// (FUSE INTERRUPT) and the server ends the waits (EINTR), so the client
// exits and its release frees the device. Found by TestHostileClients:
// once the server has read a request, a killed caller waits for the
// answer in D state (fs/fuse/dev.c request_wait_answer), and the server
// answered a wait only when it ended.
func TestKilledWaiterExits(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:1")
	c := childCommand(t, "waitraw "+s.Node(0, false))
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		c.Wait()
		close(exited)
	}()
	p := &lineProc{t: t, cmd: c, in: nopCloser{}, out: bufio.NewReader(out)}
	var server, conn, client int
	if l := p.line(); func() bool {
		_, err := fmt.Sscanf(l, "server %d connection %d client %d", &server, &conn, &client)
		return err != nil
	}() {
		t.Fatalf("client: %q", l)
	}
	t.Cleanup(func() {
		c.Process.Kill()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			// A client left in D state is let go.
			os.WriteFile(fmt.Sprintf("/sys/fs/fuse/connections/%d/abort", conn), []byte("1"), 0)
			<-exited
		}
	})
	if l := p.line(); l != "waiting" {
		t.Fatalf("client: %q", l)
	}
	for deadline := time.Now().Add(time.Minute); blockedInIoctl(client) < 8; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the client's threads are not waiting in ioctls (%d are)", blockedInIoctl(client))
		}
	}
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the client killed while its threads waited in WAIT_CS is still there 30 s later: state %s, %d threads in ioctl",
			processState(client), blockedInIoctl(client))
	}
	var got string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if got = runChild(t, "open "+s.Node(0, false)); got == "ok" || time.Now().After(deadline) {
			break
		}
	}
	if got != "ok" {
		t.Fatalf("open after the killed client: %s, want ok\n%s", got, s.Log())
	}
}

// waitRaw is the child of TestKilledWaiterExits: it blocks the device
// with a CS that never completes and waits for it from 16 threads, each
// with one WAIT_CS that has no timeout (the library's waits are cut into
// slices of its own).
func waitRaw(path string) int {
	_, seq, err := blockDeviceFor(path, 10*time.Minute)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fd := -1
	for _, l := range openFDs() {
		if n, target, ok := strings.Cut(l, " "); ok && target == path {
			fd, _ = strconv.Atoi(n)
		}
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil || fd < 0 {
		fmt.Println("error: no descriptor of", path, err)
		return 1
	}
	fmt.Printf("server 0 connection %d client %d\n", unix.Minor(st.Dev), os.Getpid())
	for range 16 {
		go func() {
			runtime.LockOSThread()
			a := new(hl.WaitCSArgs)
			a.In().SetSeq(seq)
			a.In().SetTimeoutUs(1<<63 - 1) // MAX_SCHEDULE_TIMEOUT: for ever
			_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(hl.DRM_IOCTL_HL_WAIT_CS), uintptr(unsafe.Pointer(a)))
			fmt.Println("returned:", e)
		}()
	}
	fmt.Println("waiting")
	select {}
}

// nopCloser is an input that is not used.
type nopCloser struct{}

func (nopCloser) Write(b []byte) (int, error) { return len(b), nil }
func (nopCloser) Close() error                { return nil }
