package sim

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The seed corpus of the FuzzProgram targets, written as readable
// programs (FuzzProgramGaudi3's in fuzzg3_unsafe_test.go). A seedSrc runs a program from its description and
// records the bytes that decode to it; TestFuzzProgramSeeds checks that
// testdata/fuzz holds exactly those bytes (go test ./sim -run
// TestFuzzProgramSeeds -update-fuzz-seeds rewrites them) and that each
// seed reaches what it was written for. Crashers the fuzz engine finds are
// kept next to the seeds under their hash names.

var updateSeeds = flag.Bool("update-fuzz-seeds", false, "rewrite the seed files of the FuzzProgram targets")

// call is one call of a seed program: argument names (see the ops in
// fuzzops_unsafe_test.go) and values. "call" is the op; arguments left out
// take the default encoding (a zero byte).
type call map[string]any

// Value encodings for seeds: sp(i) is the i-th interesting value of the
// argument's kind, res(i) the i-th newest earlier result, lit(v) a literal
// even when v is small. A plain integer is small (below 64) or literal.
type (
	spv  uint8
	resv uint8
	litv uint64
)

func sp(i int) spv   { return spv(i) }
func res(i int) resv { return resv(i) }
func lit(v uint64) litv {
	return litv(v)
}

// ptrTo is a pointer argument.
func ptrTo(m pmode, idx uint8, off uint32) pval { return pval{mode: m, idx: idx, off: off} }

// seedSrc is a source that answers from a description and records the
// bytes that make a byteSrc answer the same.
type seedSrc struct {
	hdr   call
	calls []call
	i     int // the current call, -1 for the header
	used  map[string]bool
	out   []byte
	err   error
}

func newSeedSrc(hdr call, calls []call) *seedSrc {
	return &seedSrc{hdr: hdr, calls: calls, i: -1, used: map[string]bool{}}
}

func (s *seedSrc) cur() call {
	if s.i < 0 {
		return s.hdr
	}
	return s.calls[s.i]
}

func (s *seedSrc) fail(format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("call %d: %s", s.i, fmt.Sprintf(format, args...))
	}
}

// checkUsed reports arguments of the current call that no read asked for:
// a misspelt name, or one the op does not take.
func (s *seedSrc) checkUsed() {
	for k := range s.cur() {
		if !s.used[k] {
			s.fail("argument %q is not read", k)
		}
	}
	clear(s.used)
}

func (s *seedSrc) next() bool { return s.i+1 < len(s.calls) }

func (s *seedSrc) get(name string) (any, bool) {
	v, ok := s.cur()[name]
	if ok {
		s.used[name] = true
	}
	return v, ok
}

func (s *seedSrc) choice(name string, n int) int {
	if name == "call" {
		s.checkUsed()
		s.i++
		s.used["call"] = true
		c := int(s.calls[s.i]["call"].(opKind))
		s.out = append(s.out, byte(c))
		return c
	}
	v, _ := s.get(name)
	c := 0
	switch x := v.(type) {
	case nil:
	case int:
		c = x
	default:
		s.fail("%s: a choice is an int, not %T", name, v)
	}
	if c < 0 || c >= n || c > 255 {
		s.fail("%s: choice %d out of [0, %d)", name, c, n)
	}
	s.out = append(s.out, byte(c))
	return c
}

func (s *seedSrc) num(name string) val {
	v, _ := s.get(name)
	var x uint64
	switch y := v.(type) {
	case nil:
	case spv:
		s.out = append(s.out, byte(y)<<2|vSpecial)
		return val{how: vSpecial, n: uint64(y)}
	case resv:
		s.out = append(s.out, byte(y)<<2|vRes)
		return val{how: vRes, n: uint64(y)}
	case litv:
		s.out = binary.LittleEndian.AppendUint64(append(s.out, vLit), uint64(y))
		return val{how: vLit, n: uint64(y)}
	case int:
		x = uint64(y)
	case uint32:
		x = uint64(y)
	case uint64:
		x = y
	case opKind:
		x = uint64(y)
	default:
		s.fail("%s: %T is not a number", name, v)
	}
	if x < 64 {
		s.out = append(s.out, byte(x)<<2|vSmall)
		return val{how: vSmall, n: x}
	}
	s.out = binary.LittleEndian.AppendUint64(append(s.out, vLit), x)
	return val{how: vLit, n: x}
}

func (s *seedSrc) ptr(name string) pval {
	v, _ := s.get(name)
	p, ok := v.(pval)
	if v != nil && !ok {
		s.fail("%s: %T is not a pointer", name, v)
	}
	if p.idx > 15 || p.mode >= numPModes {
		s.fail("%s: bad pointer %+v", name, p)
	}
	s.out = append(s.out, p.idx<<4|byte(p.mode))
	if p.mode.hasOff() {
		s.out = binary.LittleEndian.AppendUint32(s.out, p.off)
	} else {
		p.off = 0
	}
	return p
}

func (s *seedSrc) raw(name string, n int) []byte {
	v, _ := s.get(name)
	b, ok := v.([]byte)
	if v != nil && !ok {
		s.fail("%s: %T is not bytes", name, v)
	}
	out := make([]byte, n)
	copy(out, b)
	s.out = append(s.out, out...)
	return out
}

// bytes finishes the program and returns its encoding.
func (s *seedSrc) bytes() ([]byte, error) {
	s.checkUsed()
	if s.i+1 != len(s.calls) && s.err == nil {
		s.err = fmt.Errorf("only %d of %d calls ran", s.i+1, len(s.calls))
	}
	return s.out, s.err
}

// spOf is the index of v among the interesting values of kind k on asic.
func spOf(asic ASIC, k kind, v uint64) spv {
	p, err := newProfile(asic, smallDRAM(asic))
	if err != nil {
		panic(err)
	}
	i := slices.Index(specials(&p)[k], v)
	if i < 0 || i > 63 {
		panic(fmt.Sprintf("%#x is not an interesting value of kind %d on %v", v, k, asic))
	}
	return sp(i)
}

// seedProfile is the profile of the fuzzed devices.
func seedProfile(asic ASIC) *profile {
	p, err := newProfile(asic, smallDRAM(asic))
	if err != nil {
		panic(err)
	}
	return &p
}

// userSOB is the address of the first SOB users may use on the sync
// manager the fuzzer knows of; fenceReg the address of a FENCE counter of
// the first user queue's stream.
func userSOB(asic ASIC) uint64 {
	p := seedProfile(asic)
	cfg, _ := p.cfgSpace()
	if p.dramVirtual {
		return cfg + gaudi2SMDcore0 + 4*uint64(p.firstSOB[0])
	}
	return cfg + gaudiSMWestSouth + 4*uint64(p.firstSOB[0])
}

func fenceReg(asic ASIC, id uint64) uint64 {
	p := seedProfile(asic)
	cfg, _ := p.cfgSpace()
	fence0 := uint64(gaudiQMFence0)
	if p.dramVirtual {
		fence0 = gaudi2QMFence0
	}
	q := queueTable(p)[spQueue(asic, 0)]
	return cfg + q.qmBase + fence0 + 4*uint64(q.stream) + id*qmFenceStride
}

// spQueue is the i-th user queue of the fuzzer's list (kQueue).
func spQueue(asic ASIC, i int) uint64 { return specials(seedProfile(asic))[kQueue][i] }

// internalQueue is Gaudi's first internal queue, which runs user CBs.
func internalQueue() uint64 {
	for i, q := range queueTable(seedProfile(Gaudi)) {
		if q.typ == queueInt && q.enabled && !q.binned && !q.driverOnly {
			return uint64(i)
		}
	}
	panic("no internal queue")
}

// word encodes a sync manager register value (packet.MonArm and the like).
func word(w interface {
	Word(packet.Format) (uint32, error)
}, asic ASIC) uint64 {
	f := packet.Gaudi2
	if asic == Gaudi {
		f = packet.Gaudi
	}
	v, err := w.Word(f)
	if err != nil {
		panic(err)
	}
	return uint64(v)
}

// syncMgrBase is the SOB_OBJ_0 address of the sync manager the seeds use.
func syncMgrBase(asic ASIC) uint64 {
	p := seedProfile(asic)
	cfg, _ := p.cfgSpace()
	if p.dramVirtual {
		return cfg + gaudi2SMDcore0
	}
	return cfg + gaudiSMWestSouth
}

// msgLongs is a packet list of MSG_LONGs writing value to address, in
// order.
func msgLongs(writes ...[2]uint64) call {
	c := call{}
	for i, w := range writes {
		p := fmt.Sprintf("p%d.", i)
		c[p+"t"], c[p+"a"], c[p+"b"] = 1, lit(w[0]), lit(w[1])
	}
	return c
}

// seedProg is a seed: a program for one or both ASICs and what it must
// reach when it runs.
type seedProg struct {
	name  string
	asics []ASIC
	// drivers are the drivers whose targets hold the seed (nil: both;
	// the out-of-tree driver's target is Gaudi2's only).
	drivers []Driver
	hdr     call
	calls   func(asic ASIC) []call
	check   func(t *testing.T, asic ASIC, r *runner)
}

var both = []ASIC{Gaudi2, Gaudi}

var (
	upstream = []Driver{DriverUpstream}
	oot      = []Driver{DriverOutOfTree}
)

// fuzzTarget is a fuzz target: its devices and its corpus directory.
type fuzzTarget struct {
	name   string
	asic   ASIC
	driver Driver
}

var fuzzTargets = []fuzzTarget{
	{"FuzzProgramGaudi2", Gaudi2, DriverUpstream},
	{"FuzzProgramGaudi", Gaudi, DriverUpstream},
	{"FuzzProgramGaudi2OOT", Gaudi2, DriverOutOfTree},
	{"FuzzProgramGaudi3", Gaudi3, DriverOutOfTree},
}

// holds reports whether target tg's corpus holds the seed.
func (sp *seedProg) holds(tg fuzzTarget) bool {
	drivers := sp.drivers
	if drivers == nil {
		drivers = []Driver{DriverUpstream, DriverOutOfTree}
	}
	return slices.Contains(sp.asics, tg.asic) && slices.Contains(drivers, tg.driver)
}

// lines returns the trace lines of r that contain every one of subs.
func lines(r *runner, subs ...string) []string {
	var out []string
	for _, l := range r.trace {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(l, s)
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// wantLine fails unless call #n of r's trace ends with a result that
// contains want.
// answer returns what call n answered, or "" when the trace has no call n.
func answer(r *runner, n int) string {
	prefix := fmt.Sprintf("#%d ", n)
	for _, l := range r.trace {
		if strings.HasPrefix(l, prefix) {
			_, res, _ := strings.Cut(l, " = ")
			return res
		}
	}
	return ""
}

func wantLine(t *testing.T, r *runner, n int, want string) {
	t.Helper()
	prefix := fmt.Sprintf("#%d ", n)
	for _, l := range r.trace {
		if strings.HasPrefix(l, prefix) {
			if _, res, _ := strings.Cut(l, " = "); !strings.Contains(res, want) {
				t.Errorf("call %d answered %q, want %q:\n%s", n, res, want, l)
			}
			return
		}
	}
	t.Errorf("no call %d in the trace", n)
}

// Packet helpers: a LIN_DMA from src to dst, and a FENCE that waits for a
// counter nothing increments.
func linDMA(i int, src, dst, size any, memset bool) call {
	p := fmt.Sprintf("p%d.", i)
	c := call{p + "t": 0, p + "h": 1, p + "a": src, p + "b": dst, p + "c": size}
	if memset {
		c[p+"d"] = 1
	}
	return c
}

// firstPackets keeps the arguments of packets 0..n-1 of c.
func firstPackets(c call, n int) call {
	out := call{}
	for k, v := range c {
		var i int
		if _, err := fmt.Sscanf(k, "p%d.", &i); err == nil && i < n {
			out[k] = v
		}
	}
	return out
}

func merge(cs ...call) call {
	out := call{}
	for _, c := range cs {
		for k, v := range c {
			out[k] = v
		}
	}
	return out
}

// firstQueue is the queue user CSs of the seeds run on: Gaudi2's PDMA_0_0,
// Gaudi's DMA_0_0 (external: a kernel CB).
const firstQueue = 0

var seedProgs = []seedProg{
	{
		name: "info", asics: both,
		calls: func(asic ASIC) []call {
			return []call{
				{"call": opInfo, "op": hl.HL_INFO_HW_IP_INFO},
				{"call": opInfo, "op": hl.HL_INFO_DRAM_USAGE},
				{"call": opInfo, "op": hl.HL_INFO_REGISTER_EVENTFD, "u0": res(0)},
				{"call": opInfo, "op": hl.HL_INFO_GET_EVENTS},
				{"call": opInfo, "op": hl.HL_INFO_RESET_COUNT, "size": 4},
				{"call": opInfo, "op": hl.HL_INFO_CS_COUNTERS, "ret": ptrTo(pGuardLo, 0, 64)},
				{"call": opInfo, "op": hl.HL_INFO_HW_IDLE, "ret": ptrTo(pKernel, 0, 0)},
				{"call": opInfo, "op": hl.HL_INFO_SYNC_MANAGER, "ret": ptrTo(pArenaEnd, 0, 8)},
				{"call": opInfo, "op": hl.HL_INFO_USER_MAPPINGS, "u0": 4},
				{"call": opInfo, "op": hl.HL_INFO_PLL_FREQUENCY, "u0": 3},
				{"call": opInfo, "op": lit(1000), "pad": 1},
				{"call": opFile, "mode": 5}, // a control file
				{"call": opInfo, "file": 2, "op": hl.HL_INFO_DEVICE_STATUS},
				{"call": opInfo, "file": 2, "op": hl.HL_INFO_GET_EVENTS},
				{"call": opInfo, "op": hl.HL_INFO_UNREGISTER_EVENTFD},
			}
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			wantLine(t, r, 0, "ok")
			wantLine(t, r, 2, "ok")
			wantLine(t, r, 5, "EFAULT")
			wantLine(t, r, 6, "EFAULT")
			wantLine(t, r, 12, "ok")
			wantLine(t, r, 13, "ENOTSUP") // EOPNOTSUPP
		},
	},
	{
		// The request's size and direction bits as the kernel takes
		// them, a NULL argument, a number outside the table, and the
		// legacy encoding on a DRM node.
		name: "request-encodings", asics: both,
		calls: func(asic ASIC) []call {
			return []call{
				{"call": opInfo, "req": 4, "reqv": 16, "op": hl.HL_INFO_DEVICE_STATUS},
				{"call": opInfo, "req": 4, "reqv": lit(0x100), "op": hl.HL_INFO_HW_IP_INFO},
				{"call": opCB, "req": 5, "reqv": 1, "op": hl.HL_CB_OP_CREATE},
				{"call": opInfo, "req": 6, "reqv": lit(0xC0186460)},
				{"call": opInfo, "req": 7},
				{"call": opInfo, "argnil": 15},
				{"call": opMem, "req": 4, "reqv": 8, "kind": mkAlloc},
			}
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			wantLine(t, r, 0, "ok")
			wantLine(t, r, 3, "EINVAL")
			wantLine(t, r, 4, "ENOTTY")
			wantLine(t, r, 5, "EFAULT")
		},
	},
	{
		name: "legacy-node", asics: both, hdr: call{"legacy": 7}, drivers: upstream,
		calls: func(asic ASIC) []call {
			return []call{
				{"call": opInfo, "op": hl.HL_INFO_HW_IP_INFO},
				{"call": opInfo, "req": 7},
				{"call": opCB, "op": hl.HL_CB_OP_CREATE},
				{"call": opWait, "seq": 1},
			}
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			wantLine(t, r, 0, "ok")
			wantLine(t, r, 1, "ENOTTY")
			wantLine(t, r, 2, "ok handle")
		},
	},
	{
		// Command buffers: create, map, write, info, destroy while
		// mapped, unmap; bad sizes and flags.
		name: "cb-lifecycle", asics: both,
		calls: func(asic ASIC) []call {
			return []call{
				{"call": opCB, "op": hl.HL_CB_OP_CREATE, "size": 8192},
				{"call": opCB, "op": hl.HL_CB_OP_INFO, "handle": res(0)},
				{"call": opMmap, "h": res(0)},
				merge(call{"call": opWrite, "to": 1, "np": 2}, call{"p0.t": 5}, call{"p1.t": 9, "p1.a": 7}),
				{"call": opCB, "op": hl.HL_CB_OP_DESTROY, "handle": res(0)},
				{"call": opCB, "op": hl.HL_CB_OP_INFO, "handle": res(0)},
				{"call": opMunmap},
				{"call": opMmap, "h": res(0)},
				{"call": opCB, "op": hl.HL_CB_OP_CREATE, "size": lit(hl.HL_MAX_CB_SIZE + 1)},
				{"call": opCB, "op": hl.HL_CB_OP_CREATE, "flags": hl.HL_CB_FLAGS_MAP},
				{"call": opCB, "op": hl.HL_CB_OP_INFO, "handle": res(0), "flags": hl.HL_CB_FLAGS_GET_DEVICE_VA},
				{"call": opCB, "op": 3},
			}
		},
		check: func(t *testing.T, asic ASIC, r *runner) {
			wantLine(t, r, 0, "ok handle")
			wantLine(t, r, 2, "ok 8192 bytes")
			wantLine(t, r, 6, "ok")
			wantLine(t, r, 7, "EINVAL") // destroyed and unmapped: gone
			wantLine(t, r, 8, "EINVAL")
			if asic == Gaudi2 {
				wantLine(t, r, 10, "ok va")
			} else {
				wantLine(t, r, 9, "ENOMEM") // [2/6] item 1: hl_cb_create on Gaudi
			}
		},
	},
	{
		// [2/6] item 1d: MAP_SHARED|MAP_FIXED with a CB handle mapped
		// page 0 as root and crashed inside x/sys. Timestamp and block
		// handles, whole and wrong lengths, other flags.
		name: "mmap-flags", asics: both,
		calls: func(asic ASIC) []call {
			return []call{
				{"call": opCB, "op": hl.HL_CB_OP_CREATE},
				{"call": opMmap, "h": res(0), "flags": unix.MAP_FIXED},
				{"call": opMmap, "h": res(0), "flags": lit(unix.MAP_FIXED_NOREPLACE)},
				{"call": opMmap, "h": res(0), "flags": 3}, // MAP_PRIVATE
				{"call": opMmap, "h": res(0), "len": 8192},
				{"call": opMem, "kind": mkTSAlloc},
				{"call": opMmap, "which": 1, "h": res(0)},
				{"call": opMmap, "which": 1, "h": res(0)}, // mapped already
				{"call": opMem, "kind": mkMapBlock},
				{"call": opMmap, "which": 2, "h": res(0)},
				{"call": opMmap, "which": 3, "h": lit(0x1234000)},
				{"call": opMmap, "h": res(0), "prot": 2, "flags": lit(unix.MAP_ANONYMOUS)},
			}
		},
		check: func(t *testing.T, asic ASIC, r *runner) {
			wantLine(t, r, 1, "EPERM")
			wantLine(t, r, 2, "EPERM")
			wantLine(t, r, 3, "ok")
			wantLine(t, r, 4, "EINVAL")
			wantLine(t, r, 6, "ok")
			wantLine(t, r, 7, "EINVAL")
			if asic == Gaudi2 {
				wantLine(t, r, 9, "ok")
			}
		},
	},
	{
		// Munmap takes exactly what Mmap returned, as x/sys does for
		// the kernel's File: part of a mapping, or a mapping through
		// another file, is EINVAL and leaves the mapping whole.
		name: "munmap-parts", asics: both,
		calls: func(asic ASIC) []call {
			return []call{
				{"call": opCB, "op": hl.HL_CB_OP_CREATE, "size": 8192},
				{"call": opMmap, "h": res(0)},
				{"call": opFile, "mode": 5}, // a control file, which did not map it
				{"call": opMunmap, "part": 1},
				{"call": opMunmap, "part": 2},
				{"call": opMunmap, "part": 3},
				{"call": opMunmap},
				{"call": opMunmap},
			}
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			wantLine(t, r, 3, "EINVAL")
			wantLine(t, r, 4, "EINVAL")
			wantLine(t, r, 5, "EINVAL")
			wantLine(t, r, 6, "ok")
			wantLine(t, r, 7, "EINVAL")
		},
	},
	{
		// [2/6] item 1a: WAIT_CS on sequence 0 dereferenced an empty
		// fence slot; a wait CS whose sequence array holds 0 too.
		name: "wait-seq0", asics: both,
		calls: func(asic ASIC) []call {
			return []call{
				{"call": opWait},
				{"call": opWait, "timeout": spOf(asic, kTimeoutUs, 1000)},
				{"call": opCS, "kind": csWait, "q": firstQueue, "ns": 1},
				{"call": opWait, "seq": spOf(asic, kSeq, ^uint64(0))},
				{"call": opWait, "seq": 5},
			}
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			wantLine(t, r, 0, "ok status 0 flags 0x1") // COMPLETED, GONE
			wantLine(t, r, 1, "ok status 0 flags 0x1")
			wantLine(t, r, 2, "ok")
		},
	},
	{
		// [2/6] item 1b: Device.Reset beside a new file's first CB call
		// raced on the file's submission state.
		name: "reset-first-call", asics: both,
		calls: func(asic ASIC) []call {
			var cs []call
			for range 4 {
				cs = append(cs,
					call{"call": opFile, "mode": 0},
					call{"call": opReset, "async": 3},
					call{"call": opCB, "op": hl.HL_CB_OP_INFO},
					call{"call": opJoin})
			}
			return cs
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			if n := len(lines(r, "file", "= ok")); n != 4 {
				t.Errorf("%d reopens succeeded, want 4", n)
			}
		},
	},
	{
		// [2/6] item 1c: DMA into host memory the caller unmapped after
		// MAP crashed the process. Here the page under the device is
		// replaced by a PROT_NONE one: gone for the simulator, as an
		// unmapped page is.
		name: "dma-gone-host", asics: both,
		calls: func(asic ASIC) []call {
			host := call{"call": opMem, "kind": mkMapHost} // the arena's host part: res(0) of kVA
			var dram []call
			var src any
			if asic == Gaudi {
				src = spOf(asic, kAddr, gaudiDRAMUserBase)
			} else {
				dram = []call{
					{"call": opMem, "kind": mkAlloc},
					{"call": opMem, "kind": mkMapDevice, "handle": res(0)},
				}
				src = res(0)
			}
			dst := res(0)
			if asic == Gaudi2 {
				dst = res(1)
			}
			pk := merge(
				linDMA(0, src, dst, 8192, false), // DRAM to the host's first two pages
				linDMA(1, dst, src, 8192, false), // and back
				linDMA(2, lit(0x5a5a5a5a5a5a5a5a), dst, 64, true),
				call{"p3.t": 1, "p3.a": dst, "p3.b": 7}) // MSG_LONG
			var cs []call
			cs = append(cs, host)
			cs = append(cs, dram...)
			chunkSrc := 0 // packets in host memory
			if asic == Gaudi {
				chunkSrc = 1 // a kernel CB
			}
			if asic == Gaudi2 {
				// A user CB in host memory, 1 MB into the host part.
				cs = append(cs, merge(call{"call": opWrite, "off": lit(1 << 20), "np": 4}, pk),
					call{"call": opHost}, // page 0 of the host part: PROT_NONE
					call{"call": opCS, "n": 1, "x0.q": firstQueue})
			} else {
				// A kernel CB on an external queue.
				cs = append(cs, call{"call": opCB, "op": hl.HL_CB_OP_CREATE},
					call{"call": opMmap, "h": res(0)},
					merge(call{"call": opWrite, "to": 1, "np": 4}, pk),
					call{"call": opHost},
					call{"call": opCS, "n": 1, "x0.src": 1, "x0.q": firstQueue})
			}
			cs = append(cs, call{"call": opWait, "seq": res(0), "timeout": spOf(asic, kTimeoutUs, 100_000)},
				call{"call": opHost, "how": 2}, // fresh pages: a remap under the device
				call{"call": opHost, "how": 1, "off": lit(4096)},
				call{"call": opCS, "n": 1, "x0.src": chunkSrc, "x0.q": firstQueue},
				call{"call": opWait, "seq": res(0), "timeout": spOf(asic, kTimeoutUs, 100_000)})
			// A user CB whose page goes away before it runs (Gaudi: on an
			// internal queue): the fetch finds it gone.
			userQ := uint64(firstQueue)
			if asic == Gaudi {
				userQ = internalQueue()
			}
			cs = append(cs,
				merge(call{"call": opWrite, "off": lit(2 << 20), "np": 1}, linDMA(0, src, dst, 64, false)),
				call{"call": opHost, "off": lit(2 << 20)},
				call{"call": opCS, "n": 1, "x0.q": userQ},
				call{"call": opWait, "seq": res(0), "timeout": spOf(asic, kTimeoutUs, 10_000)})
			return cs
		},
		check: func(t *testing.T, asic ASIC, r *runner) {
			if n := len(lines(r, "WAIT_CS", "= ok status 0")); n < 2 {
				t.Errorf("%d CSs completed, want 2 at least", n)
			}
			if hf := r.d.HostFaults(); hf.Count == 0 {
				t.Errorf("no DMA found the host page gone: %+v", hf)
			}
		},
	},
	{
		// Every packet the engines execute, in one CS: copies between
		// host memory, DRAM and SRAM (one with an endian swap), a memset,
		// MSG_LONG to a SOB and to the queue's own FENCE counter, which
		// lets the FENCE after it pass, WAIT, MSG_SHORT, a CP_DMA into a
		// command buffer, the MSI-X doorbell (Gaudi2's user interrupts),
		// and the packets that do nothing here. Then undefined opcodes,
		// MSG_PROT and a DMA to an unmapped address, and the INFO ops
		// that report what they left.
		name: "packets", asics: both,
		calls: func(asic ASIC) []call {
			p := seedProfile(asic)
			var cs []call
			var host, dram, cbva any
			if asic == Gaudi2 {
				cs = []call{
					{"call": opMem, "kind": mkMapHost},
					{"call": opMem, "kind": mkAlloc},
					{"call": opMem, "kind": mkMapDevice, "handle": res(0)},
					{"call": opCB, "op": hl.HL_CB_OP_CREATE, "flags": hl.HL_CB_FLAGS_MAP},
					{"call": opCB, "op": hl.HL_CB_OP_INFO, "handle": res(0), "flags": hl.HL_CB_FLAGS_GET_DEVICE_VA},
				}
				host, dram, cbva = res(2), res(1), res(0)
			} else {
				cs = []call{{"call": opMem, "kind": mkMapHost}}
				host, dram = res(0), spOf(asic, kAddr, p.dramUserBase)
			}
			// The command buffer CP_DMA runs (Gaudi2: the CB mapped into
			// the device MMU): a NOP and a MSG_LONG.
			if asic == Gaudi {
				cs = append(cs, call{"call": opCB, "op": hl.HL_CB_OP_CREATE})
			}
			cs = append(cs,
				call{"call": opMmap, "h": res(0)},
				call{"call": opWrite, "to": 1, "np": 2, "p0.t": 5, "p1.t": 1, "p1.a": spOf(asic, kAddr, userSOB(asic)), "p1.b": 1})
			sram := spOf(asic, kAddr, p.sramUserBase)
			userQ := uint64(firstQueue) // a queue that runs CBs in host memory
			if asic == Gaudi {
				userQ = internalQueue()
			}
			pk := merge(
				linDMA(0, host, dram, 4096, false),
				linDMA(1, lit(0x0102030405060708), sram, 256, true),
				linDMA(2, sram, dram, 256, false), call{"p2.d": 4}, // endian swap (Gaudi2)
				call{"p3.t": 1, "p3.a": spOf(asic, kAddr, userSOB(asic)), "p3.b": 1},
				call{"p4.t": 1, "p4.a": spOf(asic, kAddr, fenceReg(asic, 0)), "p4.b": 1},
				call{"p5.t": 3, "p5.b": 1, "p5.c": 1}, // FENCE 0 reaches 1
				call{"p6.t": 4, "p6.a": 1, "p6.b": 1},
				call{"p7.t": 2, "p7.a": 1, "p7.c": 1},
				call{"p8.t": 5},
				call{"p9.t": 5}, call{"p10.t": 8, "p10.a": 3}, call{"p11.t": 7}, call{"p12.t": 9, "p12.a": 9},
				call{"p13.t": 10, "p13.c": 2}, call{"p14.t": 13})
			if asic == Gaudi2 {
				pk = merge(pk, call{"p8.t": 12, "p8.a": cbva, "p8.b": 24},
					call{"p15.t": 1, "p15.a": spOf(asic, kAddr, gaudi2CFGBase+msixDoorbell), "p15.b": 48})
				cs = append(cs,
					call{"call": opWait, "kind": waitUserAddr, "target": 1, "timeout": spOf(asic, kTimeoutUs, 100_000), "async": 3},
					merge(call{"call": opWrite, "off": lit(1 << 20), "np": 16}, pk),
					call{"call": opCS, "n": 1, "x0.q": firstQueue})
			} else {
				// Gaudi: the copies and messages on an external queue (a
				// kernel CB, which the driver parses: no CP_DMA there),
				// and a user CB on an internal queue.
				cs = append(cs,
					call{"call": opCB, "op": hl.HL_CB_OP_CREATE},
					call{"call": opMmap, "h": res(0)},
					merge(call{"call": opWrite, "to": 1, "np": 8}, firstPackets(pk, 8)),
					merge(call{"call": opWrite, "off": lit(1 << 20), "np": 15}, pk),
					call{"call": opCS, "n": 2, "x0.src": 1, "x0.q": firstQueue, "x1.q": internalQueue()})
			}
			cs = append(cs,
				call{"call": opWait, "seq": res(0), "timeout": spOf(asic, kTimeoutUs, 100_000)},
				call{"call": opJoin},
				merge(call{"call": opWrite, "off": lit(2 << 20), "np": 3},
					call{"p0.t": 11, "p0.a": dram, "p0.b": dram},
					call{"p1.t": 14, "p1.a": spOf(asic, kAddr, userSOB(asic))},
					call{"p2.t": 15, "p2.a": lit(0x1f000000_00000000), "p2.d": 1}),
				call{"call": opCS, "n": 1, "x0.q": userQ},
				call{"call": opWait, "seq": res(0), "timeout": spOf(asic, kTimeoutUs, 100_000)},
				merge(call{"call": opWrite, "off": lit(3 << 20), "np": 1}, linDMA(0, lit(0x7000000000), dram, 64, false)),
				call{"call": opCS, "n": 1, "x0.q": userQ},
				call{"call": opWait, "seq": res(0), "timeout": spOf(asic, kTimeoutUs, 100_000)},
				call{"call": opInfo, "op": hl.HL_INFO_UNDEFINED_OPCODE_EVENT},
				call{"call": opInfo, "op": hl.HL_INFO_PAGE_FAULT_EVENT},
				call{"call": opInfo, "op": hl.HL_INFO_RAZWI_EVENT},
				call{"call": opInfo, "op": hl.HL_INFO_USER_MAPPINGS, "u0": 8},
				call{"call": opInfo, "op": hl.HL_INFO_ENGINE_STATUS},
				call{"call": opInfo, "op": hl.HL_INFO_HW_IDLE},
				call{"call": opInfo, "op": hl.HL_INFO_CS_COUNTERS},
				call{"call": opInfo, "op": hl.HL_INFO_OPEN_STATS},
				call{"call": opInfo, "op": hl.HL_INFO_LAST_ERR_OPEN_DEV_TIME},
				call{"call": opInfo, "op": hl.HL_INFO_DEV_MEM_ALLOC_PAGE_SIZES},
				call{"call": opInfo, "op": hl.HL_INFO_HW_EVENTS_AGGREGATE},
				call{"call": opInfo, "op": hl.HL_INFO_HW_ERR_EVENT},
				call{"call": opInfo, "op": hl.HL_INFO_FW_ERR_EVENT},
				call{"call": opInfo, "op": hl.HL_INFO_USER_ENGINE_ERR_EVENT},
				call{"call": opInfo, "op": hl.HL_INFO_CS_TIMEOUT_EVENT})
			return cs
		},
		check: func(t *testing.T, asic ASIC, r *runner) {
			if n := len(lines(r, "WAIT_CS", "seq=res0", "= ok status 0")); n < 1 {
				t.Errorf("the CS of every packet did not complete")
			}
		},
	},
	{
		// The sync manager's monitors: payloads armed on SOB values, a
		// 60-bit long monitor, a payload that raises a user interrupt
		// through the MSI-X doorbell (Gaudi2), which ends a wait on a
		// user address and fills a registered timestamp, and one that
		// writes SRAM or another SOB.
		name: "monitors", asics: both,
		calls: func(asic ASIC) []call {
			p := seedProfile(asic)
			sm := syncMgrBase(asic)
			l := gaudiSMLayout
			if asic == Gaudi2 {
				l = gaudi2SMLayout
			}
			mon := func(reg uint64, i uint64) uint64 { return sm + reg + 4*i }
			target := p.sramUserBase // where monitor 1 writes
			var data0 uint64 = 1     // what monitor 0 writes to SOB 16 (Gaudi)
			addr0 := sm + 4*16
			if asic == Gaudi2 {
				addr0, data0 = gaudi2CFGBase+msixDoorbell, 48 // user interrupt 48
			}
			writes := [][2]uint64{
				{mon(l.payL, 0), addr0 & 0xffffffff}, {mon(l.payH, 0), addr0 >> 32}, {mon(l.payData, 0), data0},
				{mon(l.arm, 0), word(packet.MonArm{Group: 0, Mask: 0xFE, Value: 1}, asic)},
				{mon(l.payL, 1), target & 0xffffffff}, {mon(l.payH, 1), target >> 32}, {mon(l.payData, 1), 0xabcd},
				{mon(l.arm, 1), word(packet.MonArm{Group: 0, Mask: 0xFD, Value: 2, Equal: true}, asic)},
				{sm, word(packet.SOBUpdate{Value: 1}, asic)},                   // SOB 0 = 1: monitor 0 fires
				{sm + 4, word(packet.SOBUpdate{Value: 1, Add: true}, asic)},    // SOB 1 += 1
				{sm + 4, word(packet.SOBUpdate{Value: 1, Add: true}, asic)},    // SOB 1 = 2: monitor 1 fires
				{sm + 4*16, word(packet.SOBUpdate{Value: 7, Add: true}, asic)}, // SOB 16
			}
			if asic == Gaudi2 {
				writes = append(writes,
					[2]uint64{mon(l.cfg, 4), word(packet.MonConfig{LongSOB: true}, asic)},
					[2]uint64{mon(l.arm, 4), word(packet.MonArm{Group: 3, Mask: 0xFE, Value: 5}, asic)},
					[2]uint64{sm + 4*24, word(packet.SOBUpdate{Value: 9, LongMode: true}, asic)},
					[2]uint64{sm + 4*24, word(packet.SOBUpdate{Value: 1, LongMode: true, Add: true}, asic)})
			}
			var cs []call
			if asic == Gaudi2 {
				cs = []call{
					{"call": opMem, "kind": mkMapHost},
					{"call": opWait, "kind": waitUserAddr, "irq": 48, "target": 1, "timeout": spOf(asic, kTimeoutUs, 100_000), "async": 3},
					{"call": opCB, "op": hl.HL_CB_OP_CREATE},
					{"call": opMem, "kind": mkTSAlloc},
					{"call": opWait, "kind": waitRegisterTS, "irq": 48, "cq": res(0), "ts": res(0), "tsoff": 1, "target": 1},
					{"call": opWait, "kind": waitKernelCQ, "irq": 48, "cq": res(0), "target": 1, "timeout": spOf(asic, kTimeoutUs, 100_000), "async": 3},
					merge(call{"call": opWrite, "off": lit(1 << 20), "np": len(writes)}, msgLongs(writes...)),
					{"call": opCS, "n": 1, "x0.q": firstQueue},
				}
			} else {
				cs = []call{
					{"call": opCB, "op": hl.HL_CB_OP_CREATE},
					{"call": opMmap, "h": res(0)},
					merge(call{"call": opWrite, "to": 1, "np": len(writes)}, msgLongs(writes...)),
					{"call": opCS, "n": 1, "x0.src": 1, "x0.q": firstQueue},
				}
			}
			return append(cs,
				call{"call": opWait, "seq": res(0), "timeout": spOf(asic, kTimeoutUs, 100_000)},
				call{"call": opJoin},
				call{"call": opInfo, "op": hl.HL_INFO_SYNC_MANAGER})
		},
		check: func(t *testing.T, asic ASIC, r *runner) {
			if len(lines(r, "CS n=1", "= ok seq")) != 1 || len(lines(r, "WAIT_CS", "seq=res0", "= ok status 0")) != 1 {
				t.Error("the CS of the monitors did not complete")
			}
		},
	},
	{
		// DRAM: copies between two ranges (Gaudi2: two mappings of one
		// allocation, the second allocation finding no page left), a
		// fill and a zeroing (which gives pages back), into an exported
		// range, over a PCIe link of 1 GB/s.
		name: "dram", asics: both, hdr: call{"pcie": 3},
		calls: func(asic ASIC) []call {
			p := seedProfile(asic)
			var cs []call
			var a, b, hostVA any
			if asic == Gaudi2 {
				cs = []call{
					{"call": opMem, "kind": mkMapHost},
					{"call": opMem, "kind": mkAlloc},
					{"call": opMem, "kind": mkMapDevice, "handle": res(0)},
					{"call": opMem, "kind": mkAlloc},
					{"call": opMem, "kind": mkMapDevice, "handle": res(0)},
					{"call": opMem, "kind": mkExport, "a0": res(0), "a1": lit(p.dramPageSize)},
				}
				a, b, hostVA = res(1), res(0), res(2)
			} else {
				cs = []call{
					{"call": opMem, "kind": mkMapHost},
					{"call": opMem, "kind": mkAlloc, "a0": lit(4 << 20)},
					{"call": opMem, "kind": mkExport, "a0": lit(p.dramUserBase), "a1": lit(4 << 20)},
				}
				a, b, hostVA = spOf(asic, kAddr, p.dramUserBase), lit(p.dramUserBase+2<<20), res(0)
			}
			pk := merge(
				linDMA(0, hostVA, a, 8192, false),
				linDMA(1, a, b, 8192, false),
				linDMA(2, lit(0x1111111111111111), a, 1<<20, true),
				linDMA(3, lit(0), a, 1<<20, true),
				linDMA(4, a, b, 1<<20, false),
				linDMA(5, b, hostVA, 8192, false))
			if asic == Gaudi2 {
				cs = append(cs,
					merge(call{"call": opWrite, "off": lit(1 << 20), "np": 6}, pk),
					call{"call": opCS, "n": 1, "x0.q": firstQueue})
			} else {
				cs = append(cs,
					call{"call": opCB, "op": hl.HL_CB_OP_CREATE},
					call{"call": opMmap, "h": res(0)},
					merge(call{"call": opWrite, "to": 1, "np": 6}, pk),
					call{"call": opCS, "n": 1, "x0.src": 1, "x0.q": firstQueue})
			}
			return append(cs,
				call{"call": opWait, "seq": res(0), "timeout": spOf(asic, kTimeoutUs, 100_000)},
				call{"call": opReset},
				call{"call": opFile, "mode": 1},
				call{"call": opFile, "mode": 2})
		},
		check: func(t *testing.T, asic ASIC, r *runner) {
			if len(lines(r, "WAIT_CS", "= ok status 0")) != 1 {
				t.Error("the CS of the copies did not complete")
			}
			if len(lines(r, "MEMORY kind=6", "ok fd")) != 1 {
				t.Error("no export")
			}
		},
	},
	{
		// Encapsulated signals (Gaudi): a reservation, a staged
		// submission that claims it, a wait on its signals, the
		// unreservation.
		name: "encaps", asics: both,
		calls: func(asic ASIC) []call {
			staged := uint64(hl.HL_CS_FLAGS_STAGED_SUBMISSION | hl.HL_CS_FLAGS_ENCAP_SIGNALS)
			cfg, _ := seedProfile(asic).cfgSpace()
			// The staged CS signals the reserved SOB itself, as a user CB
			// must (Gaudi: SOB 128 of the west-south sync manager, which
			// the reservation below answers).
			sig := msgLongs([2]uint64{cfg + gaudiSMWestSouth + 0x200, word(packet.SOBUpdate{Value: 8, Add: true}, asic)})
			return []call{
				{"call": opCB, "op": hl.HL_CB_OP_CREATE},
				{"call": opMmap, "h": res(0)},
				merge(call{"call": opWrite, "to": 1, "np": 1}, sig),
				{"call": opCS, "kind": csReserve, "q": firstQueue, "count": 8},
				{"call": opCS, "flags": lit(staged | hl.HL_CS_FLAGS_STAGED_SUBMISSION_FIRST), "seq": 1, // the handle id
					"n": 1, "x0.src": 1, "x0.q": firstQueue},
				{"call": opCS, "kind": csWait, "q": 1, "mode": 1, "es": res(0), "eo": 3,
					"flags": lit(hl.HL_CS_FLAGS_ENCAP_SIGNALS)},
				{"call": opCS, "flags": lit(staged | hl.HL_CS_FLAGS_STAGED_SUBMISSION_LAST), "seq": res(1),
					"n": 1, "x0.src": 1, "x0.q": firstQueue},
				{"call": opWait, "seq": res(0), "timeout": spOf(asic, kTimeoutUs, 100_000)},
				{"call": opCS, "kind": csUnreserve, "id": res(0)},
				{"call": opCS, "kind": csReserve, "q": firstQueue, "count": 4},
				{"call": opFile, "mode": 0}, // the reservation goes with the context
			}
		},
		check: func(t *testing.T, asic ASIC, r *runner) {
			wantLine(t, r, 3, "ok handle")
			if asic == Gaudi {
				wantLine(t, r, 3, "sob 0x492200")
				wantLine(t, r, 4, "ok seq")
				wantLine(t, r, 5, "ok seq")
				wantLine(t, r, 7, "ok status 0")
			}
		},
	},
	{
		// Gaudi2's completion queues: a monitor with CQ and LBW writes
		// enabled increments a 64-bit counter in a command buffer mapped
		// into the device (the CQ's base, set through the sync manager's
		// global registers) and writes the MSI-X doorbell, which ends a
		// kernel-CQ wait on that counter and fills a timestamp
		// registered on it.
		name: "kernel-cq", asics: []ASIC{Gaudi2},
		calls: func(asic ASIC) []call {
			p := seedProfile(asic)
			sm := syncMgrBase(asic)
			l := gaudi2SMLayout
			cq := uint64(5)
			cbVA := p.vm.host.start // the first CB mapped in a new context (the CB pool's start)
			const mon, grp = 8, 2   // monitor 8 watches SOB 16
			writes := msgLongs(
				[2]uint64{sm + smGlblCQBaseL + 4*cq, cbVA & 0xffffffff},
				[2]uint64{sm + smGlblCQBaseH + 4*cq, cbVA >> 32},
				[2]uint64{sm + smGlblCQIncMode + 4*cq, 1},
				[2]uint64{sm + smGlblLBWAddrL + 4*cq, msixDoorbell},
				[2]uint64{sm + smGlblLBWAddrH + 4*cq, 0},
				[2]uint64{sm + smGlblLBWData + 4*cq, 48},
				[2]uint64{sm + l.payL + 4*mon, cq},
				[2]uint64{sm + l.payData + 4*mon, 1},
				[2]uint64{sm + l.cfg + 4*mon, word(packet.MonConfig{CQEnable: true, LBWEnable: true}, asic)},
				[2]uint64{sm + l.arm + 4*mon, word(packet.MonArm{Group: grp, Mask: 0xFE, Value: 1}, asic)},
				[2]uint64{sm + 4*8*grp, word(packet.SOBUpdate{Value: 1}, asic)})
			return []call{
				{"call": opMem, "kind": mkMapHost},
				{"call": opCB, "op": hl.HL_CB_OP_CREATE, "flags": hl.HL_CB_FLAGS_MAP},
				{"call": opCB, "op": hl.HL_CB_OP_INFO, "handle": res(0), "flags": hl.HL_CB_FLAGS_GET_DEVICE_VA},
				{"call": opMem, "kind": mkTSAlloc},
				{"call": opWait, "kind": waitRegisterTS, "irq": 48, "cq": res(0), "ts": res(0), "tsoff": 2, "target": 1},
				{"call": opWait, "kind": waitKernelCQ, "irq": 48, "cq": res(0), "target": 1,
					"timeout": spOf(asic, kTimeoutUs, 100_000), "async": 3},
				merge(call{"call": opWrite, "off": lit(1 << 20), "np": 11}, writes),
				{"call": opCS, "n": 1, "x0.q": firstQueue},
				{"call": opWait, "seq": res(0), "timeout": spOf(asic, kTimeoutUs, 100_000)},
				{"call": opJoin},
				{"call": opMmap, "which": 1, "h": res(0)},
				{"call": opFile, "mode": 0}, // the registration goes with the context
			}
		},
		check: func(t *testing.T, asic ASIC, r *runner) {
			wantLine(t, r, 2, fmt.Sprintf("ok va %#x", seedProfile(asic).vm.host.start))
			wantLine(t, r, 5, "ok status 0") // the kernel-CQ wait completed
		},
	},
	{
		// Every kind of CS: signal, wait, collective wait, signal
		// reservations, engine and engine core commands, HBW flush,
		// staged submissions and restore chunks.
		name: "cs-kinds", asics: both,
		calls: func(asic ASIC) []call {
			return []call{
				{"call": opCS, "kind": csSignal, "q": firstQueue},
				{"call": opCS, "kind": csWait, "q": firstQueue, "ns": 1, "s0": res(0)},
				{"call": opCS, "kind": csCollective, "q": firstQueue, "ns": 1, "s0": res(1)},
				{"call": opCS, "kind": csReserve, "q": firstQueue, "count": 4},
				{"call": opCS, "kind": csWait, "q": firstQueue, "mode": 1, "es": res(0), "eo": 2,
					"flags": lit(hl.HL_CS_FLAGS_ENCAP_SIGNALS)},
				{"call": opCS, "kind": csUnreserve, "id": res(0)},
				{"call": opCS, "kind": csEngineCores, "n": 2, "e0": 0, "e1": 5, "cmd": int(hl.HL_ENGINE_CORE_HALT)},
				{"call": opCS, "kind": csEngineCores, "n": 2, "e0": 0, "e1": 5, "cmd": int(hl.HL_ENGINE_CORE_RUN)},
				{"call": opCS, "kind": csEngines, "n": 1, "e0": 0, "cmd": int(hl.HL_ENGINE_STALL)},
				{"call": opCS, "kind": csEngines, "n": 1, "e0": 0, "cmd": int(hl.HL_ENGINE_RESUME)},
				{"call": opCS, "kind": csFlush},
				{"call": opCB, "op": hl.HL_CB_OP_CREATE},
				{"call": opMmap, "h": res(0)},
				{"call": opWrite, "to": 1, "np": 1, "p0.t": 5},
				{"call": opCS, "kind": csRawFlags, "flags": lit(hl.HL_CS_FLAGS_SIGNAL | hl.HL_CS_FLAGS_WAIT)},
				{"call": opCS, "flags": lit(hl.HL_CS_FLAGS_STAGED_SUBMISSION | hl.HL_CS_FLAGS_STAGED_SUBMISSION_FIRST),
					"n": 1, "x0.src": 1, "x0.q": firstQueue},
				{"call": opCS, "flags": lit(hl.HL_CS_FLAGS_STAGED_SUBMISSION | hl.HL_CS_FLAGS_STAGED_SUBMISSION_LAST),
					"seq": res(0), "n": 1, "x0.src": 1, "x0.q": firstQueue},
				{"call": opCS, "flags": hl.HL_CS_FLAGS_FORCE_RESTORE, "nr": 1, "r0.src": 1, "r0.q": firstQueue,
					"n": 1, "x0.src": 1, "x0.q": firstQueue},
				{"call": opWait, "seq": res(0), "timeout": spOf(asic, kTimeoutUs, 10_000)},
			}
		},
		check: func(t *testing.T, asic ASIC, r *runner) {
			wantLine(t, r, 0, "ok seq")
			wantLine(t, r, 2, "EINVAL")
			wantLine(t, r, 3, "ok handle")
			wantLine(t, r, 10, "ok")
			if asic == Gaudi2 {
				wantLine(t, r, 6, "ok")
				wantLine(t, r, 8, "ok")
				wantLine(t, r, 15, "EPERM") // staged submissions are Gaudi's
			} else {
				wantLine(t, r, 6, "EPERM")
				wantLine(t, r, 15, "ok seq")
				wantLine(t, r, 16, "ok seq")
				wantLine(t, r, 17, "ok seq")
			}
		},
	},
	{
		// A CS that never ends (a FENCE on a counter nothing raises)
		// with a timeout of 0 s: the TDR hard-resets and the file dies;
		// then again with an eventfd registered, which runs the release
		// watchdog; a reopen after each.
		name: "cs-timeout", asics: both,
		calls: func(asic ASIC) []call {
			stuck := func() []call {
				if asic == Gaudi2 {
					return []call{
						{"call": opWrite, "np": 1, "p0.t": 3, "p0.b": 1},
						{"call": opCS, "n": 1, "x0.q": firstQueue, "flags": hl.HL_CS_FLAGS_CUSTOM_TIMEOUT},
					}
				}
				return []call{
					{"call": opCB, "op": hl.HL_CB_OP_CREATE},
					{"call": opMmap, "h": res(0)},
					{"call": opWrite, "to": 1, "np": 1, "p0.t": 3, "p0.b": 1},
					{"call": opCS, "n": 1, "x0.src": 1, "x0.q": firstQueue, "flags": hl.HL_CS_FLAGS_CUSTOM_TIMEOUT},
				}
			}
			var cs []call
			if asic == Gaudi2 {
				cs = append(cs, call{"call": opMem, "kind": mkMapHost})
			}
			cs = append(cs, stuck()...)
			cs = append(cs,
				call{"call": opWait, "seq": res(0), "timeout": spOf(asic, kTimeoutUs, 100_000)},
				call{"call": opInfo, "op": hl.HL_INFO_CS_TIMEOUT_EVENT},
				call{"call": opSleep, "d": 5}, // the reset that killed the file may still run: EAGAIN
				call{"call": opFile, "mode": 0},
				call{"call": opInfo, "op": hl.HL_INFO_REGISTER_EVENTFD, "u0": res(0)})
			if asic == Gaudi2 {
				cs = append(cs, call{"call": opMem, "kind": mkMapHost})
			}
			cs = append(cs, stuck()...)
			cs = append(cs,
				call{"call": opWait, "seq": res(0), "timeout": spOf(asic, kTimeoutUs, 100_000)},
				call{"call": opSleep, "d": 5},
				call{"call": opInfo, "op": hl.HL_INFO_GET_EVENTS},
				call{"call": opSleep, "d": 5},
				call{"call": opFile, "mode": 0})
			return cs
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			if len(lines(r, "EOWNERDEAD")) == 0 {
				t.Error("no call found the file killed")
			}
			if n := len(lines(r, "file", "= ok")); n != 2 {
				t.Errorf("%d reopens succeeded, want 2", n)
			}
		},
	},
	{
		// Waits of every kind: multi-CS (Gaudi), user interrupts on a
		// user address, on a kernel CQ, and timestamp registrations
		// (Gaudi2), with a huge timeout that the watchdog's reset ends.
		name: "wait-kinds", asics: both,
		calls: func(asic ASIC) []call {
			return []call{
				{"call": opCS, "kind": csSignal, "q": firstQueue},
				{"call": opCS, "kind": csSignal, "q": firstQueue},
				{"call": opWait, "kind": waitMulti, "n": 3, "s0": res(0), "s1": res(1), "s2": 0,
					"timeout": spOf(asic, kTimeoutUs, 10_000)},
				{"call": opWait, "kind": waitMulti, "n": 2, "len": lit(33)},
				{"call": opWait, "kind": waitUserAddr, "value": 5, "target": 3},
				{"call": opWait, "kind": waitUserAddr, "target": 3, "timeout": 100},
				{"call": opWait, "kind": waitUserAddr, "target": 3, "addr": ptrTo(pGuardHi, 0, 0)},
				{"call": opCB, "op": hl.HL_CB_OP_CREATE},
				{"call": opWait, "kind": waitKernelCQ, "cq": res(0), "target": 1, "timeout": 100},
				{"call": opMem, "kind": mkTSAlloc},
				{"call": opWait, "kind": waitRegisterTS, "cq": res(1), "ts": res(0), "tsoff": 3, "target": 1},
				{"call": opWait, "kind": waitUserAddr, "target": 3, "timeout": spOf(asic, kTimeoutUs, 1<<32), "async": 3},
				{"call": opSleep, "d": 3},
				{"call": opJoin},
			}
		},
		check: func(t *testing.T, asic ASIC, r *runner) {
			if asic == Gaudi {
				wantLine(t, r, 2, "ok")
				wantLine(t, r, 4, "EPERM")
			} else {
				wantLine(t, r, 2, "EPERM")
				wantLine(t, r, 4, "ok status 0")
				wantLine(t, r, 5, "ok status 1")
				wantLine(t, r, 6, "EFAULT")
				wantLine(t, r, 10, "ok status 0")
			}
		},
	},
	{
		// The MEMORY ops, good and bad: allocations, mappings of device
		// and host memory with hints, blocks, exports, timestamps.
		name: "memory", asics: both,
		calls: func(asic ASIC) []call {
			return []call{
				{"call": opMem, "kind": mkAlloc},
				{"call": opMem, "kind": mkAlloc, "a0": spOf(asic, kSize, ^uint64(0))},
				{"call": opMem, "kind": mkMapDevice, "handle": res(0)},
				{"call": opMem, "kind": mkExport, "a0": res(0)},
				{"call": opMem, "kind": mkExport, "a0": res(1), "flags": 2}, // O_RDONLY
				{"call": opMem, "kind": mkUnmap, "a0": res(1)},
				{"call": opMem, "kind": mkFree, "a0": res(0)},
				{"call": opMem, "kind": mkMapHost, "host": ptrTo(pArena, 0, 3<<20), "size": 8192},
				{"call": opMem, "kind": mkMapHost, "size": 8192, "hint": res(0), "flags": hl.HL_MEM_FORCE_HINT},
				{"call": opMem, "kind": mkMapHost, "host": ptrTo(pGuardHi, 0, 0), "size": 4096},
				{"call": opMem, "kind": mkMapHost, "host": ptrTo(pArenaEnd, 0, 4095), "size": 8192},
				{"call": opMem, "kind": mkMapHost, "host": ptrTo(pSmall, 0, 5), "size": 4096},
				{"call": opMem, "kind": mkUnmap, "a0": res(0)},
				{"call": opMem, "kind": mkMapBlock, "a0": spOf(asic, kBlockAddr, gaudi2CFGBase)},
				{"call": opMem, "kind": mkTSAlloc, "nelem": spOf(asic, kCount, 1<<20+1)},
				{"call": opMem, "kind": mkRawOp, "op": 9},
				{"call": opFile, "mode": 1}, // the exports keep the context
				{"call": opFile, "mode": 2},
			}
		},
		check: func(t *testing.T, asic ASIC, r *runner) {
			wantLine(t, r, 0, "ok handle")
			wantLine(t, r, 7, "ok va")
			wantLine(t, r, 9, "EFAULT")
			wantLine(t, r, 10, "ENOMEM")
			wantLine(t, r, 11, "EFAULT")
			if asic == Gaudi2 {
				wantLine(t, r, 3, "ok fd")
				wantLine(t, r, 17, "EBUSY")
			}
		},
	},
	{
		// DEBUG: debug mode, CoreSight configurations with good and bad
		// parameter structs and buffers.
		name: "debug", asics: both,
		calls: func(asic ASIC) []call {
			return []call{
				{"call": opDebug, "op": hl.HL_DEBUG_OP_SET_MODE, "enable": 1},
				{"call": opDebug, "op": hl.HL_DEBUG_OP_STM, "reg": 1, "enable": 1, "inlen": 24, "in": bytes.Repeat([]byte{1}, 24)},
				{"call": opDebug, "op": hl.HL_DEBUG_OP_ETR, "enable": 1, "inlen": 24},
				{"call": opDebug, "op": hl.HL_DEBUG_OP_BMON, "reg": 2, "enable": 1, "inlen": 80, "inp": ptrTo(pGuardLo, 0, 0)},
				{"call": opDebug, "op": hl.HL_DEBUG_OP_SPMU, "enable": 1, "inlen": 96, "outsize": 64},
				{"call": opDebug, "op": hl.HL_DEBUG_OP_SPMU, "enable": 0, "outsize": 64, "outp": ptrTo(pKernel, 0, 0)},
				{"call": opDebug, "op": hl.HL_DEBUG_OP_FUNNEL, "reg": lit(100000)},
				{"call": opDebug, "op": hl.HL_DEBUG_OP_SET_MODE},
			}
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			wantLine(t, r, 0, "ok")
			wantLine(t, r, 1, "ok")
			wantLine(t, r, 3, "EFAULT")
		},
	},
	{
		// Files: duplicates, control files, calls on closed files, a
		// second open, reopens.
		name: "files", asics: both,
		calls: func(asic ASIC) []call {
			return []call{
				{"call": opFile, "mode": 3},
				{"call": opFile, "mode": 2},
				{"call": opFile, "mode": 1},
				{"call": opInfo, "file": 1, "op": hl.HL_INFO_DEVICE_STATUS},
				{"call": opFile, "mode": 2},
				{"call": opFile, "mode": 4},
				{"call": opInfo, "file": 3},
				{"call": opFile, "mode": 2},
				{"call": opFile, "mode": 5},
				{"call": opMmap, "file": 2},
				{"call": opCB, "file": 2, "op": hl.HL_CB_OP_CREATE},
				{"call": opFile, "mode": 6},
				{"call": opFile, "mode": 0},
			}
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			wantLine(t, r, 1, "EBUSY")
			wantLine(t, r, 3, "ok") // the duplicate keeps the context
			wantLine(t, r, 4, "EBUSY")
			wantLine(t, r, 6, "EBADF")
			wantLine(t, r, 7, "ok")
			wantLine(t, r, 9, "ENODEV")
			wantLine(t, r, 10, "ENOTTY")
		},
	},
	{
		// Fault injection, device states and recorded errors.
		name: "faults-states-events", asics: both,
		calls: func(asic ASIC) []call {
			return []call{
				{"call": opFault, "kind": 2, "errno": spOf(asic, kErrno, uint64(unix.EAGAIN))},
				{"call": opCS, "kind": csSignal, "q": firstQueue},
				{"call": opFault, "kind": 6},
				{"call": opFile, "mode": 0},
				{"call": opFile, "mode": 2},
				{"call": opFault, "kind": 0, "match": 1, "op": hl.HL_INFO_DRAM_USAGE, "nth": 2},
				{"call": opInfo, "op": hl.HL_INFO_DRAM_USAGE},
				{"call": opInfo, "op": hl.HL_INFO_DRAM_USAGE},
				{"call": opState, "s": int(NeedsReset)},
				{"call": opInfo, "op": hl.HL_INFO_CLK_RATE},
				{"call": opCS, "kind": csSignal, "q": firstQueue},
				{"call": opFile, "mode": 0},
				{"call": opState, "s": int(Operational)},
				{"call": opFile, "mode": 2},
				{"call": opEvent, "which": 0, "a": lit(0x1000)},
				{"call": opEvent, "which": 1, "a": lit(0x2000)},
				{"call": opEvent, "which": 5},
				{"call": opEvent, "which": 7, "b": lit(hl.HL_NOTIFIER_EVENT_GENERAL_HW_ERR)},
				{"call": opInfo, "op": hl.HL_INFO_RAZWI_EVENT},
				{"call": opInfo, "op": hl.HL_INFO_PAGE_FAULT_EVENT},
				{"call": opInfo, "op": hl.HL_INFO_GET_EVENTS},
				{"call": opReset, "how": 1, "bits": 3},
				{"call": opReset, "how": 2},
				{"call": opInfo},
			}
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			wantLine(t, r, 1, "EAGAIN")
			wantLine(t, r, 3, "EIO")
			wantLine(t, r, 4, "ok")
			wantLine(t, r, 6, "ok")
			wantLine(t, r, 7, "EIO")
			wantLine(t, r, 9, "EBUSY")
			wantLine(t, r, 11, "EPERM")
		},
	},
	{
		// Bogus pointers in the CS arrays: NULL, guards, kernel and
		// non-canonical addresses, small integers, earlier results,
		// mappings; counts that do not match the arrays.
		name: "cs-pointers", asics: both,
		calls: func(asic ASIC) []call {
			var cs []call
			for _, p := range []pval{ptrTo(pNull, 0, 0), ptrTo(pGuardLo, 0, 0), ptrTo(pKernel, 0, 0),
				ptrTo(pNonCanon, 0, 0), ptrTo(pSmall, 0, 7), ptrTo(pValue, 0, 0), ptrTo(pArenaEnd, 0, 16)} {
				cs = append(cs, call{"call": opCS, "n": 1, "x0.q": firstQueue, "xp": p})
			}
			cs = append(cs,
				call{"call": opCS, "n": 1, "nx": spOf(asic, kCount, 513)},
				call{"call": opCS, "n": 2, "nx": 1, "x0.src": 3, "x0.v": lit(0xdead000)},
				call{"call": opCS, "kind": csWait, "q": firstQueue, "ns": 1, "sp": ptrTo(pKernel, 0, 0)},
				call{"call": opCS, "kind": csEngines, "n": 1, "ep": ptrTo(pNonCanon, 0, 0), "cmd": int(hl.HL_ENGINE_STALL)},
				call{"call": opWait, "kind": waitMulti, "n": 1, "sp": ptrTo(pGuardHi, 0, 0)})
			return cs
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			for i := 1; i < 5; i++ {
				wantLine(t, r, i, "EFAULT")
			}
		},
	},
	{
		// Async calls beside each other and beside resets and closes.
		name: "async", asics: both,
		calls: func(asic ASIC) []call {
			return []call{
				{"call": opCS, "kind": csSignal, "q": firstQueue, "async": 3},
				{"call": opWait, "seq": 1, "timeout": spOf(asic, kTimeoutUs, 10_000), "async": 3},
				{"call": opInfo, "op": hl.HL_INFO_CS_COUNTERS, "async": 3},
				{"call": opReset, "async": 3},
				{"call": opMem, "kind": mkAlloc, "async": 3},
				{"call": opCB, "op": hl.HL_CB_OP_CREATE, "async": 3},
				{"call": opSleep, "d": 2},
				{"call": opFile, "mode": 1},
				{"call": opJoin},
				{"call": opFile, "mode": 2},
				{"call": opWait, "kind": waitUserAddr, "target": 9, "timeout": spOf(asic, kTimeoutUs, 100_000), "async": 3},
				{"call": opReset, "how": 2, "async": 3},
				{"call": opSleep, "d": 4},
			}
		},
	},
	{
		// The out-of-tree driver's INFO ops, on the compute and a control
		// file, DEVICE_STATUS asking for a soft reset stall, and
		// HW_IP_INFO with the bytes it names.
		name: "oot-info", asics: []ASIC{Gaudi2}, drivers: oot,
		calls: func(asic ASIC) []call {
			return []call{
				{"call": opInfo, "op": hl.HL_INFO_HABANA_LINK_STATE},
				{"call": opInfo, "op": hl.HL_INFO_HABANA_LINK_COUNTERS},
				{"call": opInfo, "op": hl.HL_INFO_TIME_SYNC_PER_DIE},
				{"call": opInfo, "op": hl.HL_INFO_MEMORY_CONSUMPTION, "size": 16},
				{"call": opInfo, "op": hl.HL_INFO_CONFIG_DRM_ACCEL_ENABLED},
				{"call": opInfo, "op": lit(hl.HL_INFO_MODULE_PARAMS)},
				{"call": opInfo, "op": hl.HL_INFO_DEVICE_STATUS, "size": 8, "inlen": 8, "in": []byte{0, 0, 0, 0, 1, 0, 0, 0}},
				{"call": opInfo, "op": hl.HL_INFO_HW_IP_INFO},
				{"call": opFile, "mode": 5},
				{"call": opInfo, "file": 2, "op": lit(hl.HL_INFO_MODULE_PARAMS)},
				{"call": opState, "s": int(NeedsReset)},
				{"call": opInfo, "op": hl.HL_INFO_CONFIG_DRM_ACCEL_ENABLED},
				{"call": opInfo, "op": hl.HL_INFO_MEMORY_CONSUMPTION},
				{"call": opState, "s": int(Operational)},
				{"call": opInfo, "op": hl.HL_INFO_TIME_SYNC_PER_DIE, "size": 4},
				{"call": opInfo, "op": hl.HL_INFO_MEMORY_CONSUMPTION, "size": 16, "inlen": 8, "in": []byte{0, 0, 0, 0, 0, 0, 0, 1}},
				{"call": opInfo, "op": hl.HL_INFO_HABANA_LINK_COUNTERS, "inlen": 24, "in": []byte{1, 2, 3, 4, 5, 6, 7, 8, 1, 0, 0, 0, 0, 0, 0, 0, 255, 0, 0, 0, 0, 0, 0, 0}},
			}
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			wantLine(t, r, 0, "EFAULT") // the NIC is not initialized
			wantLine(t, r, 1, "EFAULT")
			wantLine(t, r, 2, "ok")
			wantLine(t, r, 3, "ok")
			wantLine(t, r, 4, "ok")
			wantLine(t, r, 5, "ok")
			wantLine(t, r, 6, "ok")
			wantLine(t, r, 9, "ok")
			wantLine(t, r, 11, "ok") // served in any state
			wantLine(t, r, 12, "EBUSY")
			wantLine(t, r, 15, "EINVAL") // more than the device's DRAM in use
			wantLine(t, r, 16, "EFAULT")
			if d := r.d; d.SoftResetStallRequests() != 1 || d.MemoryConsumption().Reports != 1 {
				t.Errorf("%d soft reset stall requests, %d memory reports; want 1 and 1", d.SoftResetStallRequests(), d.MemoryConsumption().Reports)
			}
		},
	},
	{
		// The NIC ioctl: every kind of op, sizes clamped to the op's
		// structs, bad pointers, the legacy and control nodes, a NULL
		// argument, a short argument, a device not operational, an
		// injected fault.
		name: "oot-nic", asics: []ASIC{Gaudi2}, drivers: oot,
		calls: func(asic ASIC) []call {
			return []call{
				{"call": opNIC},
				{"call": opNIC, "op": hl.HL_NIC_OP_CQ_CREATE},
				{"call": opNIC, "op": 30},
				{"call": opNIC, "op": hl.HL_NIC_OP_GET_USER_APP_PARAMS, "insize": lit(1000), "outsize": lit(1000)},
				{"call": opNIC, "op": hl.HL_NIC_OP_SET_REQ_CONN_CTX, "inp": ptrTo(pGuardLo, 0, 0x100)},
				{"call": opNIC, "op": hl.HL_NIC_OP_GET_USER_APP_PARAMS, "outp": ptrTo(pKernel, 0, 0)},
				{"call": opNIC, "req": 7},
				{"call": opFile, "mode": 5},
				{"call": opNIC, "file": 2},
				{"call": opNIC, "argnil": 15},
				{"call": opNIC, "req": 4, "reqv": 16, "op": hl.HL_NIC_OP_DUMP_QP},
				{"call": opNIC, "op": hl.HL_NIC_OP_USER_ENCAP_SET, "in": []byte{4, 3, 2, 1}, "inlen": 4, "inp": ptrTo(pArenaEnd, 0, 7)},
				{"call": opState, "s": int(NeedsReset)},
				{"call": opNIC, "op": hl.HL_NIC_OP_EQ_POLL},
				{"call": opState, "s": int(Operational)},
				{"call": opFault, "kind": 8, "match": 1, "op": hl.HL_NIC_OP_ALLOC_CONN, "errno": spOf(asic, kErrno, uint64(unix.EAGAIN))},
				{"call": opNIC, "op": hl.HL_NIC_OP_DESTROY_CONN},
				{"call": opNIC, "op": hl.HL_NIC_OP_ALLOC_CONN},
				{"call": opNIC, "op": hl.HL_NIC_OP_ALLOC_CONN, "file": 1, "async": 3},
			}
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			wantLine(t, r, 0, "EFAULT sizes 8 8")
			wantLine(t, r, 1, "EINVAL")
			wantLine(t, r, 2, "EINVAL")
			wantLine(t, r, 3, "EFAULT sizes 8 48")
			wantLine(t, r, 4, "EFAULT")
			wantLine(t, r, 5, "EFAULT")
			wantLine(t, r, 6, "ENOTTY")
			wantLine(t, r, 8, "ENOTTY")
			wantLine(t, r, 9, "EFAULT")
			wantLine(t, r, 13, "EBUSY")
			wantLine(t, r, 16, "EFAULT")
			wantLine(t, r, 17, "EAGAIN")
		},
	},
	{
		// MEMORY REG_DMABUF_FD: the program's own export of device memory
		// imported back, DMA from host memory into it and back out, UNMAP
		// of the import; descriptors that are no dma-buf (the eventfd),
		// not open, a length past the buffer; an import left for the end
		// of the context to release.
		name: "oot-dmabuf", asics: []ASIC{Gaudi2}, drivers: oot,
		calls: func(asic ASIC) []call {
			p := seedProfile(asic)
			pk := merge(
				linDMA(0, res(2), res(0), 8192, false),
				linDMA(1, lit(0x2222222222222222), res(0), 4096, true),
				linDMA(2, res(0), res(2), 16384, false))
			return []call{
				{"call": opMem, "kind": mkMapHost},
				{"call": opMem, "kind": mkAlloc},
				{"call": opMem, "kind": mkMapDevice, "handle": res(0)},
				{"call": opMem, "kind": mkExport, "a0": res(0), "a1": lit(p.dramPageSize)},
				{"call": opMem, "kind": mkRegDMABuf, "fd": res(0)},
				merge(call{"call": opWrite, "off": lit(1 << 20), "np": 3}, pk),
				{"call": opCS, "n": 1, "x0.q": firstQueue},
				{"call": opWait, "seq": res(0), "timeout": spOf(asic, kTimeoutUs, 100_000)},
				{"call": opMem, "kind": mkUnmap, "a0": res(0)},
				{"call": opMem, "kind": mkRegDMABuf, "fd": res(1)},
				{"call": opMem, "kind": mkRegDMABuf, "fd": lit(1 << 20)},
				{"call": opMem, "kind": mkRegDMABuf, "fd": res(0), "len": lit(2 * p.dramPageSize)},
				{"call": opMem, "kind": mkRegDMABuf, "fd": res(0), "len": 1},
				{"call": opMem, "kind": mkRegDMABuf, "fd": res(0), "len": lit(4096), "flags": 1},
			}
		},
		check: func(t *testing.T, _ ASIC, r *runner) {
			wantLine(t, r, 4, "ok va")
			wantLine(t, r, 7, "ok status 0")
			wantLine(t, r, 8, "ok")
			wantLine(t, r, 9, "EINVAL")
			wantLine(t, r, 10, "EBADF")
			wantLine(t, r, 11, "EINVAL")
			wantLine(t, r, 12, "ok va")
		},
	},
}

// TestFuzzProgramSeeds checks that the seed corpus holds the programs
// above, that they decode from those bytes to the same calls, and that
// each reaches what it was written for.
func TestFuzzProgramSeeds(t *testing.T) {
	a, err := newArena()
	if err != nil {
		t.Fatal(err)
	}
	defer a.free()
	lockDir := t.TempDir()
	covered := map[opKind]bool{}
	ran, total := 0, 0
	for _, tg := range fuzzTargets {
		asic := tg.asic
		env := &fuzzEnv{a: a, lockDir: lockDir, driver: tg.driver}
		dir := filepath.Join("testdata", "fuzz", tg.name)
		for _, sp := range slices.Concat(seedProgs, gaudi3Seeds) {
			if !sp.holds(tg) {
				continue
			}
			total++
			t.Run(strings.TrimPrefix(tg.name, "FuzzProgram")+"/"+sp.name, func(t *testing.T) {
				ran++
				calls := sp.calls(asic)
				for _, c := range calls {
					covered[c["call"].(opKind)] = true
				}
				src := newSeedSrc(sp.hdr, calls)
				r := runProgram(t, env, asic, src)
				prog, err := src.bytes()
				if err != nil {
					t.Fatalf("seed %s: %v", sp.name, err)
				}
				if sp.check != nil {
					sp.check(t, asic, r)
				}
				if testing.Verbose() {
					t.Logf("%s", r.describe())
				}
				// The bytes decode to the same calls.
				again := runProgram(t, env, asic, &byteSrc{b: prog})
				if got, want := callsOf(again), callsOf(r); !slices.Equal(got, want) {
					t.Errorf("the seed's bytes decode to\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				file := filepath.Join(dir, "seed-"+sp.name)
				content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", prog)
				if *updateSeeds {
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				if b, err := os.ReadFile(file); err != nil || string(b) != content {
					t.Errorf("%s is not the seed's encoding (%v): go test ./sim -run TestFuzzProgramSeeds -update-fuzz-seeds", file, err)
				}
			})
		}
	}
	for op := range numOps {
		if ran == total && !covered[op] {
			t.Errorf("no seed calls %v", op)
		}
	}
}

// callsOf is a trace without results, which depend on timing.
func callsOf(r *runner) []string {
	var out []string
	for _, l := range r.trace {
		call, _, _ := strings.Cut(l, " = ")
		out = append(out, call)
	}
	return out
}
