package packet

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/internal/abicheck"
)

// The C proof: for every packet type, format and many field values, gcc
// fills the kernel's packet structure (drivers/accel/habanalabs/include/
// gaudi{,2}/*_packets.h) the way the driver does, with the header's
// SHIFT/MASK macros for the fields the kernel names (kernel: true) and with
// hl-thunk's bit positions, written here independently of the encoder, for
// the rest. The encoder must produce the same bytes and the decoder must
// return the same value.

// cfield is where one field of packet type P lives on the C side.
type cfield[P any] struct {
	name   string // Go field
	member string // member of the kernel structure
	shift  string // C expression; "" assigns the whole member
	mask   string // C expression
	width  int    // bits the Go field holds
	kernel bool   // shift and mask are kernel macros
	set    func(p *P, v uint64)
}

// ckind is one packet type in one format.
type ckind[P Packet] struct {
	ctype  string // C structure
	op     string // C opcode
	hdr    func(p *P) *Header
	fields []cfield[P]
	fixed  []string // C statements every packet of the kind has

	// For the Gaudi3 formats (cproof_gaudi3_test.go): the C structures
	// are bit-field structures written in the test, with members opcode,
	// eb, rb and mb; noRB drops rb (the Gaudi3 WAIT), and init sets the Go
	// fields that fixed sets on the C side.
	bitfields bool
	noRB      bool
	init      func(p *P)
}

// macro returns a cfield whose position comes from the kernel's
// <prefix>_<name>_SHIFT and _MASK macros.
func macro[P any](prefix, name, goName, member string, width int, set func(p *P, v uint64)) cfield[P] {
	m := prefix + "_PKT_" + name
	return cfield[P]{name: goName, member: member, shift: m + "_SHIFT", mask: m + "_MASK", width: width, kernel: true, set: set}
}

// lit returns a cfield at bits [shift, shift+width) of member, from
// hl-thunk.
func lit[P any](goName, member string, shift, width int, set func(p *P, v uint64)) cfield[P] {
	mask := fmt.Sprintf("0x%xULL", maxv(width)<<shift)
	return cfield[P]{name: goName, member: member, shift: fmt.Sprint(shift), mask: mask, width: width, set: set}
}

// whole returns a cfield that is a whole member of the kernel structure.
func whole[P any](goName, member string, width int, set func(p *P, v uint64)) cfield[P] {
	return cfield[P]{name: goName, member: member, width: width, kernel: true, set: set}
}

func maxv(width int) uint64 {
	if width >= 64 {
		return ^uint64(0)
	}
	return 1<<width - 1
}

func prefix(f Format) string {
	if f == Gaudi2 {
		return "GAUDI2"
	}
	return "GAUDI"
}

// stmt returns the C statement that stores v into the field.
func (fl cfield[P]) stmt(v uint64) string {
	if fl.shift == "" {
		return fmt.Sprintf("p->%s = 0x%xULL;", fl.member, v)
	}
	return fmt.Sprintf("p->%s |= ((__u64)0x%xULL << (%s)) & (%s);", fl.member, v, fl.shift, fl.mask)
}

// proofCase is one packet both sides encode.
type proofCase struct {
	name    string
	f       Format
	p       Packet
	snippet abicheck.Snippet
	kernel  int // field values placed with kernel macros
	thunk   int // field values placed with hl-thunk positions
}

// header adds the barrier bits to k's fields.
func (k ckind[P]) all(f Format) []cfield[P] {
	if k.bitfields {
		h := []cfield[P]{whole("EngineBarrier", "eb", 1, func(p *P, v uint64) { k.hdr(p).EngineBarrier = v != 0 })}
		if f == Gaudi3 {
			if !k.noRB {
				h = append(h, whole("RegBarrier", "rb", 1, func(p *P, v uint64) { k.hdr(p).RegBarrier = v != 0 }))
			}
			h = append(h, whole("MsgBarrier", "mb", 1, func(p *P, v uint64) { k.hdr(p).MsgBarrier = v != 0 }))
		}
		return append(h, k.fields...)
	}
	px := prefix(f)
	h := []cfield[P]{
		macro(px, "CTL_EB", "EngineBarrier", "ctl", 1, func(p *P, v uint64) { k.hdr(p).EngineBarrier = v != 0 }),
		macro(px, "CTL_RB", "RegBarrier", "ctl", 1, func(p *P, v uint64) { k.hdr(p).RegBarrier = v != 0 }),
		macro(px, "CTL_MB", "MsgBarrier", "ctl", 1, func(p *P, v uint64) { k.hdr(p).MsgBarrier = v != 0 }),
	}
	return append(h, k.fields...)
}

// build makes the Go value and the C snippet of one set of field values.
func (k ckind[P]) build(f Format, name string, vals []uint64) proofCase {
	var p P
	if k.init != nil {
		k.init(&p)
	}
	fields := k.all(f)
	var code strings.Builder
	if k.bitfields {
		fmt.Fprintf(&code, "p->opcode = %s;\n", k.op)
	} else {
		fmt.Fprintf(&code, "p->ctl |= ((__u32)%s << %s_PKT_CTL_OPCODE_SHIFT) & %s_PKT_CTL_OPCODE_MASK;\n", k.op, prefix(f), prefix(f))
	}
	for _, s := range k.fixed {
		code.WriteString(s + "\n")
	}
	c := proofCase{name: name, f: f}
	for i, fl := range fields {
		fl.set(&p, vals[i])
		if vals[i] != 0 {
			code.WriteString(fl.stmt(vals[i]) + "\n")
		}
		if fl.kernel {
			c.kernel++
		} else {
			c.thunk++
		}
	}
	c.p = p
	c.snippet = abicheck.Snippet{Name: name, Type: k.ctype, Code: code.String()}
	return c
}

var patterns = []uint64{^uint64(0), 0x5555555555555555, 0xAAAAAAAAAAAAAAAA, 0x0123456789ABCDEF}

// cases returns the proof cases of one kind: all zero; each field alone at
// its maximum and at 1; every field at each pattern; and random values.
func (k ckind[P]) cases(f Format, name string, rng *rand.Rand, random int) []proofCase {
	fields := k.all(f)
	vals := func(fn func(i int, fl cfield[P]) uint64) []uint64 {
		v := make([]uint64, len(fields))
		for i, fl := range fields {
			v[i] = fn(i, fl) & maxv(fl.width)
		}
		return v
	}
	out := []proofCase{k.build(f, name+".zero", vals(func(int, cfield[P]) uint64 { return 0 }))}
	for j, fl := range fields {
		only := func(x uint64) []uint64 {
			return vals(func(i int, _ cfield[P]) uint64 {
				if i == j {
					return x
				}
				return 0
			})
		}
		out = append(out, k.build(f, fmt.Sprintf("%s.%s.max", name, fl.name), only(^uint64(0))))
		if fl.width > 1 {
			out = append(out, k.build(f, fmt.Sprintf("%s.%s.one", name, fl.name), only(1)))
		}
	}
	for j, pat := range patterns {
		out = append(out, k.build(f, fmt.Sprintf("%s.pattern%d", name, j), vals(func(int, cfield[P]) uint64 { return pat })))
	}
	for j := range random {
		out = append(out, k.build(f, fmt.Sprintf("%s.rand%d", name, j), vals(func(int, cfield[P]) uint64 { return rng.Uint64() })))
	}
	return out
}

func linDMAKind(f Format) ckind[LinDMA] {
	px := prefix(f)
	k := ckind[LinDMA]{ctype: "struct packet_lin_dma", op: "PACKET_LIN_DMA", hdr: func(p *LinDMA) *Header { return &p.Header }}
	k.fields = []cfield[LinDMA]{
		whole("Size", "tsize", 32, func(p *LinDMA, v uint64) { p.Size = uint32(v) }),
		whole("Src", "src_addr", 64, func(p *LinDMA, v uint64) { p.Src = v }),
		macro(px, "LIN_DMA_CTL_MEMSET", "Memset", "ctl", 1, func(p *LinDMA, v uint64) { p.Memset = v != 0 }),
	}
	if f == Gaudi {
		k.fixed = []string{"p->ctl |= (1u << GAUDI_PKT_LIN_DMA_CTL_LIN_SHIFT) & GAUDI_PKT_LIN_DMA_CTL_LIN_MASK;"}
		k.fields = append(k.fields,
			macro(px, "LIN_DMA_DST_ADDR", "Dst", "dst_addr", 56, func(p *LinDMA, v uint64) { p.Dst = v }),
			macro(px, "LIN_DMA_CTL_WRCOMP_EN", "WriteCompletion", "ctl", 1, func(p *LinDMA, v uint64) { p.WriteCompletion = v != 0 }),
			lit("Transpose", "ctl", 1, 1, func(p *LinDMA, v uint64) { p.Transpose = v != 0 }),
			lit("DType", "ctl", 2, 1, func(p *LinDMA, v uint64) { p.DType = v != 0 }),
			lit("Compress", "ctl", 5, 1, func(p *LinDMA, v uint64) { p.Compress = v != 0 }),
			lit("Decompress", "ctl", 6, 1, func(p *LinDMA, v uint64) { p.Decompress = v != 0 }),
			lit("ContextID.low", "ctl", 16, 8, func(p *LinDMA, v uint64) { p.ContextID = p.ContextID&0xff00 | uint16(v) }),
			lit("ContextID.high", "dst_addr", 56, 8, func(p *LinDMA, v uint64) { p.ContextID = p.ContextID&0xff | uint16(v)<<8 }),
		)
		return k
	}
	k.fields = append(k.fields,
		whole("Dst", "dst_addr", 64, func(p *LinDMA, v uint64) { p.Dst = v }),
		macro(px, "LIN_DMA_CTL_WRCOMP", "WriteCompletion", "ctl", 1, func(p *LinDMA, v uint64) { p.WriteCompletion = v != 0 }),
		macro(px, "LIN_DMA_CTL_ENDIAN", "Endian", "ctl", 2, func(p *LinDMA, v uint64) { p.Endian = uint8(v) }),
		macro(px, "LIN_DMA_CTL_CONTEXT_ID", "ContextID", "ctl", 16, func(p *LinDMA, v uint64) { p.ContextID = uint16(v) }),
		lit("BF16", "ctl", 6, 1, func(p *LinDMA, v uint64) { p.BF16 = v != 0 }),
		lit("FP16", "ctl", 7, 1, func(p *LinDMA, v uint64) { p.FP16 = v != 0 }),
	)
	return k
}

// longFields are the fields of MSG_LONG and MSG_PROT.
func longFields[P any](f Format, m func(p *P) *MsgLong) []cfield[P] {
	fl := []cfield[P]{
		whole("Value", "value", 32, func(p *P, v uint64) { m(p).Value = uint32(v) }),
		whole("Addr", "addr", 64, func(p *P, v uint64) { m(p).Addr = v }),
		lit("Pred", "ctl", 0, 5, func(p *P, v uint64) { m(p).Pred = uint8(v) }),
		lit("WeaklyOrdered", "ctl", 16, 1, func(p *P, v uint64) { m(p).WeaklyOrdered = v != 0 }),
		lit("NoSnoop", "ctl", 17, 1, func(p *P, v uint64) { m(p).NoSnoop = v != 0 }),
	}
	op := func(p *P, v uint64) { m(p).Op = MsgOp(v) }
	if f == Gaudi {
		return append(fl, macro(prefix(f), "LONG_CTL_OP", "Op", "ctl", 2, op))
	}
	return append(fl, lit("Op", "ctl", 20, 2, op))
}

func msgLongKind(f Format) ckind[MsgLong] {
	return ckind[MsgLong]{ctype: "struct packet_msg_long", op: "PACKET_MSG_LONG", hdr: func(p *MsgLong) *Header { return &p.Header },
		fields: longFields(f, func(p *MsgLong) *MsgLong { return p })}
}

func msgProtKind(f Format) ckind[MsgProt] {
	return ckind[MsgProt]{ctype: "struct packet_msg_prot", op: "PACKET_MSG_PROT", hdr: func(p *MsgProt) *Header { return &p.Header },
		fields: longFields(f, func(p *MsgProt) *MsgLong { return (*MsgLong)(p) })}
}

func msgShortKind(f Format) ckind[MsgShort] {
	px := prefix(f)
	k := ckind[MsgShort]{ctype: "struct packet_msg_short", op: "PACKET_MSG_SHORT", hdr: func(p *MsgShort) *Header { return &p.Header }}
	k.fields = []cfield[MsgShort]{
		whole("Value", "value", 32, func(p *MsgShort, v uint64) { p.Value = uint32(v) }),
		macro(px, "SHORT_CTL_ADDR", "Offset", "ctl", 16, func(p *MsgShort, v uint64) { p.Offset = uint16(v) }),
		macro(px, "SHORT_CTL_BASE", "Base", "ctl", 2, func(p *MsgShort, v uint64) { p.Base = uint8(v) }),
		lit("WeaklyOrdered", "ctl", 16, 1, func(p *MsgShort, v uint64) { p.WeaklyOrdered = v != 0 }),
		lit("NoSnoop", "ctl", 17, 1, func(p *MsgShort, v uint64) { p.NoSnoop = v != 0 }),
	}
	op := func(p *MsgShort, v uint64) { p.Op = MsgOp(v) }
	if f == Gaudi {
		k.fields = append(k.fields, macro(px, "SHORT_CTL_OP", "Op", "ctl", 2, op))
	} else {
		k.fields = append(k.fields, lit("Op", "ctl", 20, 2, op),
			lit("DW", "ctl", 18, 1, func(p *MsgShort, v uint64) { p.DW = v != 0 }))
	}
	return k
}

func fenceKind(f Format) ckind[Fence] {
	px := prefix(f)
	return ckind[Fence]{ctype: "struct packet_fence", op: "PACKET_FENCE", hdr: func(p *Fence) *Header { return &p.Header },
		fields: []cfield[Fence]{
			macro(px, "FENCE_CFG_DEC_VAL", "Dec", "cfg", 4, func(p *Fence, v uint64) { p.Dec = uint8(v) }),
			macro(px, "FENCE_CFG_TARGET_VAL", "Target", "cfg", 8, func(p *Fence, v uint64) { p.Target = uint8(v) }),
			macro(px, "FENCE_CFG_ID", "ID", "cfg", 2, func(p *Fence, v uint64) { p.ID = uint8(v) }),
			macro(px, "FENCE_CTL_PRED", "Pred", "ctl", 5, func(p *Fence, v uint64) { p.Pred = uint8(v) }),
		}}
}

func waitKind(Format) ckind[Wait] {
	return ckind[Wait]{ctype: "struct packet_wait", op: "PACKET_WAIT", hdr: func(p *Wait) *Header { return &p.Header },
		fields: []cfield[Wait]{
			lit("Cycles", "cfg", 0, 24, func(p *Wait, v uint64) { p.Cycles = uint32(v) }),
			lit("Inc", "cfg", 24, 4, func(p *Wait, v uint64) { p.Inc = uint8(v) }),
			lit("ID", "cfg", 28, 2, func(p *Wait, v uint64) { p.ID = uint8(v) }),
		}}
}

func nopKind(Format) ckind[Nop] {
	return ckind[Nop]{ctype: "struct packet_nop", op: "PACKET_NOP", hdr: func(p *Nop) *Header { return &p.Header }}
}

func stopKind(Format) ckind[Stop] {
	return ckind[Stop]{ctype: "struct packet_stop", op: "PACKET_STOP", hdr: func(p *Stop) *Header { return &p.Header }}
}

func repeatKind(Format) ckind[Repeat] {
	return ckind[Repeat]{ctype: "struct packet_repeat", op: "PACKET_REPEAT", hdr: func(p *Repeat) *Header { return &p.Header },
		fields: []cfield[Repeat]{
			lit("Sore", "cfg", 0, 1, func(p *Repeat, v uint64) { p.Sore = v != 0 }),
			lit("Outer", "cfg", 1, 1, func(p *Repeat, v uint64) { p.Outer = v != 0 }),
			lit("JumpPtr", "cfg", 16, 16, func(p *Repeat, v uint64) { p.JumpPtr = uint16(v) }),
			lit("Pred", "ctl", 0, 5, func(p *Repeat, v uint64) { p.Pred = uint8(v) }),
		}}
}

func arbPointKind(f Format) ckind[ArbPoint] {
	width := 8
	if f == Gaudi2 {
		width = 24
	}
	return ckind[ArbPoint]{ctype: "struct packet_arb_point", op: "PACKET_ARB_POINT", hdr: func(p *ArbPoint) *Header { return &p.Header },
		fields: []cfield[ArbPoint]{
			lit("Priority", "cfg", 0, width, func(p *ArbPoint, v uint64) { p.Priority = uint32(v) }),
			lit("Release", "cfg", 31, 1, func(p *ArbPoint, v uint64) { p.Release = v != 0 }),
			lit("Pred", "ctl", 0, 5, func(p *ArbPoint, v uint64) { p.Pred = uint8(v) }),
		}}
}

func wreg32Kind(f Format) ckind[WReg32] {
	k := ckind[WReg32]{ctype: "struct packet_wreg32", op: "PACKET_WREG_32", hdr: func(p *WReg32) *Header { return &p.Header },
		fields: []cfield[WReg32]{
			whole("Value", "value", 32, func(p *WReg32, v uint64) { p.Value = uint32(v) }),
			lit("Offset", "ctl", 8, 16, func(p *WReg32, v uint64) { p.Offset = uint32(v) }),
			lit("Pred", "ctl", 0, 5, func(p *WReg32, v uint64) { p.Pred = uint8(v) }),
		}}
	if f == Gaudi2 {
		k.fields = append(k.fields, lit("Reg", "ctl", 5, 1, func(p *WReg32, v uint64) { p.Reg = v != 0 }))
	}
	return k
}

func loadAndExeKind(f Format) ckind[LoadAndExe] {
	k := ckind[LoadAndExe]{ctype: "struct packet_load_and_exe", op: "PACKET_LOAD_AND_EXE", hdr: func(p *LoadAndExe) *Header { return &p.Header },
		fields: []cfield[LoadAndExe]{
			whole("Src", "src_addr", 64, func(p *LoadAndExe, v uint64) { p.Src = v }),
			lit("Load", "cfg", 8, 1, func(p *LoadAndExe, v uint64) { p.Load = v != 0 }),
			lit("Exe", "cfg", 9, 1, func(p *LoadAndExe, v uint64) { p.Exe = v != 0 }),
			lit("EType", "cfg", 10, 1, func(p *LoadAndExe, v uint64) { p.EType = v != 0 }),
			lit("Pred", "ctl", 0, 5, func(p *LoadAndExe, v uint64) { p.Pred = uint8(v) }),
		}}
	dst := func(p *LoadAndExe, v uint64) { p.Dst = v != 0 }
	if f == Gaudi {
		k.fields = append(k.fields, macro(prefix(f), "LOAD_AND_EXE_CFG_DST", "Dst", "cfg", 1, dst))
	} else {
		k.fields = append(k.fields, lit("Dst", "cfg", 0, 1, dst),
			lit("PMap", "cfg", 1, 1, func(p *LoadAndExe, v uint64) { p.PMap = v != 0 }))
	}
	return k
}

func cpDMAKind(f Format) ckind[CPDMA] {
	k := ckind[CPDMA]{ctype: "struct packet_cp_dma", op: "PACKET_CP_DMA", hdr: func(p *CPDMA) *Header { return &p.Header },
		fields: []cfield[CPDMA]{
			whole("Size", "tsize", 32, func(p *CPDMA, v uint64) { p.Size = uint32(v) }),
			whole("Src", "src_addr", 64, func(p *CPDMA, v uint64) { p.Src = v }),
			lit("Pred", "ctl", 0, 5, func(p *CPDMA, v uint64) { p.Pred = uint8(v) }),
		}}
	if f == Gaudi2 {
		k.fields = append(k.fields, lit("UpperCP", "ctl", 5, 1, func(p *CPDMA, v uint64) { p.UpperCP = v != 0 }))
	}
	return k
}

func cbListKind(Format) ckind[CBList] {
	return ckind[CBList]{ctype: "struct packet_cb_list", op: "PACKET_CB_LIST", hdr: func(p *CBList) *Header { return &p.Header },
		fields: []cfield[CBList]{
			whole("IndexAddr", "index_addr", 64, func(p *CBList, v uint64) { p.IndexAddr = v }),
			whole("TableAddr", "table_addr", 64, func(p *CBList, v uint64) { p.TableAddr = v }),
			lit("SizeDesc", "ctl", 5, 1, func(p *CBList, v uint64) { p.SizeDesc = v != 0 }),
			lit("Pred", "ctl", 0, 5, func(p *CBList, v uint64) { p.Pred = uint8(v) }),
		}}
}

// bulkCases proves WREG_BULK with a flexible array of values.
func bulkCases(f Format, rng *rand.Rand) []proofCase {
	var out []proofCase
	for i, n := range []int{0, 1, 2, 3, 7, 16, 64} {
		p := WRegBulk{Offset: uint32(uint16(rng.Uint32())), Pred: uint8(rng.IntN(32)), Header: Header{EngineBarrier: i%2 == 0, RegBarrier: true, MsgBarrier: i%3 == 0}}
		var code strings.Builder
		px := prefix(f)
		fmt.Fprintf(&code, "p->ctl |= ((__u32)PACKET_WREG_BULK << %s_PKT_CTL_OPCODE_SHIFT) & %s_PKT_CTL_OPCODE_MASK;\n", px, px)
		for _, b := range []struct {
			name string
			on   bool
		}{{"EB", p.EngineBarrier}, {"RB", p.RegBarrier}, {"MB", p.MsgBarrier}} {
			if b.on {
				fmt.Fprintf(&code, "p->ctl |= (1u << %s_PKT_CTL_%s_SHIFT) & %s_PKT_CTL_%s_MASK;\n", px, b.name, px, b.name)
			}
		}
		fmt.Fprintf(&code, "p->ctl |= (0x%xu << 8) & 0xFFFF00u;\np->ctl |= 0x%xu & 0x1Fu;\np->size64 = %d;\n", p.Offset, p.Pred, n)
		for j := range n {
			v := rng.Uint64()
			if j < len(patterns) {
				v = patterns[j]
			}
			p.Values = append(p.Values, v)
			fmt.Fprintf(&code, "p->values[%d] = 0x%xULL;\n", j, v)
		}
		name := fmt.Sprintf("WREG_BULK.%d", n)
		out = append(out, proofCase{name: name, f: f, p: p, kernel: 4 + n, thunk: 2,
			snippet: abicheck.Snippet{Name: name, Type: "struct packet_wreg_bulk", Extra: 8 * n, Code: code.String()}})
	}
	return out
}

// driverCases proves the helpers that rebuild the driver's signal and wait
// command buffers: the C side composes each packet as gaudi_gen_signal_cb,
// gaudi_add_mon_msg_short, gaudi_add_arm_monitor_pkt and gaudi_add_fence_pkt
// (and their gaudi2 counterparts) do, from the kernel macros.
func driverCases(t *testing.T, f Format, rng *rand.Rand) []proofCase {
	px := prefix(f)
	field := func(name string, v any) string {
		return fmt.Sprintf("(((__u64)(%v) << %s_PKT_%s_SHIFT) & %s_PKT_%s_MASK)", v, px, name, px, name)
	}
	ctl := func(op string, eb, rb, mb bool) string {
		s := field("CTL_OPCODE", op)
		for _, b := range []struct {
			n  string
			on bool
		}{{"CTL_EB", eb}, {"CTL_RB", rb}, {"CTL_MB", mb}} {
			if b.on {
				s += " | " + field(b.n, 1)
			}
		}
		return s
	}
	gaudi := f == Gaudi
	sobBase, monBase := 1, 0
	if gaudi {
		sobBase, monBase = 3, 2
	}
	var out []proofCase
	add := func(name string, p Packet, ctype, code string) {
		out = append(out, proofCase{name: name, f: f, p: p, kernel: 1, snippet: abicheck.Snippet{Name: name, Type: ctype, Code: code}})
	}
	for i, sob := range []uint16{0, 1, 7, 8, 511, 2047, 16383, uint16(rng.IntN(16384))} {
		eb := i%2 == 1
		p, err := f.Signal(sob, eb)
		if err != nil {
			t.Fatal(err)
		}
		add(fmt.Sprintf("signal.%d", i), p, "struct packet_msg_short", fmt.Sprintf(
			"p->value = (%s) | (%s);\np->ctl = (%s) | (%s) | (%s);",
			field("SHORT_VAL_SOB_SYNC_VAL", 1), field("SHORT_VAL_SOB_MOD", 1),
			field("SHORT_CTL_ADDR", fmt.Sprint(sob)+"*4"), field("SHORT_CTL_BASE", sobBase), ctl("PACKET_MSG_SHORT", eb, gaudi, true)))
	}
	for i := range 6 {
		off, val := uint16(rng.Uint32()), rng.Uint32()
		add(fmt.Sprintf("monwrite.%d", i), f.MonitorWrite(off, val), "struct packet_msg_short", fmt.Sprintf(
			"p->value = 0x%xu;\np->ctl = (%s) | (%s) | (%s);", val,
			field("SHORT_CTL_ADDR", off), field("SHORT_CTL_BASE", monBase), ctl("PACKET_MSG_SHORT", false, gaudi, false)))
	}
	for i, a := range []struct {
		base uint16
		mask uint8
		val  uint16
	}{{0, 1, 1}, {5, 1, 3}, {8, 0xff, 0x7fff}, {17, 0x3, 2}, {2040, 0x1, 100}, {24, 0x0f, 0x1234}} {
		off := uint16(rng.Uint32())
		p, err := f.ArmMonitor(off, a.base, a.mask, a.val)
		if err != nil {
			t.Fatal(err)
		}
		add(fmt.Sprintf("arm.%d", i), p, "struct packet_msg_short", fmt.Sprintf(
			"p->value = (%s) | (%s) | (%s) | (%s);\np->ctl = (%s) | (%s) | (%s);",
			field("SHORT_VAL_MON_SYNC_GID", a.base/8), field("SHORT_VAL_MON_SYNC_VAL", a.val),
			field("SHORT_VAL_MON_MODE", 0), field("SHORT_VAL_MON_MASK", fmt.Sprintf("sob_mask(%d, %d)", a.base, a.mask)),
			field("SHORT_CTL_ADDR", off), field("SHORT_CTL_BASE", monBase), ctl("PACKET_MSG_SHORT", false, gaudi, true)))
	}
	add("fencewait", f.FenceWait(), "struct packet_fence", fmt.Sprintf(
		"p->cfg = (%s) | (%s) | (%s);\np->ctl = %s;",
		field("FENCE_CFG_DEC_VAL", 1), field("FENCE_CFG_TARGET_VAL", 1), field("FENCE_CFG_ID", 2), ctl("PACKET_FENCE", false, gaudi, true)))
	// The driver's memset packets (gaudi_memset_device_memory,
	// gaudi2_memset_memory_chunk_using_edma_qm).
	for i := range 4 {
		dst, val, size := rng.Uint64()>>8, rng.Uint64(), rng.Uint32()
		p := LinDMA{Src: val, Dst: dst, Size: size, Memset: true}
		code := fmt.Sprintf("p->src_addr = 0x%xULL;\np->dst_addr = 0x%xULL;\np->tsize = 0x%xu;\np->ctl = %s | %s",
			val, dst, size, field("LIN_DMA_CTL_MEMSET", 1), field("CTL_OPCODE", "PACKET_LIN_DMA"))
		if gaudi {
			p.MsgBarrier, p.RegBarrier = true, true
			code += " | " + field("LIN_DMA_CTL_LIN", 1) + " | " + field("CTL_MB", 1) + " | " + field("CTL_RB", 1) + ";"
		} else {
			p.WriteCompletion, p.EngineBarrier = true, true
			code += " | " + field("LIN_DMA_CTL_WRCOMP", 1) + " | " + field("CTL_EB", 1) + ";"
		}
		add(fmt.Sprintf("memset.%d", i), p, "struct packet_lin_dma", code)
	}
	// MonArm, SOBUpdate and MonConfig words on their own.
	for i := range 8 {
		u := SOBUpdate{Value: uint16(rng.IntN(1 << 15)), Add: i%2 == 0, TE: i%3 == 0, LongMode: !gaudi && i%4 == 1}
		w, err := u.Word(f)
		if err != nil {
			t.Fatal(err)
		}
		p := MsgShort{Value: w}
		add(fmt.Sprintf("sobword.%d", i), p, "struct packet_msg_short", fmt.Sprintf(
			"p->value = (%s) | (%s) | (%du << 30) | (%du << 24);\np->ctl = %s;",
			field("SHORT_VAL_SOB_SYNC_VAL", u.Value), field("SHORT_VAL_SOB_MOD", b2u(u.Add)), b2u(u.TE), b2u(u.LongMode), ctl("PACKET_MSG_SHORT", false, false, false)))
		if p.SOBUpdate() != u {
			t.Errorf("%v: SOBUpdate() = %+v, want %+v", f, p.SOBUpdate(), u)
		}
		m := MonArm{Group: uint8(rng.Uint32()), Mask: uint8(rng.Uint32()), Equal: i%2 == 1, Value: uint16(rng.IntN(1 << 15))}
		if w, err = m.Word(f); err != nil {
			t.Fatal(err)
		}
		p = MsgShort{Value: w}
		add(fmt.Sprintf("monword.%d", i), p, "struct packet_msg_short", fmt.Sprintf(
			"p->value = (%s) | (%s) | (%s) | (%s);\np->ctl = %s;",
			field("SHORT_VAL_MON_SYNC_GID", m.Group), field("SHORT_VAL_MON_MASK", m.Mask), field("SHORT_VAL_MON_MODE", b2u(m.Equal)),
			field("SHORT_VAL_MON_SYNC_VAL", m.Value), ctl("PACKET_MSG_SHORT", false, false, false)))
		if p.MonArm() != m {
			t.Errorf("%v: MonArm() = %+v, want %+v", f, p.MonArm(), m)
		}
	}
	return out
}

// sobMaskC is hl_gen_sob_mask's rule in C, for the arm-monitor cases.
const sobMaskC = `
static unsigned char sob_mask(unsigned short base, unsigned char m)
{
	if (m == 1)
		return (unsigned char)~(1u << (base & 7));
	return (unsigned char)~m;
}
`

// proofCases returns every case of format f.
func proofCases(t *testing.T, f Format, seed uint64) []proofCase {
	rng := rand.New(rand.NewPCG(seed, uint64(f)))
	const random = 40
	var cs []proofCase
	cs = append(cs, linDMAKind(f).cases(f, "LIN_DMA", rng, random)...)
	cs = append(cs, msgLongKind(f).cases(f, "MSG_LONG", rng, random)...)
	cs = append(cs, msgProtKind(f).cases(f, "MSG_PROT", rng, random)...)
	cs = append(cs, msgShortKind(f).cases(f, "MSG_SHORT", rng, random)...)
	cs = append(cs, fenceKind(f).cases(f, "FENCE", rng, random)...)
	cs = append(cs, waitKind(f).cases(f, "WAIT", rng, random)...)
	cs = append(cs, nopKind(f).cases(f, "NOP", rng, 4)...)
	cs = append(cs, stopKind(f).cases(f, "STOP", rng, 4)...)
	cs = append(cs, repeatKind(f).cases(f, "REPEAT", rng, random)...)
	cs = append(cs, arbPointKind(f).cases(f, "ARB_POINT", rng, random)...)
	cs = append(cs, wreg32Kind(f).cases(f, "WREG_32", rng, random)...)
	cs = append(cs, loadAndExeKind(f).cases(f, "LOAD_AND_EXE", rng, random)...)
	cs = append(cs, cpDMAKind(f).cases(f, "CP_DMA", rng, random)...)
	if f == Gaudi2 {
		cs = append(cs, cbListKind(f).cases(f, "CB_LIST", rng, random)...)
	}
	cs = append(cs, bulkCases(f, rng)...)
	cs = append(cs, driverCases(t, f, rng)...)
	return cs
}

func cTable(f Format) *abicheck.Table {
	h := "gaudi/gaudi_packets.h"
	if f == Gaudi2 {
		h = "gaudi2/gaudi2_packets.h"
	}
	return &abicheck.Table{
		Package:     "packet (" + f.String() + ")",
		IncludeDirs: []string{"drivers/accel/habanalabs/include"},
		Includes:    []string{h},
		Prelude:     "#include <linux/types.h>\ntypedef __u8 u8;\n" + sobMaskC,
	}
}

// TestKernelBytes is the C proof.
func TestKernelBytes(t *testing.T) {
	for _, f := range []Format{Gaudi, Gaudi2} {
		t.Run(f.String(), func(t *testing.T) {
			var packets, kernel, thunk int
			kinds := map[Opcode]bool{}
			for _, seed := range []uint64{1, 0x9e3779b97f4a7c15, 20260801} {
				cs := proofCases(t, f, seed)
				snippets := make([]abicheck.Snippet, len(cs))
				for i, c := range cs {
					snippets[i] = c.snippet
				}
				got := abicheck.Bytes(t, cTable(f), snippets)
				for _, c := range cs {
					want := got[c.name]
					enc, err := c.p.Append(f, nil)
					if err != nil {
						t.Errorf("%s: encode %v: %v", c.name, c.p, err)
						continue
					}
					if !bytes.Equal(enc, want) {
						t.Errorf("%s: %v\n Go %x\n C  %x", c.name, c.p, enc, want)
						continue
					}
					if c.p.Len() != len(want) {
						t.Errorf("%s: Len() = %d, C size %d", c.name, c.p.Len(), len(want))
					}
					dec, n, err := f.Decode(want)
					if err != nil || n != len(want) || !reflect.DeepEqual(dec, c.p) {
						t.Errorf("%s: Decode(C bytes) = %#v, %d, %v; want %#v", c.name, dec, n, err, c.p)
						continue
					}
					packets++
					kernel += c.kernel
					thunk += c.thunk
					kinds[c.p.Opcode()] = true
				}
			}
			t.Logf("%v: %d packets of %d kinds identical to gcc's bytes and decoded back; %d field values placed with kernel macros, %d with hl-thunk positions",
				f, packets, len(kinds), kernel, thunk)
		})
	}
}
