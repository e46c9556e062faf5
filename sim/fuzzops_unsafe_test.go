package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The calls of a fuzz program (see fuzzprog_unsafe_test.go): each op reads
// its arguments from the source and returns what executes it, so that an
// async call can run on a goroutine of its own.

// opKind is a call of a program.
type opKind uint8

const (
	opInfo   opKind = iota // INFO ioctl, any op, on any node
	opCB                   // CB ioctl
	opCS                   // CS ioctl of every kind
	opWait                 // WAIT_CS of every kind
	opMem                  // MEMORY ioctl
	opDebug                // DEBUG ioctl
	opMmap                 // mmap of a CB, timestamp or block handle
	opMunmap               // munmap of a mapping made earlier
	opWrite                // packets written into the arena or a CB mapping
	opFile                 // reopen, close, dup, control open
	opReset                // a device reset
	opFault                // Device.InjectFault
	opState                // Device.SetState
	opEvent                // Device.Record* and Notify
	opHost                 // arena host pages made PROT_NONE, read-only or fresh
	opSleep                // let the engines run
	opJoin                 // wait for the async calls
	opNIC                  // NIC ioctl (out-of-tree driver programs only)
	opChan                 // a PDMA channel set up: MAP_BLOCK, mmap, ring, registers (Gaudi3 only)
	opReg                  // a store to a register of a mapped channel block (Gaudi3 only)
	opPQM                  // PQM packets into a channel's ring, and MSQ_PI moved (Gaudi3 only)
	numOps

	// numUpstreamOps is how many ops a program of the upstream driver
	// chooses from: the ops the out-of-tree driver adds come last, so
	// that the upstream targets' corpora keep their meaning.
	numUpstreamOps = opNIC
	// numOOTOps is how many ops a Gaudi2 program of the out-of-tree
	// driver chooses from; Gaudi3 programs choose from all.
	numOOTOps = opNIC + 1
)

var opNames = [...]string{"INFO", "CB", "CS", "WAIT_CS", "MEMORY", "DEBUG", "mmap", "munmap", "write", "file", "reset", "fault", "state", "event", "host", "sleep", "join", "NIC", "chan", "reg", "pqm"}

func (o opKind) String() string { return opNames[o] }

// asyncable reports whether the op may run beside the next calls.
// munmap, write and host change memory the fuzzer itself touches and
// run alone; file ops keep the bookkeeping simple.
func (o opKind) asyncable() bool {
	switch o {
	case opMunmap, opWrite, opHost, opFile, opSleep, opJoin, opChan, opReg, opPQM:
		return false
	}
	return true
}

// kind says which interesting values and which earlier results an integer
// argument draws from.
type kind uint8

const (
	kAny kind = iota
	kSize
	kCount
	kQueue
	kSeq
	kTimeoutUs
	kTimeoutS
	kFlags
	kCB    // CB handles
	kMem   // device memory handles
	kVA    // device virtual addresses returned by MAP and CB INFO
	kAddr  // device addresses for packets
	kSig   // encapsulated signal handle ids
	kTS    // timestamp buffer handles
	kBlock // HW block handles
	kBlockAddr
	kFD
	kInfoOp
	kIRQ
	kErrno
	kEngine
	numKinds
)

// simFile is a File or a Handle.
type simFile interface {
	Ioctl(req uint, arg unsafe.Pointer) error
	Mmap(offset int64, length int, prot, flags int) ([]byte, error)
	Munmap(b []byte) error
	Close() error
}

const (
	fileCompute = iota
	fileDup
	fileControl
)

type fileRec struct {
	f      simFile
	file   *File
	kind   int
	closed bool
}

// mapRec is a mapping the program made.
type mapRec struct {
	b      []byte
	owner  *fileRec
	what   string
	handle uint64
	prot   int
	live   bool
}

// hostMap is arena memory mapped into the device.
type hostMap struct{ va, addr, size uint64 }

// writeRec is where packets were written: arena memory at addr, or a
// mapping at off.
type writeRec struct {
	addr uint64
	m    *mapRec
	off  uint64
	n    uint64
}

var errNoFile = errors.New("no such file")

// runner executes one program.
type runner struct {
	t      testing.TB
	a      *arena
	asic   ASIC
	fm     packet.Format
	sys    *System
	d      *Device
	legacy bool
	driver Driver
	order  int
	wd     *callWatch
	spec   [numKinds][]uint64

	mu       sync.Mutex
	pools    [numKinds][]uint64
	files    []*fileRec
	compute  *fileRec
	maps     []*mapRec
	writes   []writeRec
	hostMaps []hostMap
	chans    []*chanRec        // PDMA channels set up (Gaudi3)
	bufSize  map[uint64]uint64 // mmap handle -> buffer size
	cbVAs    map[uint64]uint64 // CB device VA -> CB handle
	written  map[uint64]uint64 // CB handle -> packet bytes written into its mapping
	fds      []int
	evfd     int
	trace    []string
	async    sync.WaitGroup
	stopped  bool
}

// smallDRAM is the DRAM size of the fuzzed devices: the least a device may
// have, as every byte a program writes is host memory.
func smallDRAM(asic ASIC) uint64 {
	p, _ := newProfile(asic, 0)
	kmd := p.dramUserBase - p.dramBase
	if p.dramVirtual {
		return kmd + p.dramPageSize // 2 pages of 768 MB
	}
	return kmd + 512<<20
}

func newRunner(t testing.TB, env *fuzzEnv, asic ASIC, s source) *runner {
	t.Helper()
	rd := &reader{s: s}
	rd.line.WriteString("header:")
	legacy := rd.choice("legacy", 8) == 7
	wd := rd.choice("watchdog", 2)
	order := rd.choice("order", 4)
	bw := rd.choice("pcie", 4)
	driver := env.driver
	if driver == 0 {
		driver = DriverUpstream // whatever GAUDI_SIM_DRIVER says: a corpus means one driver
	}
	if driver == DriverOutOfTree {
		legacy = false // the out-of-tree driver has no legacy nodes
	}
	// Strict mode stays on: a program does on purpose much of what it
	// reports (DMA into host pages taken away or replaced, memory unmapped
	// under a queued CS, page faults, command buffers and argument memory
	// rewritten while the device reads them, packets without barriers), so
	// those kinds are expected (ExpectViolations below) and only recorded;
	// the detectors still run on every program, which is what fuzzes them
	// (a panic, a hang, a race or a leak in strict mode's own code fails
	// the target). A stack address is never expected: the fuzzer's
	// arguments live in its arena, so such a report is a false positive.
	cfg := Config{Devices: Default(asic, 1).Devices, LockDir: env.lockDir, Legacy: legacy, Driver: driver, Strict: StrictOn}
	dc := &cfg.Devices[0]
	dc.DRAMSize = smallDRAM(asic)
	dc.ReleaseWatchdog = 20 * time.Millisecond
	if wd == 1 {
		dc.ReleaseWatchdog = 10 * time.Second
	}
	if bw == 3 {
		dc.PCIeBandwidth = 1 << 30
	}
	sys, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{
		t: t, a: env.a, asic: asic, fm: packet.Gaudi2, sys: sys, d: sys.Device(0), legacy: legacy, driver: driver, order: order,
		bufSize: map[uint64]uint64{}, cbVAs: map[uint64]uint64{}, written: map[uint64]uint64{}, evfd: -1,
	}
	switch asic {
	case Gaudi:
		r.fm = packet.Gaudi
	case Gaudi3:
		r.fm = packet.Gaudi3
	}
	r.d.ExpectViolations(expectedViolations...)
	r.trace = append(r.trace, rd.line.String())
	r.wd = startCallWatch(func(kill bool) {
		if kill {
			r.d.killingReset(0)
		} else {
			r.d.Reset()
		}
	})
	r.wd.describe = r.describe
	f, err := r.d.Open()
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	r.compute = &fileRec{f: f, file: f, kind: fileCompute}
	r.files = append(r.files, r.compute)
	if fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err == nil {
		r.evfd = fd
		r.keep(kFD, uint64(fd))
	}
	r.initSpecials()
	return r
}

// expectedViolations are the strict mode violations a program may cause
// legitimately (see newRunner).
var expectedViolations = []ViolationKind{
	ViolationArgumentChanged, // DMA, a write or an async call rewrites arena memory another call reads
	ViolationHostReplaced,    // opHost
	ViolationFreedInFlight,   // MEMORY UNMAP, FREE or munmap beside a queued CS
	ViolationPageFault,       // any address in a packet
	ViolationCBChanged,       // writes into a CB mapping beside its CS
	ViolationBarrierHazard,   // packets without the barrier bit
}

// oot reports whether the program runs on the out-of-tree driver.
func (r *runner) oot() bool { return r.driver == DriverOutOfTree }

// choices is n for the upstream driver's programs and n+extra for the
// out-of-tree driver's, whose extra choices come last.
func (r *runner) choices(n, extra int) int {
	if r.oot() {
		return n + extra
	}
	return n
}

// ootInfoOpList are the INFO ops only the out-of-tree driver serves.
var ootInfoOpList = []uint64{hl.HL_INFO_HABANA_LINK_STATE, hl.HL_INFO_HABANA_LINK_COUNTERS, hl.HL_INFO_TIME_SYNC_PER_DIE,
	hl.HL_INFO_MEMORY_CONSUMPTION, hl.HL_INFO_CONFIG_DRM_ACCEL_ENABLED, hl.HL_INFO_MODULE_PARAMS}

// initSpecials fills the interesting values of each kind; the
// out-of-tree driver's programs also draw its own INFO ops.
func (r *runner) initSpecials() {
	r.spec = specials(&r.d.prof)
	if r.oot() {
		r.spec[kInfoOp] = append(r.spec[kInfoOp], ootInfoOpList...)
	}
	if r.asic == Gaudi3 {
		gaudi3Specials(&r.spec)
	}
}

// specials are the interesting values of each kind on a device.
func specials(p *profile) (spec [numKinds][]uint64) {
	huge := ^uint64(0)
	spec[kAny] = []uint64{0, 1, 2, 3, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xffffffff,
		1 << 32, 1 << 47, 1 << 63, huge, huge - 1, 4096}
	spec[kSize] = []uint64{0, 1, 7, 8, 16, 64, 4095, 4096, 4097, 8192, 1 << 16, 2 << 20, 2<<20 + 4096, p.dramPageSize,
		2 * p.dramPageSize, hl.HL_MAX_CB_SIZE, hl.HL_MAX_CB_SIZE + 1, 1 << 31, 1<<32 - 1, 1 << 32, 1 << 40, huge, huge - 4095,
		hostSize, 6 << 20, 512 << 20}
	spec[kCount] = []uint64{0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 255, 256, 511, 512, 513, 1 << 15,
		1 << 16, 1 << 20, 1<<20 + 1, 1 << 31, 1<<32 - 1, huge}
	max := p.maxPendingCS()
	spec[kSeq] = []uint64{0, 1, 2, 3, 4, max - 1, max, max + 1, 2 * max, 1 << 32, 1 << 63, huge - 1, huge}
	spec[kTimeoutUs] = []uint64{0, 1, 10, 100, 1000, 10_000, 100_000, 1 << 32, 1<<32 + 1, 1 << 63, huge}
	spec[kTimeoutS] = []uint64{0, 1, 2, 30, 600, 4294968, 1 << 31, 0xffffffff}
	for i := range 64 {
		spec[kFlags] = append(spec[kFlags], 1<<i)
	}
	for _, typ := range []uint64{mmapTypeCB, mmapTypeTS, mmapTypeBlock, 0, 0x1f << mmapTypeShift} {
		for _, id := range []uint64{0, 1, 2, 1 << 20, mmapValueMask} {
			spec[kCB] = append(spec[kCB], (id|typ)<<12)
		}
	}
	spec[kTS], spec[kBlock], spec[kMem] = spec[kCB], spec[kCB], []uint64{0, 1, 2, 1 << 31, huge, 1 << 32}
	cfg, cfgSize := p.cfgSpace()
	v := &p.vm
	spec[kVA] = []uint64{0, v.host.start, v.host.end, v.hostHuge.start, v.dram.start, v.dram.end, p.dramUserBase, p.dmmuStart,
		huge, huge - 4095, 1 << 47}
	addr := []uint64{p.sramBase, p.sramUserBase, p.sramBase + p.sramSize - 8, p.sramBase + p.sramSize, p.dramBase, p.dramUserBase,
		p.dramBase + p.dramSize - 8, p.dramBase + p.dramSize, p.dmmuStart, cfg, cfg + cfgSize - 4, v.host.start, 0, huge - 7}
	if p.dramVirtual {
		sm := cfg + gaudi2SMDcore0
		l := gaudi2SMLayout
		addr = append(addr, sm, sm+4*uint64(p.firstSOB[0]), sm+l.payL, sm+l.payH, sm+l.payData, sm+l.arm, sm+l.cfg, sm+l.st,
			cfg+msixDoorbell, gaudi2DoorbellVA)
	} else {
		sm := cfg + gaudiSMWestSouth
		l := gaudiSMLayout
		addr = append(addr, sm, sm+4*uint64(p.firstSOB[0]), sm+l.payL, sm+l.payH, sm+l.payData, sm+l.arm, sm+l.st,
			cfg+gaudiSMEastNorth, cfg+gaudiSMEastSouth)
	}
	props := queueTable(p)
	var queues, bad []uint64
	for i, q := range props {
		switch {
		case q.typ == queueNA || q.typ == queueCPU || q.driverOnly || q.binned || !q.enabled:
			if len(bad) < 6 {
				bad = append(bad, uint64(i))
			}
		case len(queues) < 40:
			queues = append(queues, uint64(i))
			if q.qmBase != 0 && len(queues) <= 2 {
				// The QMAN, and the stream's FENCE0 and FENCE1 counters.
				fence0 := uint64(gaudiQMFence0)
				if p.dramVirtual {
					fence0 = gaudi2QMFence0
				}
				f := cfg + q.qmBase + fence0 + 4*uint64(q.stream)
				addr = append(addr, cfg+q.qmBase, f, f+qmFenceStride)
			}
		}
	}
	spec[kAddr] = addr
	spec[kQueue] = append(append(queues, bad...), uint64(len(props)), huge)
	spec[kSig] = []uint64{0, 1, 2, 0xffffffff}
	for _, b := range gaudi2UserBlocks[:8] {
		spec[kBlockAddr] = append(spec[kBlockAddr], gaudi2CFGBase+uint64(b.addr))
	}
	spec[kBlockAddr] = append(spec[kBlockAddr], gaudi2CFGBase+uint64(gaudi2UserBlocks[len(gaudi2UserBlocks)-1].addr), gaudi2CFGBase, 0, cfg+4)
	spec[kFD] = []uint64{0, 1, 2, 0xffffffff, 1 << 20}
	spec[kInfoOp] = []uint64{hl.HL_INFO_HW_IP_INFO, hl.HL_INFO_HW_EVENTS, hl.HL_INFO_DRAM_USAGE, hl.HL_INFO_HW_IDLE,
		hl.HL_INFO_DEVICE_STATUS, 5, hl.HL_INFO_DEVICE_UTILIZATION, hl.HL_INFO_HW_EVENTS_AGGREGATE, hl.HL_INFO_CLK_RATE,
		hl.HL_INFO_RESET_COUNT, hl.HL_INFO_TIME_SYNC, hl.HL_INFO_CS_COUNTERS, hl.HL_INFO_PCI_COUNTERS,
		hl.HL_INFO_CLK_THROTTLE_REASON, hl.HL_INFO_SYNC_MANAGER, hl.HL_INFO_TOTAL_ENERGY, hl.HL_INFO_PLL_FREQUENCY,
		hl.HL_INFO_POWER, hl.HL_INFO_OPEN_STATS, 19, 20, hl.HL_INFO_DRAM_REPLACED_ROWS, hl.HL_INFO_DRAM_PENDING_ROWS,
		hl.HL_INFO_LAST_ERR_OPEN_DEV_TIME, hl.HL_INFO_CS_TIMEOUT_EVENT, hl.HL_INFO_RAZWI_EVENT,
		hl.HL_INFO_DEV_MEM_ALLOC_PAGE_SIZES, hl.HL_INFO_SECURED_ATTESTATION, hl.HL_INFO_REGISTER_EVENTFD,
		hl.HL_INFO_UNREGISTER_EVENTFD, hl.HL_INFO_GET_EVENTS, hl.HL_INFO_UNDEFINED_OPCODE_EVENT,
		hl.HL_INFO_ENGINE_STATUS, hl.HL_INFO_PAGE_FAULT_EVENT, hl.HL_INFO_USER_MAPPINGS, hl.HL_INFO_FW_GENERIC_REQ,
		hl.HL_INFO_HW_ERR_EVENT, hl.HL_INFO_FW_ERR_EVENT, hl.HL_INFO_USER_ENGINE_ERR_EVENT, 39, hl.HL_INFO_DEV_SIGNED,
		41, 0xffffffff}
	spec[kIRQ] = []uint64{0, 1, 9, 10, 47, 48, 49, 111, 112, 0xFFE, 0xFFF, 0xFFD}
	spec[kErrno] = []uint64{uint64(unix.EINVAL), uint64(unix.ENOMEM), uint64(unix.EIO), uint64(unix.EBUSY),
		uint64(unix.EAGAIN), uint64(unix.EINTR), uint64(unix.EFAULT), uint64(unix.EPERM), uint64(unix.ENODEV),
		uint64(unix.ETIMEDOUT), uint64(unix.ENOTTY)}
	spec[kEngine] = []uint64{0, 1, 2, 3, 4, 5, 8, 16, 32, 64, 100, 200, 255, 256, 1000, 0xffffffff}
	return spec
}

// poolOf is the pool of earlier results a kind draws from.
func poolOf(k kind) kind {
	switch k {
	case kAddr:
		return kVA
	case kSize, kCount, kTimeoutUs, kTimeoutS, kFlags, kErrno, kInfoOp, kIRQ, kEngine, kQueue, kBlockAddr:
		return kAny
	}
	return k
}

// keep remembers a value the simulator returned.
func (r *runner) keep(k kind, v uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keepLocked(k, v)
}

func (r *runner) keepLocked(k kind, v uint64) {
	for _, kk := range []kind{k, kAny} {
		p := r.pools[kk]
		if len(p) >= 64 {
			p = append(p[:0], p[1:]...)
		}
		r.pools[kk] = append(p, v)
	}
}

// u resolves an integer argument of kind k.
func (r *runner) u(v val, k kind) uint64 {
	switch v.how {
	case vSpecial:
		if l := r.spec[k]; len(l) > 0 {
			return l[v.n%uint64(len(l))]
		}
	case vRes:
		r.mu.Lock()
		defer r.mu.Unlock()
		p := r.pools[poolOf(k)]
		if len(p) == 0 {
			p = r.pools[kAny]
		}
		if len(p) == 0 {
			return 0
		}
		return p[len(p)-1-int(v.n%uint64(len(p)))]
	}
	return v.n
}

// or resolves v, or gives def for the default encoding.
func (r *runner) or(v val, k kind, def uint64) uint64 {
	if v.zero() {
		return def
	}
	return r.u(v, k)
}

// timeoutUs resolves a wait timeout: literals are cut short, so that only
// the interesting values (2^32 µs and up among them) wait long.
func (r *runner) timeoutUs(v val) uint64 {
	if v.how == vLit {
		return v.n % literalWaitCap
	}
	return r.u(v, kTimeoutUs)
}

// guardAddr is an address in the lower guard.
func (r *runner) guardAddr(off uint32) uint64 { return r.a.lo + uint64(off)%guardSize }

// addr resolves a pointer argument of class c; built is the call's own
// buffer.
func (r *runner) addr(p pval, c pclass, built uint64) uint64 {
	off := uint64(p.off)
	switch p.mode {
	case pNull:
		return 0
	case pArena:
		return r.a.base + off%arenaSize
	case pGuardLo:
		return r.guardAddr(p.off)
	case pGuardHi:
		return r.a.end + off%guardSize
	case pKernel:
		return 0xffff800000000000 + off
	case pNonCanon:
		return 0x0800000000000000 + off
	case pSmall:
		if c == pcRead || c == pcHost {
			return 1 + off%4095
		}
		return r.guardAddr(p.off)
	case pMapping:
		if c == pcHost {
			return r.guardAddr(p.off)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		var live []*mapRec
		for _, m := range r.maps {
			if m.live {
				live = append(live, m)
			}
		}
		if len(live) == 0 {
			return r.guardAddr(p.off)
		}
		m := live[len(live)-1-int(p.idx)%len(live)]
		return addrOfBytes(m.b) + off%uint64(len(m.b))
	case pValue:
		if c != pcRead {
			return r.guardAddr(p.off)
		}
		return r.u(val{how: vRes, n: uint64(p.idx)}, kAny)
	case pArenaEnd:
		return r.a.end - 1 - off%8192
	}
	return built
}

// pickFile chooses the file a call goes to: the compute file, a
// duplicate, a control file, or the program's first file (often closed).
func (r *runner) pickFile(sel int) *fileRec {
	r.mu.Lock()
	defer r.mu.Unlock()
	newest := func(kind int) *fileRec {
		for i := len(r.files) - 1; i >= 0; i-- {
			if f := r.files[i]; f.kind == kind && !f.closed {
				return f
			}
		}
		return nil
	}
	var f *fileRec
	switch sel {
	case 1:
		f = newest(fileDup)
	case 2:
		f = newest(fileControl)
	case 3:
		f = r.files[0]
	}
	if f == nil {
		f = r.compute
	}
	if f == nil {
		for i := len(r.files) - 1; i >= 0; i-- {
			if r.files[i].kind == fileCompute {
				return r.files[i]
			}
		}
	}
	return f
}

// run executes the program's calls.
func (r *runner) run(s source) {
	for n := 0; n < maxCalls && s.next() && !r.stopped; n++ {
		rd := &reader{s: s}
		op := opKind(rd.s.choice("call", r.numOpChoices()))
		fmt.Fprintf(&rd.line, "#%d %v", n, op)
		async := rd.choice("async", 4) == 3 && op.asyncable()
		exec := r.decode(op, rd)
		if async {
			rd.line.WriteString(" (async)")
		}
		line := rd.line.String()
		r.mu.Lock()
		idx := len(r.trace)
		r.trace = append(r.trace, line)
		r.mu.Unlock()
		do := func() {
			id := r.wd.begin(line)
			res := exec()
			r.wd.end(id)
			r.mu.Lock()
			r.trace[idx] += " = " + res
			r.mu.Unlock()
		}
		if async {
			r.async.Add(1)
			go func() {
				defer r.async.Done()
				do()
			}()
		} else {
			do()
		}
		if r.d.ResidentDRAM() > residentLimit {
			r.stopped = true
			r.mu.Lock()
			r.trace = append(r.trace, "(stopped: the DRAM holds too much)")
			r.mu.Unlock()
		}
	}
}

func (r *runner) decode(op opKind, rd *reader) func() string {
	switch op {
	case opInfo:
		return r.opInfo(rd)
	case opCB:
		return r.opCB(rd)
	case opCS:
		return r.opCS(rd)
	case opWait:
		return r.opWait(rd)
	case opMem:
		return r.opMem(rd)
	case opDebug:
		return r.opDebug(rd)
	case opMmap:
		return r.opMmap(rd)
	case opMunmap:
		return r.opMunmap(rd)
	case opWrite:
		return r.opWrite(rd)
	case opFile:
		return r.opFile(rd)
	case opReset:
		return r.opReset(rd)
	case opFault:
		return r.opFault(rd)
	case opState:
		return r.opState(rd)
	case opEvent:
		return r.opEvent(rd)
	case opHost:
		return r.opHost(rd)
	case opSleep:
		return r.opSleep(rd)
	case opNIC:
		return r.opNIC(rd)
	case opChan:
		return r.opChan(rd)
	case opReg:
		return r.opReg(rd)
	case opPQM:
		return r.opPQM(rd)
	}
	return func() string { r.async.Wait(); return "joined" }
}

func errStr(err error) string {
	if err == nil {
		return "ok"
	}
	var e unix.Errno
	if errors.As(err, &e) {
		if n := unix.ErrnoName(e); n != "" {
			return n
		}
	}
	return err.Error()
}

// ---- ioctl requests -------------------------------------------------------

// ioctlSpec is how a call reaches the driver: which file, which request
// number (the right one, another size, other direction bits, another
// encoding, or anything) and whether the argument pointer is NULL.
type ioctlSpec struct {
	nr     int
	file   int
	req    int
	reqv   val
	argNil bool
	arg    []byte
}

var (
	drmReqs    = [...]uint{hl.DRM_IOCTL_HL_INFO, hl.DRM_IOCTL_HL_CB, hl.DRM_IOCTL_HL_CS, hl.DRM_IOCTL_HL_WAIT_CS, hl.DRM_IOCTL_HL_MEMORY, hl.DRM_IOCTL_HL_DEBUG, hl.DRM_IOCTL_HL_NIC}
	legacyReqs = [...]uint{hl.HL_LEGACY_IOCTL_INFO, hl.HL_LEGACY_IOCTL_CB, hl.HL_LEGACY_IOCTL_CS, hl.HL_LEGACY_IOCTL_WAIT_CS, hl.HL_LEGACY_IOCTL_MEMORY, hl.HL_LEGACY_IOCTL_DEBUG, legacyNIC}
)

// legacyNIC is what a legacy 'H' encoding of the NIC ioctl would be
// (_IOWR('H', HL_IOCTL_NIC + 1, struct hl_nic_args)); no driver has it.
const legacyNIC = 3<<30 | 32<<16 | 'H'<<8 | (hl.HL_IOCTL_NIC + 1)

func (r *runner) readIoctl(rd *reader, nr int) ioctlSpec {
	c := ioctlSpec{nr: nr}
	c.file = rd.choice("file", 4)
	c.req = rd.choice("req", 8)
	if c.req >= 4 {
		c.reqv = rd.num("reqv")
	}
	c.argNil = rd.choice("argnil", 16) == 15
	n := 64
	if c.req == 4 || c.req == 6 {
		n += 0x4000 // a larger size is copied in and out whole
	}
	c.arg = r.a.alloc(n)
	return c
}

func (r *runner) request(c *ioctlSpec) uint {
	base, other := drmReqs[c.nr], legacyReqs[c.nr]
	if r.legacy {
		base, other = other, base
	}
	switch c.req {
	case 4:
		return base&^(0x3fff<<16) | uint(r.u(c.reqv, kSize)&0x3fff)<<16
	case 5:
		return base&^(3<<30) | uint(r.u(c.reqv, kAny)&3)<<30
	case 6:
		return uint(uint32(r.u(c.reqv, kAny)))
	case 7:
		return other
	}
	return base
}

// do issues the ioctl with the argument built in c.arg.
func (r *runner) do(c *ioctlSpec) error {
	f := r.pickFile(c.file)
	if f == nil {
		return errNoFile
	}
	p := unsafe.Pointer(&c.arg[0])
	if c.argNil {
		p = nil
	}
	return f.f.Ioctl(r.request(c), p)
}

// ---- INFO -----------------------------------------------------------------

func (r *runner) opInfo(rd *reader) func() string {
	c := r.readIoctl(rd, hl.HL_IOCTL_INFO)
	op := rd.num("op")
	size := rd.num("size")
	ret := rd.ptr("ret")
	u0 := rd.num("u0")
	pad := rd.num("pad")
	buf := r.a.alloc(4096)
	if r.oot() {
		// Some of the out-of-tree driver's ops read the return buffer
		// first (DEVICE_STATUS's soft_reset_stall, MEMORY_CONSUMPTION's
		// report, LINK_COUNTERS' pointers).
		copy(buf, rd.raw("in", rd.choice("inlen", 25)))
	}
	return func() string {
		a := (*hl.InfoArgs)(unsafe.Pointer(&c.arg[0]))
		a.Op = uint32(r.u(op, kInfoOp))
		a.ReturnSize = uint32(r.or(size, kSize, uint64(len(buf))))
		putAddr(unsafe.Pointer(a), unsafe.Offsetof(a.ReturnPointer), r.addr(ret, pcWrite, addrOfBytes(buf)))
		a.SetEventfd(uint32(r.u(u0, kFD)))
		a.Pad = uint32(r.u(pad, kAny))
		return errStr(r.do(&c))
	}
}

// ---- CB -------------------------------------------------------------------

func (r *runner) opCB(rd *reader) func() string {
	c := r.readIoctl(rd, hl.HL_IOCTL_CB)
	op := rd.num("op")
	handle := rd.num("handle")
	size := rd.num("size")
	ctx := rd.num("ctx")
	flags := rd.num("flags")
	return func() string {
		a := (*hl.CBArgs)(unsafe.Pointer(&c.arg[0]))
		in := a.In()
		in.Op = uint32(r.u(op, kAny))
		in.CBHandle = r.u(handle, kCB)
		in.CBSize = uint32(r.or(size, kSize, 4096))
		in.CtxID = uint32(r.u(ctx, kAny))
		in.Flags = uint32(r.u(flags, kFlags))
		want := *in
		err := r.do(&c)
		if err != nil || c.argNil {
			return errStr(err)
		}
		switch want.Op {
		case hl.HL_CB_OP_CREATE:
			h := a.Out().CBHandle()
			r.mu.Lock()
			r.keepLocked(kCB, h)
			r.bufSize[h] = uint64(want.CBSize)
			r.mu.Unlock()
			return fmt.Sprintf("ok handle %#x", h)
		case hl.HL_CB_OP_INFO:
			if want.Flags&hl.HL_CB_FLAGS_GET_DEVICE_VA != 0 {
				va := a.Out().DeviceVA()
				r.mu.Lock()
				r.keepLocked(kVA, va)
				r.cbVAs[va] = want.CBHandle
				r.mu.Unlock()
				return fmt.Sprintf("ok va %#x", va)
			}
			return fmt.Sprintf("ok usage %d", a.Out().UsageCnt())
		}
		return "ok"
	}
}

// ---- CS -------------------------------------------------------------------

// chunkSpec is one chunk of a CS: where its command buffer comes from.
type chunkSpec struct {
	src                   int // 0 packets written into host memory, 1 a CB handle, 2 a CB's device VA, 3 any value
	idx, v, q, size, flag val
	eng                   val
}

func readChunk(rd *reader, p string) chunkSpec {
	var c chunkSpec
	c.src = rd.choice(p+"src", 4)
	c.idx = rd.num(p + "idx")
	if c.src == 3 {
		c.v = rd.num(p + "v")
	}
	c.q = rd.num(p + "q")
	c.size = rd.num(p + "size")
	c.flag = rd.num(p + "flags")
	c.eng = rd.num(p + "eng")
	return c
}

// fill writes chunk c into ch.
func (r *runner) fillChunk(ch *hl.CSChunk, c chunkSpec) {
	var handle, size, flags uint64
	idx := int(r.u(c.idx, kAny) % 64)
	r.mu.Lock()
	switch c.src {
	case 0: // packets written into host memory, by the device address of a host mapping covering them
		var hw []writeRec
		for _, w := range r.writes {
			if w.m == nil {
				hw = append(hw, w)
			}
		}
		if len(hw) > 0 {
			w := hw[len(hw)-1-idx%len(hw)]
			handle, size = w.addr, w.n
			for i := len(r.hostMaps) - 1; i >= 0; i-- {
				if hm := r.hostMaps[i]; w.addr >= hm.addr && w.addr-hm.addr < hm.size {
					handle = hm.va + (w.addr - hm.addr)
					break
				}
			}
		}
		flags = hl.HL_CS_CHUNK_FLAGS_USER_ALLOC_CB
	case 1: // a kernel CB
		if p := r.pools[kCB]; len(p) > 0 {
			handle = p[len(p)-1-idx%len(p)]
			size = r.written[handle]
			if size == 0 {
				size = r.bufSize[handle]
			}
		}
	case 2: // a CB mapped into the device MMU
		if p := r.pools[kVA]; len(p) > 0 {
			for i := len(p) - 1; i >= 0; i-- {
				if h, ok := r.cbVAs[p[i]]; ok {
					handle, size = p[i], r.written[h]
					break
				}
			}
		}
		flags = hl.HL_CS_CHUNK_FLAGS_USER_ALLOC_CB
	}
	r.mu.Unlock()
	if c.src == 3 {
		handle = r.u(c.v, kVA)
	}
	ch.SetCBHandle(handle)
	ch.QueueIndex = uint32(r.u(c.q, kQueue))
	ch.SetCBSize(uint32(r.or(c.size, kSize, size)))
	ch.CSChunkFlags = uint32(flags ^ r.u(c.flag, kFlags))
	ch.CollectiveEngineID = uint32(r.u(c.eng, kAny))
}

// CS kinds and their flags.
var csKinds = [...]uint32{0, hl.HL_CS_FLAGS_SIGNAL, hl.HL_CS_FLAGS_WAIT, hl.HL_CS_FLAGS_COLLECTIVE_WAIT,
	hl.HL_CS_FLAGS_RESERVE_SIGNALS_ONLY, hl.HL_CS_FLAGS_UNRESERVE_SIGNALS_ONLY, hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND,
	hl.HL_CS_FLAGS_ENGINES_COMMAND, hl.HL_CS_FLAGS_FLUSH_PCI_HBW_WRITES, 0}

const (
	csExecute = iota
	csSignal
	csWait
	csCollective
	csReserve
	csUnreserve
	csEngineCores
	csEngines
	csFlush
	csRawFlags
)

func (r *runner) opCS(rd *reader) func() string {
	c := r.readIoctl(rd, hl.HL_IOCTL_CS)
	kind := rd.choice("kind", len(csKinds))
	extra := rd.num("flags")
	timeout := rd.num("timeout")
	seqf := rd.num("seq")
	ctx := rd.num("ctx")
	pad := rd.num("pad")
	var (
		exec, restore    []chunkSpec
		nExec            val
		execP, restoreP  pval
		seqs             []val
		nSeqs, encSeq    val
		encOff, q, count val
		seqP             pval
		sigMode          int
		ids              []val
		nIDs, cmd        val
		idsP             pval
		execBuf, rstBuf  []byte
		seqBuf, idsBuf   []byte
	)
	switch kind {
	case csExecute, csRawFlags:
		exec = make([]chunkSpec, rd.choice("n", maxChunks+1))
		for i := range exec {
			exec[i] = readChunk(rd, fmt.Sprintf("x%d.", i))
		}
		nExec = rd.num("nx")
		execP = rd.ptr("xp")
		restore = make([]chunkSpec, rd.choice("nr", 3))
		for i := range restore {
			restore[i] = readChunk(rd, fmt.Sprintf("r%d.", i))
		}
		restoreP = rd.ptr("rp")
		execBuf = r.a.alloc(max(len(exec), 1) * int(unsafe.Sizeof(hl.CSChunk{})))
		rstBuf = r.a.alloc(max(len(restore), 1) * int(unsafe.Sizeof(hl.CSChunk{})))
	case csSignal, csWait, csCollective:
		exec = []chunkSpec{{q: rd.num("q"), flag: rd.num("cflags"), eng: rd.num("eng")}}
		sigMode = rd.choice("mode", 2)
		if sigMode == 0 {
			seqs = make([]val, rd.choice("ns", 5))
			for i := range seqs {
				seqs[i] = rd.num(fmt.Sprintf("s%d", i))
			}
			nSeqs = rd.num("nso")
			seqP = rd.ptr("sp")
		} else {
			encSeq = rd.num("es")
			encOff = rd.num("eo")
		}
		nExec = rd.num("nx")
		execP = rd.ptr("xp")
		execBuf = r.a.alloc(int(unsafe.Sizeof(hl.CSChunk{})))
		seqBuf = r.a.alloc(8 * max(len(seqs), 1))
	case csReserve:
		q = rd.num("q")
		count = rd.num("count")
	case csUnreserve:
		seqf = rd.num("id")
	case csEngineCores, csEngines:
		ids = make([]val, rd.choice("n", 9))
		for i := range ids {
			ids[i] = rd.num(fmt.Sprintf("e%d", i))
		}
		nIDs = rd.num("no")
		idsP = rd.ptr("ep")
		cmd = rd.num("cmd")
		idsBuf = r.a.alloc(4 * max(len(ids), 1))
	}
	return func() string {
		a := (*hl.CSArgs)(unsafe.Pointer(&c.arg[0]))
		in := a.In()
		in.CSFlags = csKinds[kind] | uint32(r.u(extra, kFlags))
		in.Timeout = uint32(r.u(timeout, kTimeoutS))
		in.CtxID = uint32(r.u(ctx, kAny))
		binary.LittleEndian.PutUint32(in.Pad[:], uint32(r.u(pad, kAny)))
		in.SetSeq(r.u(seqf, kSeq))
		switch kind {
		case csExecute, csRawFlags:
			chs := unsafe.Slice((*hl.CSChunk)(unsafe.Pointer(&execBuf[0])), max(len(exec), 1))
			for i, e := range exec {
				r.fillChunk(&chs[i], e)
			}
			setChunksExecute(in, r.addr(execP, pcRead, addrOfBytes(execBuf)))
			in.NumChunksExecute = uint32(r.or(nExec, kCount, uint64(len(exec))))
			rs := unsafe.Slice((*hl.CSChunk)(unsafe.Pointer(&rstBuf[0])), max(len(restore), 1))
			for i, e := range restore {
				r.fillChunk(&rs[i], e)
			}
			setChunksRestore(in, r.addr(restoreP, pcRead, addrOfBytes(rstBuf)))
			in.NumChunksRestore = uint32(len(restore))
		case csSignal, csWait, csCollective:
			ch := (*hl.CSChunk)(unsafe.Pointer(&execBuf[0]))
			ch.QueueIndex = uint32(r.u(exec[0].q, kQueue))
			ch.CSChunkFlags = uint32(r.u(exec[0].flag, kFlags))
			ch.CollectiveEngineID = uint32(r.u(exec[0].eng, kAny))
			if sigMode == 0 {
				for i, s := range seqs {
					binary.LittleEndian.PutUint64(seqBuf[8*i:], r.u(s, kSeq))
				}
				setSignalSeqArr(ch, r.addr(seqP, pcRead, addrOfBytes(seqBuf)))
				ch.SetNumSignalSeqArr(uint32(r.or(nSeqs, kCount, uint64(len(seqs)))))
			} else {
				ch.SetEncapsSignalSeq(r.u(encSeq, kSig))
				ch.SetEncapsSignalOffset(uint32(r.u(encOff, kCount)))
			}
			setChunksExecute(in, r.addr(execP, pcRead, addrOfBytes(execBuf)))
			in.NumChunksExecute = uint32(r.or(nExec, kCount, 1))
		case csReserve:
			in.SetEncapsSignalsQIdx(uint32(r.u(q, kQueue)))
			in.SetEncapsSignalsCount(uint32(r.or(count, kCount, 1)))
		case csUnreserve:
			in.SetEncapsSigHandleID(uint32(r.u(seqf, kSig)))
		case csEngineCores, csEngines:
			for i, id := range ids {
				binary.LittleEndian.PutUint32(idsBuf[4*i:], uint32(r.u(id, kEngine)))
			}
			p := r.addr(idsP, pcRead, addrOfBytes(idsBuf))
			n := uint32(r.or(nIDs, kCount, uint64(len(ids))))
			cm := uint32(r.or(cmd, kAny, 1))
			if kind == csEngineCores {
				setEngineCores(in, p)
				in.SetNumEngineCores(n)
				in.SetCoreCommand(cm)
			} else {
				setEngines(in, p)
				in.SetNumEngines(n)
				in.SetEngineCommand(cm)
			}
		}
		err := r.do(&c)
		if c.argNil || errors.Is(err, unix.EAGAIN) {
			return errStr(err)
		}
		out := a.Out()
		res := errStr(err)
		switch kind {
		case csReserve:
			if err == nil {
				r.mu.Lock()
				r.keepLocked(kSig, uint64(out.HandleID()))
				r.keepLocked(kAny, uint64(out.SOBBaseAddrOffset))
				r.mu.Unlock()
				res += fmt.Sprintf(" handle %d sob %#x count %d", out.HandleID(), out.SOBBaseAddrOffset, out.Count())
			}
		case csUnreserve, csEngineCores, csEngines, csFlush:
		default:
			if s := out.Seq(); s != ^uint64(0) {
				r.keep(kSeq, s)
				res += fmt.Sprintf(" seq %d", s)
			}
		}
		return res
	}
}

// ---- WAIT_CS --------------------------------------------------------------

const (
	waitSingle = iota
	waitMulti
	waitUserAddr
	waitKernelCQ
	waitRegisterTS
	numWaits
)

var waitFlags = [numWaits]uint32{0, hl.HL_WAIT_CS_FLAGS_MULTI_CS, hl.HL_WAIT_CS_FLAGS_INTERRUPT,
	hl.HL_WAIT_CS_FLAGS_INTERRUPT | hl.HL_WAIT_CS_FLAGS_INTERRUPT_KERNEL_CQ,
	hl.HL_WAIT_CS_FLAGS_INTERRUPT | hl.HL_WAIT_CS_FLAGS_INTERRUPT_KERNEL_CQ | hl.HL_WAIT_CS_FLAGS_REGISTER_INTERRUPT}

func (r *runner) opWait(rd *reader) func() string {
	c := r.readIoctl(rd, hl.HL_IOCTL_WAIT_CS)
	kind := rd.choice("kind", numWaits)
	flags := rd.num("flags")
	timeout := rd.num("timeout")
	ctx := rd.num("ctx")
	var (
		seq, arrLen, pad, irq, v, target val
		cq, cqOff, ts, tsOff             val
		seqs                             []val
		p                                pval
		buf                              []byte
	)
	switch kind {
	case waitSingle:
		seq = rd.num("seq")
	case waitMulti:
		seqs = make([]val, rd.choice("n", 34))
		for i := range seqs {
			seqs[i] = rd.num(fmt.Sprintf("s%d", i))
		}
		arrLen = rd.num("len")
		pad = rd.num("pad")
		p = rd.ptr("sp")
		buf = r.a.alloc(8 * max(len(seqs), 1))
	default:
		irq = rd.num("irq")
		target = rd.num("target")
		switch kind {
		case waitUserAddr:
			v = rd.num("value")
			p = rd.ptr("addr")
			buf = r.a.alloc(8)
		default:
			cq = rd.num("cq")
			cqOff = rd.num("cqoff")
			if kind == waitRegisterTS {
				ts = rd.num("ts")
				tsOff = rd.num("tsoff")
			}
		}
	}
	return func() string {
		a := (*hl.WaitCSArgs)(unsafe.Pointer(&c.arg[0]))
		in := a.In()
		in.Flags = waitFlags[kind] ^ uint32(r.u(flags, kFlags))
		in.CtxID = uint32(r.u(ctx, kAny))
		us := r.timeoutUs(timeout)
		switch kind {
		case waitSingle:
			in.SetSeq(r.u(seq, kSeq))
			in.SetTimeoutUs(us)
		case waitMulti:
			for i, s := range seqs {
				binary.LittleEndian.PutUint64(buf[8*i:], r.u(s, kSeq))
			}
			in.SetSeq(r.addr(p, pcRead, addrOfBytes(buf)))
			in.SetTimeoutUs(us)
			in.SetSeqArrLen(uint8(r.or(arrLen, kCount, uint64(len(seqs)))))
			pv := r.u(pad, kAny)
			for i := range in.Pad() {
				in.Pad()[i] = byte(pv >> (8 * i))
			}
		default:
			id := uint32(r.or(irq, kIRQ, uint64(r.d.prof.firstUserInterrupt)))
			in.Flags = in.Flags&^hl.HL_WAIT_CS_FLAGS_INTERRUPT_MASK | id<<20
			in.SetTarget(r.u(target, kAny))
			in.SetInterruptTimeoutUs(us)
			if kind == waitUserAddr {
				binary.LittleEndian.PutUint64(buf, r.u(v, kAny))
				setWaitAddr(in, r.addr(p, pcRead, addrOfBytes(buf)))
			} else {
				in.SetCQCountersHandle(r.u(cq, kCB))
				in.CQCountersOffset = r.u(cqOff, kCount)
				if kind == waitRegisterTS {
					in.TimestampHandle = r.u(ts, kTS)
					in.TimestampOffset = r.u(tsOff, kCount)
				}
			}
		}
		err := r.do(&c)
		if c.argNil {
			return errStr(err)
		}
		out := a.Out()
		return fmt.Sprintf("%s status %d flags %#x", errStr(err), out.Status, out.Flags)
	}
}

// ---- MEMORY ---------------------------------------------------------------

const (
	mkAlloc = iota
	mkFree
	mkMapDevice
	mkMapHost
	mkUnmap
	mkMapBlock
	mkExport
	mkTSAlloc
	mkRawOp
	mkRegDMABuf // out-of-tree driver programs only
	numMK

	numUpstreamMK = mkRegDMABuf
)

var memOps = [numMK]uint32{hl.HL_MEM_OP_ALLOC, hl.HL_MEM_OP_FREE, hl.HL_MEM_OP_MAP, hl.HL_MEM_OP_MAP,
	hl.HL_MEM_OP_UNMAP, hl.HL_MEM_OP_MAP_BLOCK, hl.HL_MEM_OP_EXPORT_DMABUF_FD, hl.HL_MEM_OP_TS_ALLOC, 0,
	hl.HL_MEM_OP_REG_DMABUF_FD}

func (r *runner) opMem(rd *reader) func() string {
	c := r.readIoctl(rd, hl.HL_IOCTL_MEMORY)
	kind := rd.choice("kind", r.choices(numUpstreamMK, numMK-numUpstreamMK))
	var op val
	if kind == mkRawOp {
		op = rd.num("op")
	}
	flags := rd.num("flags")
	ctx := rd.num("ctx")
	nelem := rd.num("nelem")
	var (
		a0, a1, a2 val
		host       pval
	)
	switch kind {
	case mkAlloc, mkExport, mkRawOp:
		a0, a1, a2 = rd.num("a0"), rd.num("a1"), rd.num("a2")
	case mkFree, mkUnmap, mkMapBlock:
		a0 = rd.num("a0")
	case mkRegDMABuf:
		a0, a1 = rd.num("fd"), rd.num("len")
	case mkMapDevice:
		a0, a1 = rd.num("handle"), rd.num("hint")
	case mkMapHost:
		host = rd.ptr("host")
		a1, a2 = rd.num("hint"), rd.num("size")
	}
	return func() string {
		a := (*hl.MemArgs)(unsafe.Pointer(&c.arg[0]))
		in := a.In()
		in.Op = memOps[kind]
		if kind == mkRawOp {
			in.Op = uint32(r.u(op, kAny))
		}
		var natural uint32
		switch kind {
		case mkMapHost:
			natural = hl.HL_MEM_USERPTR
		case mkExport:
			natural = unix.O_RDWR | unix.O_CLOEXEC
		}
		in.Flags = natural ^ uint32(r.u(flags, kFlags))
		in.CtxID = uint32(r.u(ctx, kAny))
		in.NumOfElements = uint32(r.or(nelem, kCount, 512))
		var hostAddr, hostLen uint64
		switch kind {
		case mkAlloc:
			in.Alloc().MemSize = r.or(a0, kSize, r.d.prof.dramPageSize)
			in.Alloc().PageSize = r.u(a1, kSize)
		case mkFree:
			in.Free().Handle = r.u(a0, kMem)
		case mkMapDevice:
			in.MapDevice().Handle = r.u(a0, kMem)
			in.MapDevice().HintAddr = r.u(a1, kVA)
		case mkMapHost:
			hostAddr = r.addr(host, pcHost, r.a.base+hostOff)
			hostLen = r.or(a2, kSize, hostSize)
			in.MapHost().HostVirtAddr = hostAddr
			in.MapHost().HintAddr = r.u(a1, kVA)
			in.MapHost().MemSize = hostLen
		case mkUnmap:
			in.Unmap().DeviceVirtAddr = r.u(a0, kVA)
		case mkMapBlock:
			in.MapBlock().BlockAddr = r.or(a0, kBlockAddr, r.spec[kBlockAddr][0])
		case mkRegDMABuf:
			g := (*hl.MemRegDmabufFDArgs)(unsafe.Pointer(a))
			g.FD = r.u(a0, kFD)
			g.Length = r.or(a1, kSize, r.d.prof.dramPageSize)
		case mkExport, mkRawOp:
			e := in.ExportDmabufFD()
			e.Addr = r.u(a0, kVA)
			e.MemSize = r.or(a1, kSize, r.d.prof.dramPageSize)
			e.Offset = r.u(a2, kSize)
		}
		want := *in
		err := r.do(&c)
		if err != nil || c.argNil {
			return errStr(err)
		}
		out := a.Out()
		r.mu.Lock()
		defer r.mu.Unlock()
		switch want.Op {
		case hl.HL_MEM_OP_ALLOC:
			r.keepLocked(kMem, out.Handle())
			return fmt.Sprintf("ok handle %#x", out.Handle())
		case hl.HL_MEM_OP_REG_DMABUF_FD:
			va := out.DeviceVirtAddr()
			r.keepLocked(kVA, va)
			return fmt.Sprintf("ok va %#x", va)
		case hl.HL_MEM_OP_MAP:
			va := out.DeviceVirtAddr()
			r.keepLocked(kVA, va)
			if want.Flags&hl.HL_MEM_USERPTR != 0 && r.a.inArena(hostAddr, min(hostLen, arenaSize)) {
				r.hostMaps = append(r.hostMaps, hostMap{va: va, addr: hostAddr, size: hostLen})
			}
			return fmt.Sprintf("ok va %#x", va)
		case hl.HL_MEM_OP_MAP_BLOCK:
			h := out.BlockHandle()
			r.keepLocked(kBlock, h)
			r.keepLocked(kSize, uint64(out.BlockSize()))
			r.bufSize[h] = uint64(out.BlockSize())
			return fmt.Sprintf("ok block %#x size %#x", h, out.BlockSize())
		case hl.HL_MEM_OP_EXPORT_DMABUF_FD:
			fd := int(out.FD())
			if fd >= 0 {
				r.fds = append(r.fds, fd)
				r.keepLocked(kFD, uint64(fd))
			}
			return fmt.Sprintf("ok fd %d", fd)
		case hl.HL_MEM_OP_TS_ALLOC:
			h := out.Handle()
			r.keepLocked(kTS, h)
			r.bufSize[h] = 8 * uint64(want.NumOfElements)
			return fmt.Sprintf("ok ts %#x", h)
		}
		return "ok"
	}
}

// ---- DEBUG ----------------------------------------------------------------

func (r *runner) opDebug(rd *reader) func() string {
	c := r.readIoctl(rd, hl.HL_IOCTL_DEBUG)
	op := rd.num("op")
	reg := rd.num("reg")
	enable := rd.num("enable")
	ctx := rd.num("ctx")
	input := rd.raw("in", rd.choice("inlen", 97))
	inSize := rd.num("insize")
	inP := rd.ptr("inp")
	outSize := rd.num("outsize")
	outP := rd.ptr("outp")
	inBuf := r.a.alloc(128)
	outBuf := r.a.alloc(1024)
	copy(inBuf, input)
	return func() string {
		a := (*hl.DebugArgs)(unsafe.Pointer(&c.arg[0]))
		a.Op = uint32(r.u(op, kAny))
		a.RegIdx = uint32(r.u(reg, kAny))
		a.Enable = uint32(r.u(enable, kAny))
		a.CtxID = uint32(r.u(ctx, kAny))
		natural := uint64(len(input))
		if int(a.Op) < len(debugStructSize) {
			natural = uint64(debugStructSize[a.Op])
		}
		a.InputSize = uint32(r.or(inSize, kSize, natural))
		a.OutputSize = uint32(r.u(outSize, kSize))
		putAddr(unsafe.Pointer(a), unsafe.Offsetof(a.InputPtr), r.addr(inP, pcReadP, addrOfBytes(inBuf)))
		putAddr(unsafe.Pointer(a), unsafe.Offsetof(a.OutputPtr), r.addr(outP, pcWrite, addrOfBytes(outBuf)))
		return errStr(r.do(&c))
	}
}

// ---- NIC (out-of-tree driver) ---------------------------------------------

// opNIC is the out-of-tree driver's NIC ioctl: any op, sizes (by default
// the op's own structs), input bytes and pointers.
func (r *runner) opNIC(rd *reader) func() string {
	c := r.readIoctl(rd, hl.HL_IOCTL_NIC)
	op := rd.num("op")
	ctx := rd.num("ctx")
	input := rd.raw("in", rd.choice("inlen", 81))
	inSize := rd.num("insize")
	inP := rd.ptr("inp")
	outSize := rd.num("outsize")
	outP := rd.ptr("outp")
	inBuf := r.a.alloc(128)
	outBuf := r.a.alloc(128)
	copy(inBuf, input)
	return func() string {
		a := (*hl.NICArgs)(unsafe.Pointer(&c.arg[0]))
		a.Op = uint32(r.u(op, kAny))
		a.CtxID = uint32(r.u(ctx, kAny))
		natIn, natOut := uint64(len(input)), uint64(0)
		if int(a.Op) < len(nicInSize) {
			natIn = uint64(nicInSize[a.Op])
		}
		if int(a.Op) < len(nicOutSize) {
			natOut = uint64(nicOutSize[a.Op])
		}
		a.InputSize = uint32(r.or(inSize, kSize, natIn))
		a.OutputSize = uint32(r.or(outSize, kSize, natOut))
		putAddr(unsafe.Pointer(a), unsafe.Offsetof(a.InputPtr), r.addr(inP, pcReadP, addrOfBytes(inBuf)))
		putAddr(unsafe.Pointer(a), unsafe.Offsetof(a.OutputPtr), r.addr(outP, pcWrite, addrOfBytes(outBuf)))
		err := r.do(&c)
		if c.argNil {
			return errStr(err)
		}
		return fmt.Sprintf("%s sizes %d %d", errStr(err), a.InputSize, a.OutputSize)
	}
}

// ---- mmap and munmap ------------------------------------------------------

var mmapWhat = [...]string{"cb", "ts", "block", "raw"}

func (r *runner) opMmap(rd *reader) func() string {
	file := rd.choice("file", 4)
	which := rd.choice("which", 4)
	h := rd.num("h")
	delta := rd.num("delta")
	length := rd.num("len")
	prot := rd.num("prot")
	flags := rd.num("flags")
	return func() string {
		fr := r.pickFile(file)
		k := [...]kind{kCB, kTS, kBlock, kAny}[which]
		handle := r.u(h, k)
		r.mu.Lock()
		size, ok := r.bufSize[handle]
		r.mu.Unlock()
		if !ok {
			size = pageSize
		}
		off := handle + r.u(delta, kAny)
		n := r.or(length, kSize, size)
		pr := unix.PROT_READ | unix.PROT_WRITE ^ int(r.u(prot, kAny))
		fl := unix.MAP_SHARED ^ int(r.u(flags, kAny))
		b, err := fr.f.Mmap(int64(off), int(n), pr, fl)
		if err != nil {
			return errStr(err)
		}
		if len(b) == 0 || unsafe.SliceData(b) == nil || len(b) != int(n) {
			r.t.Errorf("mmap(%#x, %d) = a mapping of %d bytes at %p", off, n, len(b), unsafe.SliceData(b))
		}
		r.mu.Lock()
		r.maps = append(r.maps, &mapRec{b: b, owner: fr, what: mmapWhat[which], handle: handle, prot: pr, live: true})
		r.mu.Unlock()
		return fmt.Sprintf("ok %d bytes at %p", len(b), unsafe.SliceData(b))
	}
}

func (r *runner) opMunmap(rd *reader) func() string {
	idx := rd.num("m")
	part := rd.choice("part", 4)
	return func() string {
		r.async.Wait() // nothing may be writing to the mapping
		iv := r.u(idx, kAny)
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.maps) == 0 {
			return "no mapping"
		}
		m := r.maps[len(r.maps)-1-int(iv%uint64(len(r.maps)))]
		if !m.live {
			// Unmapping a stale slice again is fine unless a live mapping
			// now starts there: the kernel would unmap that one.
			for _, o := range r.maps {
				if o.live && unsafe.SliceData(o.b) == unsafe.SliceData(m.b) {
					return "skipped: the address was reused"
				}
			}
		}
		b, owner := m.b, m.owner.f
		switch part {
		case 1:
			b = b[:len(b)/2]
		case 2:
			b = b[len(b)/2:]
		case 3:
			for i := len(r.files) - 1; i >= 0; i-- {
				if r.files[i] != m.owner {
					owner = r.files[i].f
					break
				}
			}
		}
		err := owner.Munmap(b)
		if err == nil {
			if len(b) != len(m.b) {
				r.t.Errorf("munmap of part of a %d-byte mapping (%d bytes at offset %d) succeeded", len(m.b), len(b), len(m.b)-len(b))
			}
			m.live = false
		}
		return errStr(err)
	}
}

// ---- Packets --------------------------------------------------------------

// readPackets reads up to maxPackets packets and encodes them.
func (r *runner) readPackets(rd *reader) func() []byte {
	n := rd.choice("np", maxPackets+1)
	type pkt struct {
		typ           int
		a, b, c, d, e val
		h             int
	}
	ps := make([]pkt, n)
	for i := range ps {
		p := fmt.Sprintf("p%d.", i)
		ps[i].typ = rd.choice(p+"t", 16)
		ps[i].h = rd.choice(p+"h", 8)
		switch ps[i].typ {
		case 0, 11, 13, 15: // LIN_DMA, CB_LIST, raw 16/24-byte: up to five words
			ps[i].a, ps[i].b, ps[i].c, ps[i].d, ps[i].e = rd.num(p+"a"), rd.num(p+"b"), rd.num(p+"c"), rd.num(p+"d"), rd.num(p+"e")
		case 5, 6, 8: // NOP, STOP, ARB_POINT
			ps[i].a = rd.num(p + "a")
		default:
			ps[i].a, ps[i].b, ps[i].c = rd.num(p+"a"), rd.num(p+"b"), rd.num(p+"c")
		}
	}
	return func() []byte {
		b := packet.NewBuilder(r.fm, nil)
		for _, p := range ps {
			h := packet.Header{EngineBarrier: p.h&1 != 0, RegBarrier: p.h&2 != 0, MsgBarrier: p.h&4 != 0}
			mark := b.Len()
			switch p.typ {
			case 0:
				size := r.u(p.c, kSize)
				if size > maxDMASize {
					size %= maxDMASize
				}
				opt := r.u(p.d, kAny)
				b.LinDMA(packet.LinDMA{Header: h, Src: r.u(p.a, kAddr), Dst: r.u(p.b, kAddr), Size: uint32(size),
					Memset: opt&1 != 0, WriteCompletion: opt&2 != 0, Endian: uint8(opt>>2) & 3, ContextID: uint16(r.u(p.e, kAny))})
			case 1:
				b.MsgLong(packet.MsgLong{Header: h, Addr: r.u(p.a, kAddr), Value: uint32(r.u(p.b, kAny)), Op: packet.MsgOp(r.u(p.c, kAny) & 3)})
			case 2:
				v := r.u(p.c, kAny)
				b.MsgShort(packet.MsgShort{Header: h, Value: uint32(r.u(p.a, kAny)), Offset: uint16(r.u(p.b, kAny)),
					Base: uint8(v & 3), Op: packet.MsgOp(v >> 2 & 3)})
			case 3:
				b.Fence(packet.Fence{Header: h, ID: uint8(r.u(p.a, kAny) & 3), Target: uint8(r.u(p.b, kAny)), Dec: uint8(r.u(p.c, kAny) & 15)})
			case 4:
				b.Wait(packet.Wait{Header: h, ID: uint8(r.u(p.a, kAny) & 3), Inc: uint8(r.u(p.b, kAny) & 15), Cycles: uint32(r.u(p.c, kAny) & 0xffffff)})
			case 5:
				b.Nop(packet.Nop{Header: h})
			case 6:
				b.Stop(packet.Stop{Header: h})
			case 7:
				b.Repeat(packet.Repeat{Header: h, JumpPtr: uint16(r.u(p.a, kAny))})
			case 8:
				b.ArbPoint(packet.ArbPoint{Header: h, Priority: uint32(r.u(p.a, kAny) & 0xff)})
			case 9:
				w := packet.WReg32{Header: h, Value: uint32(r.u(p.a, kAny))}
				setUint(&w.Offset, r.u(p.b, kAny))
				b.WReg32(w)
			case 10:
				w := packet.WRegBulk{Header: h, Values: make([]uint64, r.u(p.c, kAny)%4)}
				for i := range w.Values {
					w.Values[i] = r.u(p.a, kAny)
				}
				setUint(&w.Offset, r.u(p.b, kAny))
				b.WRegBulk(w)
			case 11:
				b.CBList(packet.CBList{Header: h, IndexAddr: r.u(p.a, kAddr), TableAddr: r.u(p.b, kAddr)})
			case 12:
				size := r.u(p.b, kSize)
				if size > maxCPDMASize {
					size %= maxCPDMASize
				}
				b.CPDMA(packet.CPDMA{Header: h, Src: r.cbAddr(p.a), Size: uint32(size)})
			case 13:
				b.LoadAndExe(packet.LoadAndExe{Header: h, Src: r.u(p.a, kAddr), Load: r.u(p.b, kAny)&1 != 0, Exe: r.u(p.b, kAny)&2 != 0})
			case 14:
				b.MsgProt(packet.MsgProt{Header: h, Addr: r.u(p.a, kAddr), Value: uint32(r.u(p.b, kAny))})
			case 15:
				// Raw words: any opcode but LIN_DMA, whose size would not
				// be bounded.
				w := []uint64{r.u(p.a, kAny), r.u(p.b, kAny), r.u(p.c, kAny)}
				if packet.Opcode(w[0]>>56&0x1f) == packet.OpLinDMA {
					w[0] ^= 1 << 59
				}
				buf := b.Bytes()
				for _, x := range w[:1+r.u(p.d, kAny)%3] {
					buf = binary.LittleEndian.AppendUint64(buf, x)
				}
				b.Reset(buf)
			}
			if b.Err() != nil { // a field out of range: the packet is left out
				b.Reset(b.Bytes()[:mark])
			}
		}
		return b.Bytes()
	}
}

// setUint stores v, cut to the field's width, in an unsigned field whose
// size depends on the packet format's widest layout.
func setUint[T ~uint8 | ~uint16 | ~uint32 | ~uint64](f *T, v uint64) { *f = T(v) }

// cbAddr resolves the source of a CP_DMA: by default the device address
// of the newest packets written into host memory.
func (r *runner) cbAddr(v val) uint64 {
	if !v.zero() {
		return r.u(v, kAddr)
	}
	var c hl.CSChunk
	r.fillChunk(&c, chunkSpec{})
	return c.CBHandle()
}

// opWrite writes packets into arena host memory or into a mapping.
func (r *runner) opWrite(rd *reader) func() string {
	to := rd.choice("to", 2)
	off := rd.num("off")
	m := rd.num("m")
	build := r.readPackets(rd)
	return func() string {
		b := build()
		offv, mv := r.u(off, kSize), r.u(m, kAny)
		r.mu.Lock()
		defer r.mu.Unlock()
		if to == 0 || len(r.maps) == 0 {
			o := hostOff + (offv%(hostSize-4096))&^7
			o = min(o, arenaSize-uint64(len(b)))
			if !r.a.hostWritable(o, uint64(len(b))) {
				return "skipped: pages not writable"
			}
			copy(r.a.mem[o:], b)
			r.writes = append(r.writes, writeRec{addr: r.a.base + o, n: uint64(len(b))})
			return fmt.Sprintf("%d bytes at arena %#x", len(b), o)
		}
		var live []*mapRec
		for _, mr := range r.maps {
			if mr.live && mr.prot&unix.PROT_WRITE != 0 {
				live = append(live, mr)
			}
		}
		if len(live) == 0 {
			return "no writable mapping"
		}
		mr := live[len(live)-1-int(mv%uint64(len(live)))]
		o := (offv % uint64(len(mr.b))) &^ 7
		if o+uint64(len(b)) > uint64(len(mr.b)) {
			o = 0
		}
		n := min(len(b), len(mr.b)-int(o))
		if err := faultingCopy(mr.b[o:o+uint64(n)], b[:n]); err != nil {
			r.t.Errorf("writing into a %s mapping of %d bytes at offset %d faulted: the mapping is shorter than Mmap said", mr.what, len(mr.b), o)
			return "fault"
		}
		r.writes = append(r.writes, writeRec{m: mr, off: o, n: uint64(n)})
		if mr.what == "cb" && o == 0 {
			r.written[mr.handle] = uint64(n)
		}
		return fmt.Sprintf("%d bytes into %s mapping %#x", n, mr.what, mr.handle)
	}
}

// ---- Files, resets, faults, state, events ---------------------------------

func (r *runner) opFile(rd *reader) func() string {
	mode := rd.choice("mode", 7)
	idx := rd.num("i")
	return func() string {
		iv := r.u(idx, kAny)
		r.mu.Lock()
		defer r.mu.Unlock()
		closeCompute := func() {
			if r.compute != nil {
				r.compute.f.Close()
				r.compute.closed = true
				r.compute = nil
			}
		}
		open := func() string {
			f, err := r.d.Open()
			if err != nil {
				return errStr(err)
			}
			r.compute = &fileRec{f: f, file: f, kind: fileCompute}
			r.files = append(r.files, r.compute)
			return "ok"
		}
		pick := func(kind int) *fileRec {
			var l []*fileRec
			for _, f := range r.files {
				if f.kind == kind && !f.closed {
					l = append(l, f)
				}
			}
			if len(l) == 0 {
				return nil
			}
			return l[len(l)-1-int(iv%uint64(len(l)))]
		}
		switch mode {
		case 0: // reopen: every mapping and handle of the compute file (as a process that exits), then open
			for _, m := range r.maps {
				if m.live && m.owner.kind != fileControl {
					if m.owner.file.Munmap(m.b) == nil {
						m.live = false
					}
				}
			}
			for _, f := range r.files {
				if f.kind != fileControl && !f.closed {
					f.f.Close()
					f.closed = true
				}
			}
			r.compute = nil
			return open()
		case 1:
			closeCompute()
			return "closed"
		case 2:
			return open()
		case 3:
			if r.compute == nil {
				return "no compute file"
			}
			h, err := r.compute.file.Dup()
			if err != nil {
				return errStr(err)
			}
			r.files = append(r.files, &fileRec{f: h, file: r.compute.file, kind: fileDup})
			return "ok"
		case 4, 6:
			kind := fileDup
			if mode == 6 {
				kind = fileControl
			}
			f := pick(kind)
			if f == nil {
				return "none"
			}
			f.f.Close()
			f.closed = true
			return "closed"
		}
		f, err := r.d.OpenControl()
		if err != nil {
			return errStr(err)
		}
		r.files = append(r.files, &fileRec{f: f, file: f, kind: fileControl})
		return "ok"
	}
}

func (r *runner) opReset(rd *reader) func() string {
	how := rd.choice("how", 3)
	bits := rd.num("bits")
	return func() string {
		b := r.u(bits, kFlags)
		switch how {
		case 1:
			r.d.reset(b)
		case 2:
			r.d.condReset(b) // as a CS timeout does: kills the file, or starts the release watchdog
		default:
			r.d.Reset()
		}
		return "ok"
	}
}

// faultKinds are the calls a fault is injected into; NIC, last, only in
// the out-of-tree driver's programs.
var faultKinds = [...]string{"INFO", "CB", "CS", "WAIT_CS", "MEMORY", "DEBUG", "OPEN", "OPEN_CONTROL", "NIC"}

func (r *runner) opFault(rd *reader) func() string {
	k := rd.choice("kind", r.choices(len(faultKinds)-1, 1))
	match := rd.choice("match", 2)
	op := rd.num("op")
	nth := rd.num("nth")
	errno := rd.num("errno")
	return func() string {
		r.d.InjectFault(Fault{Ioctl: faultKinds[k], MatchOp: match == 1, Op: uint32(r.u(op, kAny)),
			Nth: int(r.u(nth, kCount) % 64), Errno: unix.Errno(r.or(errno, kErrno, uint64(unix.EIO)))})
		return "armed"
	}
}

func (r *runner) opState(rd *reader) func() string {
	s := rd.num("s")
	return func() string {
		r.d.SetState(State(r.u(s, kAny)))
		return "ok"
	}
}

func (r *runner) opEvent(rd *reader) func() string {
	which := rd.choice("which", 8)
	a := rd.num("a")
	b := rd.num("b")
	return func() string {
		x, y := r.u(a, kAddr), r.u(b, kAny)
		switch which {
		case 0:
			r.d.RecordRazwi(x, []uint16{uint16(y), uint16(y >> 16)}, uint8(y>>32))
		case 1:
			r.d.RecordPageFault(x, hl.UserMapping{DevVA: x &^ 4095, Size: 4096})
		case 2:
			r.d.RecordHWError(uint16(y))
		case 3:
			r.d.RecordFWError(hl.InfoFWErrType(y&3), uint16(y>>8))
		case 4:
			r.d.RecordEngineError(uint16(y), uint16(y>>16))
		case 5:
			r.d.RecordUndefinedOpcode(uint32(y), x, uint32(y>>32))
		case 6:
			r.d.RecordCSTimeout(y)
		case 7:
			r.d.Notify(y)
		}
		return "ok"
	}
}

// opHost changes arena host pages under the device: PROT_NONE (the device
// would go on using the pages it pinned; the simulator finds them gone),
// read-only, or fresh zero pages (a remap: the device would keep the old
// ones).
func (r *runner) opHost(rd *reader) func() string {
	how := rd.choice("how", 3)
	off := rd.num("off")
	n := rd.num("n")
	return func() string {
		first := r.u(off, kSize) / pageSize % hostPages
		cnt := max(1, min(r.or(n, kCount, 1), hostPages-first))
		r.mu.Lock()
		defer r.mu.Unlock()
		mem := r.a.mem[hostOff+first*pageSize : hostOff+(first+cnt)*pageSize]
		var err error
		prot := uint8(protRW)
		switch how {
		case 0:
			prot = protNone
			_, err = unix.MmapPtr(-1, 0, unsafe.Pointer(&mem[0]), uintptr(len(mem)), unix.PROT_NONE,
				unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE|unix.MAP_FIXED)
		case 1:
			prot = protRO
			err = unix.Mprotect(mem, unix.PROT_READ)
		case 2:
			_, err = unix.MmapPtr(-1, 0, unsafe.Pointer(&mem[0]), uintptr(len(mem)), unix.PROT_READ|unix.PROT_WRITE,
				unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE|unix.MAP_FIXED)
		}
		if err != nil {
			r.t.Fatalf("arena pages: %v", err)
		}
		for p := first; p < first+cnt; p++ {
			r.a.prot[p] = prot
		}
		return fmt.Sprintf("pages %d..%d", first, first+cnt-1)
	}
}

var sleeps = [...]time.Duration{0, 50 * time.Microsecond, 200 * time.Microsecond, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond}

func (r *runner) opSleep(rd *reader) func() string {
	d := sleeps[rd.choice("d", len(sleeps))]
	return func() string {
		time.Sleep(d)
		return d.String()
	}
}

// ---- The end of a program -------------------------------------------------

// finish closes everything the program holds and checks that the device
// gave everything back.
func (r *runner) finish() {
	t := r.t
	id := r.wd.begin("joining the async calls")
	r.async.Wait()
	r.wd.end(id)

	id = r.wd.begin("closing the program's files and mappings")
	d := r.d
	d.SetState(Operational)
	d.mu.Lock()
	d.faults = nil
	d.mu.Unlock()
	unmap := func() {
		for _, m := range r.maps {
			if !m.live {
				continue
			}
			if err := m.owner.f.Munmap(m.b); err != nil {
				t.Errorf("munmap of a %s mapping of %d bytes (handle %#x) through its own file: %v", m.what, len(m.b), m.handle, err)
				continue
			}
			m.live = false
		}
	}
	if r.order&1 != 0 {
		unmap()
	}
	for _, fd := range r.fds {
		unix.Close(fd)
	}
	if r.evfd >= 0 {
		unix.Close(r.evfd)
	}
	if r.order&2 != 0 {
		// Controls first, then the compute file and its duplicates.
		for _, f := range r.files {
			if f.kind == fileControl {
				f.f.Close()
			}
		}
	}
	for _, f := range r.files {
		f.f.Close()
		f.closed = true
	}
	if r.order&1 == 0 {
		unmap()
	}
	d.reap() // a context kept by its exports goes once they are closed
	r.wd.end(id)

	// A reset the engines started (an undefined opcode on Gaudi2) may
	// still run, as the driver's reset work does after the file closed.
	id = r.wd.begin("waiting for the device to leave reset")
	for d.State() != Operational {
		time.Sleep(time.Millisecond)
	}
	r.wd.end(id)

	id = r.wd.begin("checking the device")
	r.checkReleased()
	r.wd.end(id)
	r.checkViolations()
	id = r.wd.begin("System.Close")
	if err := r.sys.Close(); err != nil {
		t.Errorf("System.Close: %v", err) // an unexpected strict mode violation
	}
	r.wd.end(id)
	r.wd.close()
	if hw := d.hw.p; hw != nil && hw.sram != nil {
		t.Errorf("System.Close left the %d-byte SRAM mapping", len(hw.sram))
	}
}

// checkViolations checks that what strict mode recorded is consistent:
// known kinds, each with what it happened in.
func (r *runner) checkViolations() {
	for _, v := range r.d.Violations() {
		switch {
		case v.Kind < ViolationStackAddress || v.Kind > ViolationBarrierHazard || v.Op == "" || v.Detail == "":
			r.t.Errorf("malformed violation %+v", v)
		case v.Op == "DMA" && v.Seq == 0:
			r.t.Errorf("a DMA violation names no CS: %v", v)
		case !v.Expected && v.Kind != ViolationStackAddress:
			r.t.Errorf("violation of an expected kind recorded as unexpected: %v", v)
		}
	}
}

// holdsImport reports whether context c holds an imported dma-buf.
func holdsImport(c *context) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.index {
		if m.imported != nil {
			return true
		}
	}
	return false
}

// checkReleased checks that the closed program left nothing on the
// device: no context, no file, no DRAM accounted, no engine running, no
// mapping recorded; and that a new context sees all DRAM free.
func (r *runner) checkReleased() {
	t, d := r.t, r.d
	d.mu.Lock()
	compute, files := d.compute, len(d.files)
	wd := d.wd.active
	d.mu.Unlock()
	if compute != nil && compute.lingering && holdsImport(compute.ctx) {
		// It imported a dma-buf, its own export among them: a cycle the
		// driver never breaks either (import_unsafe.go). System.Close
		// ends it, and the counts after it are checked.
		r.mu.Lock()
		r.trace = append(r.trace, "(the context outlives its files: it imported its own export)")
		r.mu.Unlock()
		return
	}
	if compute != nil {
		t.Errorf("the compute context outlived its files (lingering %v)", compute.lingering)
	}
	if files != 0 {
		t.Errorf("%d files still registered with the device", files)
	}
	if wd {
		t.Error("the release watchdog still runs")
	}
	if n := d.dramUsed.Load(); n != 0 {
		t.Errorf("DRAM accounting: %d bytes still used", n)
	}
	for _, fr := range r.files {
		fr.file.mu.Lock()
		n := len(fr.file.mmaps)
		fr.file.mu.Unlock()
		if n != 0 {
			t.Errorf("%s still records %d mappings", fr.file.Name(), n)
		}
	}
	if hw := d.hw.p; hw != nil {
		hw.mu.Lock()
		workers, mirror, tdr := hw.workers, len(hw.mirror), hw.tdrCS != nil
		hw.mu.Unlock()
		if workers != 0 || mirror != 0 || tdr {
			t.Errorf("engines: %d queue goroutines, %d CSs in flight, TDR armed %v", workers, mirror, tdr)
		}
	}
	// As a user sees it: a new context finds the whole DRAM free.
	f, err := d.Open()
	if err != nil {
		t.Errorf("open after the program closed everything: %v", err)
		return
	}
	defer f.Close()
	u := new(hl.InfoDRAMUsage) // on the heap: the simulator writes it
	a := hl.InfoArgs{Op: hl.HL_INFO_DRAM_USAGE, ReturnSize: uint32(unsafe.Sizeof(*u)), ReturnPointer: hl.NewPointer(unsafe.Pointer(u))}
	req := uint(hl.DRM_IOCTL_HL_INFO)
	if r.legacy {
		req = hl.HL_LEGACY_IOCTL_INFO
	}
	if err := f.Ioctl(req, unsafe.Pointer(&a)); err != nil {
		t.Errorf("INFO DRAM_USAGE: %v", err)
		return
	}
	p := &d.prof
	if want := p.dramSize - (p.dramUserBase - p.dramBase); u.DRAMFreeMem != want || u.CtxDRAMMem != 0 {
		t.Errorf("INFO DRAM_USAGE on a new context: free %#x, context %#x; want %#x free", u.DRAMFreeMem, u.CtxDRAMMem, want)
	}
}

// abandon releases what a program that panicked or stopped the test
// holds, without checks, so that the next program of the process (the
// fuzz engine minimizes a failing input in the same process) can open the
// device.
func (r *runner) abandon() {
	r.mu.Lock()
	files, fds := r.files, r.fds
	r.mu.Unlock()
	for _, f := range files {
		f.f.Close()
	}
	for _, fd := range fds {
		unix.Close(fd)
	}
	if r.evfd >= 0 {
		unix.Close(r.evfd)
	}
	r.d.reap()
	r.sys.Close()
	r.wd.close()
}

// describe is the program as the trace shows it so far.
func (r *runner) describe() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.trace, "\n")
}
