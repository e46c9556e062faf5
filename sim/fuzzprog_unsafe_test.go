package sim

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A syzkaller-style fuzzer of the simulator. Its input is a program: a
// sequence of calls, each an ioctl, an mmap or munmap, a reopen, a reset, a
// fault injection and so on, with fuzzed arguments (fuzzops_unsafe_test.go).
// Arguments are integers biased toward interesting values and toward what
// the simulator returned earlier in the program (handles, sequence numbers,
// device addresses: syzkaller's resources), and pointers into an arena the
// fuzzer owns, into mappings it made, or bogus ones. After each program
// every file, descriptor and mapping is closed and the invariants are
// checked: nothing panicked, every call returned within a bound (a
// watchdog dumps the goroutines otherwise), and closing released every
// goroutine, descriptor, mapping and byte of device memory accounting.
//
// Safety of the fuzzer itself. The simulator runs in this process and
// writes to the addresses it is given (process_vm_writev for ioctl
// outputs, plain stores for DMA into host memory mapped with
// HL_MEM_USERPTR). So an address the simulator may write through is always
// one of: the arena (guarded on both sides by PROT_NONE pages, so a range
// that starts in it ends in a fault, never in memory of the Go runtime),
// a mapping of ours that is still mapped, or an address that is never
// mapped (the guards, small integers, kernel and non-canonical addresses),
// which gives EFAULT. Host memory given to MEMORY MAP is always arena
// memory, which stays mapped until the System is closed; "unmapping" host
// memory under the device is modelled by replacing arena pages with
// PROT_NONE or read-only ones (opHost), which the simulator's DMA sees as
// gone exactly as it sees unmapped memory. Argument structs live in the
// arena, which the garbage collector does not scan, so bogus integers in
// their hl.Pointer members are no hazard; bogus values written into
// Pointer members are never small integers or resource values, which a
// stack scan could mistake for bad pointers.

// Program limits.
const (
	maxCalls       = 48
	maxPackets     = 16
	maxChunks      = 8
	maxDMASize     = 1 << 20 // LIN_DMA sizes are clamped: the DRAM is host memory
	maxCPDMASize   = 64 << 10
	residentLimit  = 256 << 20 // a program stops when the DRAM holds more
	literalWaitCap = 200_000   // µs: literal timeouts are cut to this; specials are not
)

// Watchdog bounds: a call that runs longer than softBound gets a device
// reset, which ends every wait on a CS or an interrupt (a wait with a huge
// timeout on a stuck CS is legitimate); one that runs twice as long gets a
// hard reset that kills the compute file, as the driver's kills its holder
// (SIGKILL also ends a wait no completion ends, such as a multi-CS wait on
// an empty list); one that still runs after hardBound is a hang.
const (
	softBound = 500 * time.Millisecond
	hardBound = 4 * time.Second
)

// ---- Sources --------------------------------------------------------------

// Value encodings (the low two bits of a tag byte; the rest is a small
// argument).
const (
	vSmall   = 0 // the value is the tag's upper six bits
	vSpecial = 1 // an interesting value of the argument's kind, by index
	vRes     = 2 // a value the simulator returned earlier, newest first
	vLit     = 3 // eight little-endian bytes follow
)

// val is an integer argument before resolution.
type val struct {
	how uint8
	n   uint64
}

func (v val) String() string {
	switch v.how {
	case vSmall:
		return fmt.Sprint(v.n)
	case vSpecial:
		return fmt.Sprintf("sp%d", v.n)
	case vRes:
		return fmt.Sprintf("res%d", v.n)
	}
	return fmt.Sprintf("%#x", v.n)
}

// zero reports whether v is the default encoding (a zero byte), which
// many arguments read as "the natural value".
func (v val) zero() bool { return v.how == vSmall && v.n == 0 }

// pmode says where a pointer argument points.
type pmode uint8

const (
	pBuilt    pmode = iota // the buffer the call built (the default)
	pNull                  // 0
	pArena                 // anywhere in the arena
	pGuardLo               // the PROT_NONE guard below the arena
	pGuardHi               // the PROT_NONE guard above it
	pKernel                // a kernel address
	pNonCanon              // a non-canonical address
	pSmall                 // 1..4095
	pMapping               // into a mapping made by mmap earlier
	pValue                 // a value the simulator returned
	pArenaEnd              // the arena's last bytes, running into the guard
	numPModes
)

var pmodeNames = [...]string{"built", "null", "arena", "guardlo", "guardhi", "kernel", "noncanon", "small", "mapping", "value", "arenaend"}

func (m pmode) hasOff() bool { return m >= pArena && m < numPModes && m != pValue }

// pval is a pointer argument before resolution.
type pval struct {
	mode pmode
	idx  uint8
	off  uint32
}

func (p pval) String() string {
	if p.mode >= numPModes {
		return "built"
	}
	s := pmodeNames[p.mode]
	if p.mode == pMapping || p.mode == pValue {
		s += fmt.Sprintf("[%d]", p.idx)
	}
	if p.mode.hasOff() {
		s += fmt.Sprintf("+%#x", p.off)
	}
	return s
}

// pclass is what the simulator does through a pointer, which limits where
// it may point (see the safety note above).
type pclass uint8

const (
	pcRead  pclass = iota // read with copyIn, from integer storage
	pcReadP               // read, from an hl.Pointer member
	pcWrite               // written with copyOut (hl.Pointer members, as it happens)
	pcHost                // host memory for MEMORY MAP: DMA reads and writes it
)

// source is where a program comes from: the fuzz engine's bytes (byteSrc)
// or a readable description (seedSrc, fuzzseed_unsafe_test.go). Names
// identify arguments for descriptions; the bytes ignore them.
type source interface {
	// next reports whether another call follows.
	next() bool
	choice(name string, n int) int
	num(name string) val
	ptr(name string) pval
	raw(name string, n int) []byte
}

// byteSrc decodes the fuzz engine's bytes; past the end every read is 0.
type byteSrc struct{ b []byte }

func (s *byteSrc) next() bool { return len(s.b) > 0 }

func (s *byteSrc) byte() byte {
	if len(s.b) == 0 {
		return 0
	}
	c := s.b[0]
	s.b = s.b[1:]
	return c
}

func (s *byteSrc) choice(_ string, n int) int { return int(s.byte()) % n }

func (s *byteSrc) num(string) val {
	t := s.byte()
	if t&3 != vLit {
		return val{how: t & 3, n: uint64(t >> 2)}
	}
	return val{how: vLit, n: binary.LittleEndian.Uint64(s.raw("", 8))}
}

func (s *byteSrc) ptr(string) pval {
	t := s.byte()
	p := pval{mode: pmode(t & 15), idx: t >> 4}
	if p.mode >= numPModes {
		p.mode = pBuilt
	}
	if p.mode.hasOff() {
		p.off = binary.LittleEndian.Uint32(s.raw("", 4))
	}
	return p
}

func (s *byteSrc) raw(_ string, n int) []byte {
	out := make([]byte, n)
	k := copy(out, s.b)
	s.b = s.b[k:]
	return out
}

// reader reads a call's arguments from a source and writes them into the
// call's line of the trace.
type reader struct {
	s    source
	line strings.Builder
}

func (r *reader) choice(name string, n int) int {
	v := r.s.choice(name, n)
	if v != 0 {
		fmt.Fprintf(&r.line, " %s=%d", name, v)
	}
	return v
}

func (r *reader) num(name string) val {
	v := r.s.num(name)
	if !v.zero() {
		fmt.Fprintf(&r.line, " %s=%v", name, v)
	}
	return v
}

func (r *reader) ptr(name string) pval {
	p := r.s.ptr(name)
	if p.mode != pBuilt {
		fmt.Fprintf(&r.line, " %s=%v", name, p)
	}
	return p
}

func (r *reader) raw(name string, n int) []byte {
	b := r.s.raw(name, n)
	if n > 0 {
		fmt.Fprintf(&r.line, " %s=%x", name, b)
	}
	return b
}

// ---- The arena ------------------------------------------------------------

// Arena layout: a scratch part for argument structs and the arrays they
// point to, then host memory for command buffers and DMA. PROT_NONE guards
// surround it.
const (
	arenaSize   = 8 << 20
	scratchSize = 2 << 20
	hostOff     = scratchSize
	hostSize    = arenaSize - scratchSize
	guardSize   = 1 << 20
	hostPages   = hostSize / pageSize
)

// Protection of host pages (opHost).
const (
	protRW   = 0
	protNone = 1
	protRO   = 2
)

// arena is memory the fuzzer owns, outside the Go heap.
type arena struct {
	all     []byte
	mem     []byte
	base    uint64 // &mem[0]
	lo, end uint64 // the lower guard's start, the upper guard's start
	next    int    // scratch bump pointer
	prot    [hostPages]uint8
}

func newArena() (*arena, error) {
	all, err := unix.Mmap(-1, 0, arenaSize+2*guardSize, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, err
	}
	a := &arena{all: all, mem: all[guardSize : guardSize+arenaSize : guardSize+arenaSize]}
	a.base = uint64(uintptr(unsafe.Pointer(&a.mem[0])))
	a.lo, a.end = a.base-guardSize, a.base+arenaSize
	if err := unix.Mprotect(a.mem, unix.PROT_READ|unix.PROT_WRITE); err != nil {
		unix.Munmap(all)
		return nil, err
	}
	return a, nil
}

// reset gives the arena fresh zero pages, all writable.
func (a *arena) reset() error {
	_, err := unix.MmapPtr(-1, 0, unsafe.Pointer(&a.mem[0]), arenaSize, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE|unix.MAP_FIXED)
	a.next = 0
	a.prot = [hostPages]uint8{}
	return err
}

func (a *arena) free() { unix.Munmap(a.all) }

// alloc returns n bytes of scratch, 64-byte aligned. Scratch wraps around
// when a program uses it all; what it overwrites is only bytes.
func (a *arena) alloc(n int) []byte {
	n = (n + 63) &^ 63
	if n > scratchSize {
		n = scratchSize
	}
	if a.next+n > scratchSize {
		a.next = 0
	}
	b := a.mem[a.next : a.next+n : a.next+n]
	a.next += n
	clear(b)
	return b
}

func addrOfBytes(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// inArena reports whether [addr, addr+n) lies in the arena.
func (a *arena) inArena(addr, n uint64) bool {
	return addr >= a.base && addr-a.base <= arenaSize && n <= arenaSize-(addr-a.base)
}

// hostWritable reports whether the host pages under arena offset [off,
// off+n) are writable by us.
func (a *arena) hostWritable(off, n uint64) bool {
	if off < hostOff {
		return true
	}
	for p := (off - hostOff) / pageSize; p*pageSize+hostOff < off+n && p < hostPages; p++ {
		if a.prot[p] != protRW {
			return false
		}
	}
	return true
}

// ---- The watchdog ---------------------------------------------------------

// callWatch is the watchdog: it bounds how long each call runs.
type callWatch struct {
	rescue   func(kill bool)
	describe func() string // the program so far, for the report of a hang

	mu     sync.Mutex
	calls  map[int]*watchedCall
	nextID int
	stop   chan struct{}
	done   chan struct{}
	rescs  sync.WaitGroup
}

type watchedCall struct {
	desc    string
	start   time.Time
	rescued int // rescues started: a reset, then a killing one
}

func startCallWatch(rescue func(kill bool)) *callWatch {
	w := &callWatch{rescue: rescue, calls: map[int]*watchedCall{}, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// begin registers a call; end unregisters it.
func (w *callWatch) begin(desc string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nextID++
	w.calls[w.nextID] = &watchedCall{desc: desc, start: time.Now()}
	return w.nextID
}

func (w *callWatch) end(id int) {
	w.mu.Lock()
	delete(w.calls, id)
	w.mu.Unlock()
}

func (w *callWatch) run() {
	defer close(w.done)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		w.mu.Lock()
		for _, c := range w.calls {
			age := time.Since(c.start)
			if w.rescue != nil && c.rescued < 2 && age > time.Duration(c.rescued+1)*softBound {
				kill := c.rescued == 1
				c.rescued++
				w.rescs.Add(1)
				go func() {
					defer w.rescs.Done()
					id := w.begin(fmt.Sprintf("rescue (kill %v) for %s", kill, c.desc))
					w.rescue(kill)
					w.end(id)
				}()
			}
			if age > hardBound {
				desc := c.desc
				w.mu.Unlock()
				prog := ""
				if w.describe != nil {
					prog = w.describe()
				}
				panic(fmt.Sprintf("sim fuzz: %s has not returned after %v (a reset and a killing reset did not end it)\n\nprogram:\n%s\n\n%s",
					desc, age.Round(time.Millisecond), prog, allStacks()))
			}
		}
		w.mu.Unlock()
	}
}

// close stops the watchdog after the rescues it started ended.
func (w *callWatch) close() {
	w.rescs.Wait()
	close(w.stop)
	<-w.done
}

// allStacks is every goroutine's stack.
func allStacks() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// ---- Process resources ----------------------------------------------------

// procCounts is what closing a System must give back.
type procCounts struct {
	goroutines int
	fds        int
	simMaps    int // mappings of the simulator's memfds
}

func takeCounts() (procCounts, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return procCounts{}, err
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return procCounts{}, err
	}
	return procCounts{
		goroutines: runtime.NumGoroutine(),
		fds:        len(ents),
		simMaps:    bytes.Count(maps, []byte("gaudi-sim")),
	}, nil
}

// settle waits up to a second for the counts to come back to base: a
// goroutine that has been told to end may still be on its way out.
func settle(base procCounts) (procCounts, bool) {
	deadline := time.Now().Add(time.Second)
	for {
		now, err := takeCounts()
		if err == nil && now.goroutines <= base.goroutines && now.fds <= base.fds && now.simMaps <= base.simMaps {
			return now, true
		}
		if time.Now().After(deadline) {
			return now, false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// ---- The fuzz targets -----------------------------------------------------

// fuzzEnv is what one fuzz target's programs share in a process: the
// arena, the lock directory and the driver the devices behave as (0 for
// the upstream one).
type fuzzEnv struct {
	mu      sync.Mutex
	a       *arena
	lockDir string
	driver  Driver
}

func newFuzzEnv(f *testing.F, driver Driver) *fuzzEnv {
	a, err := newArena()
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(a.free)
	return &fuzzEnv{a: a, lockDir: f.TempDir(), driver: driver}
}

// FuzzProgramGaudi2 runs programs against a simulated Gaudi2 of the
// upstream driver. Seeds: testdata/fuzz/FuzzProgramGaudi2
// (fuzzseed_unsafe_test.go).
func FuzzProgramGaudi2(f *testing.F) { fuzzProgram(f, Gaudi2, DriverUpstream) }

// FuzzProgramGaudi runs programs against a simulated first-generation Gaudi.
// Seeds: testdata/fuzz/FuzzProgramGaudi.
func FuzzProgramGaudi(f *testing.F) { fuzzProgram(f, Gaudi, DriverUpstream) }

// FuzzProgramGaudi2OOT runs programs against a simulated Gaudi2 of the
// out-of-tree driver, whose programs also call the NIC ioctl, MEMORY
// REG_DMABUF_FD (of the program's own exports, among other descriptors)
// and its INFO ops. Seeds: testdata/fuzz/FuzzProgramGaudi2OOT.
func FuzzProgramGaudi2OOT(f *testing.F) { fuzzProgram(f, Gaudi2, DriverOutOfTree) }

func fuzzProgram(f *testing.F, asic ASIC, driver Driver) {
	env := newFuzzEnv(f, driver)
	f.Fuzz(func(t *testing.T, prog []byte) {
		env.mu.Lock()
		defer env.mu.Unlock()
		runProgram(t, env, asic, &byteSrc{b: prog})
	})
}

// runProgram runs one program and checks the invariants; it returns the
// runner for tests that look at what happened.
func runProgram(t testing.TB, env *fuzzEnv, asic ASIC, s source) *runner {
	t.Helper()
	base, err := takeCounts()
	if err != nil {
		t.Skip("no /proc:", err)
	}
	r := newRunner(t, env, asic, s)
	finished := false
	defer func() {
		if !finished { // a panic, or t.Fatal
			t.Logf("program (%s), abandoned:\n%s", asic, r.describe())
			r.abandon()
			env.a.reset()
		} else if t.Failed() {
			t.Logf("program (%s):\n%s", asic, r.describe())
		}
	}()
	r.run(s)
	r.finish()
	finished = true
	if now, ok := settle(base); !ok {
		t.Errorf("closing left %d goroutines (was %d), %d descriptors (was %d), %d simulator mappings (was %d)\n%s",
			now.goroutines, base.goroutines, now.fds, base.fds, now.simMaps, base.simMaps, allStacks())
	}
	if err := env.a.reset(); err != nil {
		t.Fatalf("arena reset: %v", err)
	}
	return r
}
