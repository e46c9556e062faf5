package sim

import (
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Each strict mode detector against a deliberately broken caller: the
// violation is recorded (and, for the argument checks, the call fails),
// and with strict mode off the same caller goes unnoticed.

// strictSim opens a compute file of a device in strict mode.
func strictSim(t *testing.T, asic ASIC) (*Device, *File) {
	t.Helper()
	_, d, f := openSimMode(t, asic, StrictOn)
	return d, f
}

// wantViolationErr fails the test unless err is a *ViolationError of kind
// k.
func wantViolationErr(t *testing.T, err error, k ViolationKind) {
	t.Helper()
	var ve *ViolationError
	if !errors.As(err, &ve) || !errors.Is(err, ErrViolation) || len(ve.Violations) != 1 || ve.Violations[0].Kind != k {
		t.Fatalf("got %v, want a *ViolationError of %v", err, k)
	}
}

// nopChunk is a user CB of one NOP on queue q (Gaudi2).
func nopChunk(t *testing.T, f *File, q uint32) chunk {
	t.Helper()
	return userCB(t, f, q, build(t, packet.Gaudi2, func(b *packet.Builder) { b.Nop(packet.Nop{}) }))
}

// submitStackChunks submits c as the old stream package did: the chunk
// array made where the compiler keeps it on the goroutine's stack, its
// address stored as an integer.
//
//go:noinline
func submitStackChunks(f *File, c chunk) (uint64, error) {
	chunks := make([]hl.CSChunk, 1) // does not escape: on the stack
	chunks[0].SetCBHandle(c.handle)
	chunks[0].SetCBSize(c.size)
	chunks[0].QueueIndex = c.queue
	chunks[0].CSChunkFlags = hl.HL_CS_CHUNK_FLAGS_USER_ALLOC_CB
	a := new(hl.CSArgs)
	setChunksExecute(a.In(), uint64(uintptr(unsafe.Pointer(&chunks[0]))))
	a.In().NumChunksExecute = 1
	err := csSubmit(f, a)
	if chunks[0].QueueIndex != c.queue { // keeps the array alive across the call
		panic("chunk changed")
	}
	return a.Out().Seq(), err
}

// TestStrictStackAddress: a chunk array on the calling goroutine's stack,
// named by an integer address, fails the CS in strict mode; the same
// chunks on the heap go through. (Without strict mode the simulator reads
// the stack array, and the race detector's pointer checks may find it
// already freed: the stack moved under the address.)
func TestStrictStackAddress(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("the stack bounds need frame pointers (amd64, arm64)")
	}
	d, f := strictSim(t, Gaudi2)
	c := nopChunk(t, f, 0)
	_, err := submitStackChunks(f, c)
	wantViolationErr(t, err, ViolationStackAddress)
	v := takeViolations(t, d, ViolationStackAddress)
	if len(v) == 1 && (v[0].Op != "CS" || !strings.Contains(v[0].Detail, "CS chunks_execute")) {
		t.Errorf("violation %v", v[0])
	}
	seq, _, err := submit(f, chunksOf([]chunk{c}), 0, 0)
	if err != nil {
		t.Fatalf("heap chunks: %v", err)
	}
	mustComplete(t, f, seq)
}

// TestStrictStackMoveCheck: without the stack bounds (as on an
// architecture without frame pointers), the sampled check that moves the
// calling goroutine's stack before serving the call finds the stale
// chunk array: the call fails with ViolationArgumentChanged.
func TestStrictStackMoveCheck(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // the poisoners take the freed stack
	stackBounds = func() (uintptr, uintptr, bool) { return 0, 0, false }
	defer func() { stackBounds = defaultStackBounds }()
	d, f := strictSim(t, Gaudi2)
	c := nopChunk(t, f, 0)
	var err error
	done := make(chan struct{})
	go func() { // a fresh goroutine: the first CS of the file is sampled
		defer close(done)
		_, err = submitStackChunks(f, c)
	}()
	<-done
	wantViolationErr(t, err, ViolationArgumentChanged)
	v := takeViolations(t, d, ViolationArgumentChanged)
	if len(v) == 1 && !strings.Contains(v[0].Detail, "moved the calling goroutine's stack") {
		t.Errorf("violation %v", v[0])
	}
}

// TestStrictArgumentChangedDuringCall: the sequence array of a multi-CS
// wait rewritten by another goroutine while the wait runs is recorded
// when the call ends.
func TestStrictArgumentChangedDuringCall(t *testing.T) {
	d, f := strictSim(t, Gaudi)
	blocked := runCB(t, f, 2, blockedCB(t, f), 0, 0)
	// The array lives outside the Go heap: the race detector would
	// report the rewrite, which is the broken caller's, not ours.
	mem, err := unix.Mmap(-1, 0, pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	seqs := unsafe.Slice((*uint64)(unsafe.Pointer(&mem[0])), 2)
	seqs[0], seqs[1] = blocked, blocked
	var a hl.WaitCSArgs
	a.In().SetSeq(addrOf(mem))
	a.In().SetSeqArrLen(2)
	a.In().SetTimeoutUs(1_000_000)
	a.In().Flags = hl.HL_WAIT_CS_FLAGS_MULTI_CS
	var wrote time.Time
	written := make(chan struct{})
	go func() {
		defer close(written)
		time.Sleep(20 * time.Millisecond)
		atomicStore(&seqs[1], blocked-1)
		wrote = time.Now()
	}()
	err = f.Ioctl(hl.DRM_IOCTL_HL_WAIT_CS, unsafe.Pointer(&a))
	end := time.Now()
	<-written
	if err != nil || a.Out().Status != hl.HL_WAIT_CS_STATUS_BUSY {
		t.Fatalf("multi-CS wait: %+v, %v", *a.Out(), err)
	}
	// The rewrite must fall well inside the 1 s wait.
	if wrote.After(end.Add(-200 * time.Millisecond)) {
		d.TakeViolations()
		d.Reset()
		t.Skip("the wait ended before the array was changed (loaded machine)")
	}
	v := takeViolations(t, d, ViolationArgumentChanged)
	if len(v) == 1 && (v[0].Op != "WAIT_CS" || !strings.Contains(v[0].Detail, "changed during the call")) {
		t.Errorf("violation %v", v[0])
	}
	d.Reset() // ends the blocked CS
}

func atomicStore(p *uint64, v uint64) { (*atomic.Uint64)(unsafe.Pointer(p)).Store(v) }

// stallEDMA stalls Gaudi2's DCORE0 EDMA_0 and returns its first queue,
// whose jobs wait until resume.
func stallEDMA(t *testing.T, f *File) (q uint32, resume func()) {
	t.Helper()
	ids := []uint32{uint32(hl.GAUDI2_DCORE0_ENGINE_ID_EDMA_0)}
	if err := controlCS(t, f, hl.HL_CS_FLAGS_ENGINES_COMMAND, ids, uint32(hl.HL_ENGINE_STALL)); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume = func() {
		if !resumed {
			resumed = true
			if err := controlCS(t, f, hl.HL_CS_FLAGS_ENGINES_COMMAND, ids, uint32(hl.HL_ENGINE_RESUME)); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(resume)
	return uint32(hl.GAUDI2_QUEUE_ID_DCORE0_EDMA_0_0), resume
}

// dramBuf allocates and maps n bytes of device memory (Gaudi2).
func dramBuf(t *testing.T, f *File, n uint64) (handle, va uint64) {
	t.Helper()
	h, err := memAllocFlags(f, n, 0)
	if err != nil {
		t.Fatal(err)
	}
	va, err = memMapDevice(f, h, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return h, va
}

// pageFaulted reports whether the device recorded a page fault.
func pageFaulted(t *testing.T, f *File) bool {
	t.Helper()
	var pf hl.PageFaultInfo
	infoInto(t, f, hl.HL_INFO_PAGE_FAULT_EVENT, &pf)
	return pf.Addr != 0
}

// TestStrictFreedInFlight: a buffer unmapped while a CS that reads it is
// queued (the old dma package's release of a cancelled copy's memory),
// as device memory, as device memory whose address was mapped again for
// another allocation (no page fault: the CS silently reads the new
// buffer), and as host memory.
func TestStrictFreedInFlight(t *testing.T) {
	const n = 1 << 16
	for _, tc := range []struct {
		name  string
		host  bool
		remap bool
	}{{"device memory", false, false}, {"device memory mapped again", false, true}, {"host memory", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			d, f := strictSim(t, Gaudi2)
			srcH, src := dramBuf(t, f, n)
			if tc.host {
				_, src = hostMem(t, f, n)
			}
			_, dst := dramBuf(t, f, n)
			q, resume := stallEDMA(t, f)
			seq := runCB(t, f, q, build(t, packet.Gaudi2, func(b *packet.Builder) {
				b.LinDMA(packet.LinDMA{Src: src, Dst: dst, Size: n})
			}), 0, 0)
			if err := memUnmap(f, src); err != nil {
				t.Fatal(err)
			}
			if tc.remap {
				if err := memFree(f, srcH); err != nil {
					t.Fatal(err)
				}
				h2, err := memAllocFlags(f, n, 0)
				if err != nil {
					t.Fatal(err)
				}
				if va, err := memMapDevice(f, h2, src, hl.HL_MEM_FORCE_HINT); err != nil || va != src {
					t.Fatalf("map again at %#x: %#x, %v", src, va, err)
				}
			}
			resume()
			if tc.remap {
				mustComplete(t, f, seq)
				if pageFaulted(t, f) {
					t.Error("a page fault with the address mapped again")
				}
			} else {
				for deadline := time.Now().Add(5 * time.Second); !pageFaulted(t, f); time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("no page fault")
					}
				}
			}
			v := takeViolations(t, d, ViolationFreedInFlight)
			if len(v) == 1 && (v[0].Seq != seq || v[0].Addr != src) {
				t.Errorf("violation %v of CS %d at %#x, want CS %d at %#x", v[0], v[0].Seq, v[0].Addr, seq, src)
			}
			d.Reset() // ends a faulted CS
		})
	}
}

// TestStrictPageFaultAfterCS: unmapping memory after the CS that used it
// completed, and a later CS that reaches an address never mapped, are
// not "in flight": the first is fine, the second a plain page fault.
func TestStrictPageFaultAfterCS(t *testing.T) {
	d, f := strictSim(t, Gaudi2)
	const n = 4096
	_, src := dramBuf(t, f, n)
	_, dst := dramBuf(t, f, n)
	cb := func(src uint64) []byte {
		return build(t, packet.Gaudi2, func(b *packet.Builder) { b.LinDMA(packet.LinDMA{Src: src, Dst: dst, Size: n}) })
	}
	mustComplete(t, f, runCB(t, f, 0, cb(src), 0, 0))
	if err := memUnmap(f, src); err != nil {
		t.Fatal(err)
	}
	if v := d.Violations(); len(v) != 0 {
		t.Fatalf("violations %v", v)
	}
	runCB(t, f, 0, cb(src), 0, 0)
	for deadline := time.Now().Add(5 * time.Second); !pageFaulted(t, f); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no page fault")
		}
	}
	takeViolations(t, d, ViolationPageFault)
	d.Reset()
}

// TestStrictCBChanged: a user command buffer rewritten while its CS is
// queued (the old dma package's return of command buffers to the pool
// before completion) is recorded when the job starts; an unchanged one is
// not.
func TestStrictCBChanged(t *testing.T) {
	d, f := strictSim(t, Gaudi2)
	const n = 4096
	_, src := dramBuf(t, f, n)
	_, dst := dramBuf(t, f, n)
	_, other := dramBuf(t, f, n)
	cb := func(dst uint64) []byte {
		return build(t, packet.Gaudi2, func(b *packet.Builder) { b.LinDMA(packet.LinDMA{Src: src, Dst: dst, Size: n}) })
	}
	mem, va := hostMem(t, f, 4096)
	q, resume := stallEDMA(t, f)
	run := func(change bool) uint64 {
		copy(mem, cb(dst))
		seq, _, err := submit(f, chunksOf([]chunk{{queue: q, handle: va, size: uint32(len(cb(dst))), user: true}}), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if change {
			copy(mem, cb(other)) // the pool hands the CB to the next copy
		}
		return seq
	}
	seq := run(false)
	resume()
	mustComplete(t, f, seq)
	if v := d.Violations(); len(v) != 0 {
		t.Fatalf("violations %v", v)
	}
	q, resume = stallEDMA(t, f)
	seq = run(true)
	resume()
	mustComplete(t, f, seq)
	v := takeViolations(t, d, ViolationCBChanged)
	if len(v) == 1 && (v[0].Seq != seq || v[0].Addr != va || !strings.Contains(v[0].Detail, "execution")) {
		t.Errorf("violation %v", v[0])
	}
}

// TestStrictHostReplaced: host memory unmapped and mapped again at the
// same address after MAP, then reached by a CS, is recorded: a file
// mapping replaced by another file's (detectable everywhere), and
// anonymous memory replaced by new anonymous memory (detectable where
// /proc/self/pagemap shows page frames: CAP_SYS_ADMIN).
func TestStrictHostReplaced(t *testing.T) {
	const n = 2 * pageSize
	for _, tc := range []struct {
		name       string
		anon, maps bool
	}{{"memfd", false, false}, {"anonymous", true, false}, {"memfd, /proc/self/maps", false, true}} {
		anon := tc.anon
		t.Run(tc.name, func(t *testing.T) {
			if tc.maps {
				// The identity check without PROCMAP_QUERY, as before
				// Linux 6.11.
				old := noProcmapQuery.Swap(true)
				defer noProcmapQuery.Store(old)
			}
			if anon && !pagemapFrames() {
				t.Skip("/proc/self/pagemap shows no page frames (needs CAP_SYS_ADMIN)")
			}
			d, f := strictSim(t, Gaudi2)
			mapAt := func(addr unsafe.Pointer) []byte {
				flags := unix.MAP_SHARED
				fd := -1
				if anon {
					flags = unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
				} else {
					var err error
					if fd, err = unix.MemfdCreate("strict-test", unix.MFD_CLOEXEC); err != nil {
						t.Fatal(err)
					}
					defer unix.Close(fd)
					if err := unix.Ftruncate(fd, n); err != nil {
						t.Fatal(err)
					}
				}
				if addr != nil {
					flags |= unix.MAP_FIXED
				}
				p, err := unix.MmapPtr(fd, 0, addr, n, unix.PROT_READ|unix.PROT_WRITE, flags)
				if err != nil {
					t.Fatal(err)
				}
				b := unsafe.Slice((*byte)(p), n)
				for i := range b {
					b[i] = byte(i)
				}
				return b
			}
			host := mapAt(nil)
			base := unsafe.Pointer(&host[0])
			t.Cleanup(func() { unix.MunmapPtr(base, n) })
			va, err := memMapHost(f, addrOf(host), n, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, dst := dramBuf(t, f, n)
			cb := build(t, packet.Gaudi2, func(b *packet.Builder) { b.LinDMA(packet.LinDMA{Src: va, Dst: dst, Size: n}) })
			mustComplete(t, f, runCB(t, f, 0, cb, 0, 0))
			if v := d.Violations(); len(v) != 0 {
				t.Fatalf("violations before the memory was replaced: %v", v)
			}
			if err := unix.MunmapPtr(base, n); err != nil {
				t.Fatal(err)
			}
			mapAt(base)
			seq := runCB(t, f, 0, cb, 0, 0)
			mustComplete(t, f, seq)
			v := takeViolations(t, d, ViolationHostReplaced)
			if len(v) == 1 && (v[0].Seq != seq || v[0].Addr != va) {
				t.Errorf("violation %v", v[0])
			}
		})
	}
}

// TestStrictDefault: StrictAuto follows GAUDI_SIM_STRICT, and is on in
// test binaries without it; StrictOn and StrictOff win over it.
func TestStrictDefault(t *testing.T) {
	for _, tc := range []struct {
		env  string
		mode StrictMode
		want bool
		bad  bool
	}{
		{"", StrictAuto, true, false},
		{"0", StrictAuto, false, false},
		{"1", StrictAuto, true, false},
		{"0", StrictOn, true, false},
		{"1", StrictOff, false, false},
		{"maybe", StrictAuto, false, true},
	} {
		t.Setenv(strictEnv, tc.env)
		cfg := Default(Gaudi2, 1)
		cfg.Strict = tc.mode
		cfg.LockDir = t.TempDir()
		s, err := New(cfg)
		if tc.bad {
			if !errors.Is(err, errBadStrict) {
				t.Errorf("%s=%q: %v, want an error", strictEnv, tc.env, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Device(0).Strict(); got != tc.want {
			t.Errorf("%s=%q, mode %d: strict %v, want %v", strictEnv, tc.env, tc.mode, got, tc.want)
		}
		s.Close()
	}
}

// TestStrictReports: unexpected violations make the compute file's Close
// and System.Close fail and CheckStrict report them; expected ones are
// recorded but not reported.
func TestStrictReports(t *testing.T) {
	cfg := Default(Gaudi2, 1)
	cfg.Strict = StrictOn
	cfg.LockDir = t.TempDir()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := s.Device(0)
	f, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	d.violate(0, Violation{Kind: ViolationPageFault, Op: "DMA", Detail: "a test"})
	d.ExpectViolations(ViolationCBChanged)
	d.violate(0, Violation{Kind: ViolationCBChanged, Op: "DMA", Detail: "expected"})
	if err := f.Close(); !errors.Is(err, ErrViolation) || !strings.Contains(err.Error(), "a test") || strings.Contains(err.Error(), "expected") {
		t.Errorf("Close: %v", err)
	}
	if v := d.Violations(); len(v) != 2 || v[0].Expected || !v[1].Expected {
		t.Errorf("violations %+v", v)
	}
	if err := s.Close(); !errors.Is(err, ErrViolation) {
		t.Errorf("System.Close: %v", err)
	}
	d.TakeViolations()
	if err := s.CheckStrict(); err != nil {
		t.Errorf("after TakeViolations: %v", err)
	}
}

// TestParseMapsLine reads /proc/self/maps lines, file paths with spaces
// and anonymous names included, and refuses malformed ones.
func TestParseMapsLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want vma
		ok   bool
	}{
		{"7f0000000000-7f0000021000 rw-p 00000000 00:00 0 ", vma{start: 0x7f0000000000, end: 0x7f0000021000, write: true}, true},
		{"7f0000000000-7f0000001000 rw-s 0000a000 08:01 1234   /tmp/a b (deleted)",
			vma{start: 0x7f0000000000, end: 0x7f0000001000, write: true, shared: true, offset: 0xa000, dev: unix.Mkdev(8, 1), inode: 1234}, true},
		{"7f0000000000-7f0000001000 r--p 00000000 00:00 0                          [anon:gaudi]", vma{start: 0x7f0000000000, end: 0x7f0000001000}, true},
		{"7f0000000000-7f0000001000 rw-p 00000000 00:00", vma{}, false},
		{"7f0000000000 rw-p 00000000 00:00 0", vma{}, false},
		{"7f0000000000-10000000000000000 rw-p 00000000 00:00 0", vma{}, false},
		{"7f0000000000-7f0000001000 rw-p 0000000g 00:00 0", vma{}, false},
		{"", vma{}, false},
	} {
		got, ok := parseMapsLine([]byte(tc.line))
		if ok != tc.ok || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

// TestVMAQueryMatchesMaps: PROCMAP_QUERY (Linux 6.11) answers what
// /proc/self/maps says, for every mapping of the process.
func TestVMAQueryMatchesMaps(t *testing.T) {
	q, err := openVMAQuery()
	if err != nil {
		t.Skipf("no PROCMAP_QUERY: %v", err)
	}
	defer q.close()
	vmas, err := readMaps(procMaps)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range vmas {
		if want.start >= userAddrLimit {
			continue // [vsyscall]: not a VMA of the process
		}
		got, ok, err := q.query(want.start)
		if err != nil || !ok {
			t.Fatalf("%#x: %v, %v", want.start, ok, err)
		}
		if got != want {
			// The maps may have changed since they were read (the
			// runtime maps memory): compare with a fresh reading.
			again, _ := readMaps(procMaps)
			for _, v := range again {
				if v.start <= want.start && want.start < v.end {
					want = v
				}
			}
		}
		if got != want {
			t.Errorf("query %#x: %+v, maps %+v", want.start, got, want)
		}
	}
	if _, ok, err := q.query(0); ok || err != nil {
		t.Errorf("address 0: %v, %v", ok, err)
	}
}
