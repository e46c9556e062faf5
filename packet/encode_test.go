package packet

import (
	"bytes"
	"errors"
	"testing"
	"unsafe"

	g1 "github.com/gaudi-go/gaudi/uapi/gaudi"
	g2 "github.com/gaudi-go/gaudi/uapi/gaudi2"
)

// samples returns one packet of every kind with most fields set, valid in f.
func samples(f Format) []Packet {
	h := Header{EngineBarrier: true, RegBarrier: true, MsgBarrier: true}
	lin := LinDMA{Header: h, Src: 0x7f00_0000_1000, Dst: 0x20_0000_0000, Size: 4096, WriteCompletion: true, ContextID: 0x1234}
	lae := LoadAndExe{Header: h, Src: 0x1000, Load: true, Exe: true, Pred: 3}
	cp := CPDMA{Header: h, Src: 0x2000, Size: 256, Pred: 1}
	ws := WReg32{Header: h, Value: 0xdeadbeef, Offset: 0x1234, Pred: 2}
	short := MsgShort{Header: h, Value: 0x80000001, Offset: 0x40, Base: 3, WeaklyOrdered: true}
	if f == Gaudi {
		lin.Transpose, lin.Compress = true, true
	} else {
		lin.Endian, lin.BF16 = 2, true
		lae.PMap = true
		cp.UpperCP = true
		ws.Reg = true
		short.DW = true
	}
	ps := []Packet{
		lin,
		MsgLong{Header: h, Addr: 0xfc00_0000, Value: 7, Op: MsgWriteTimestamp, Pred: 31, NoSnoop: true},
		MsgProt{Header: h, Addr: 0xfc00_0004, Value: 1},
		short,
		Fence{Header: h, ID: 2, Target: 1, Dec: 1, Pred: 4},
		Wait{Header: h, Cycles: 1 << 20, Inc: 1, ID: 3},
		Nop{Header: h},
		Stop{Header: h},
		Repeat{Header: h, Sore: true, Outer: true, JumpPtr: 0x80, Pred: 5},
		ArbPoint{Header: h, Priority: 200, Release: true, Pred: 6},
		ws,
		WRegBulk{Header: h, Offset: 0x100, Pred: 7, Values: []uint64{1, 2, 3}},
		lae,
		cp,
	}
	if f == Gaudi2 {
		ps = append(ps, CBList{Header: h, IndexAddr: 0x3000, TableAddr: 0x4000, SizeDesc: true, Pred: 8})
	}
	return ps
}

func TestRoundTrip(t *testing.T) {
	for _, f := range []Format{Gaudi, Gaudi2} {
		var cb []byte
		for _, p := range samples(f) {
			var err error
			if cb, err = p.Append(f, cb); err != nil {
				t.Fatalf("%v: %v: %v", f, p, err)
			}
		}
		var got []Packet
		if err := f.Walk(cb, func(off int, p Packet) error { got = append(got, p); return nil }); err != nil {
			t.Fatalf("%v: Walk: %v", f, err)
		}
		want := samples(f)
		if len(got) != len(want) {
			t.Fatalf("%v: %d packets, want %d", f, len(got), len(want))
		}
		for i := range want {
			if got[i].String() != want[i].String() {
				t.Errorf("%v: packet %d = %v, want %v", f, i, got[i], want[i])
			}
		}
	}
}

// TestSizes checks the fixed sizes against the generated structures, whose
// sizes the uapi packages prove against gcc.
func TestSizes(t *testing.T) {
	for _, c := range []struct {
		op   Opcode
		size uintptr
	}{
		{OpWReg32, unsafe.Sizeof(g1.PacketWreg32{})},
		{OpWRegBulk, unsafe.Sizeof(g1.PacketWregBulk{})},
		{OpMsgLong, unsafe.Sizeof(g1.PacketMsgLong{})},
		{OpMsgShort, unsafe.Sizeof(g1.PacketMsgShort{})},
		{OpCPDMA, unsafe.Sizeof(g1.PacketCpDMA{})},
		{OpRepeat, unsafe.Sizeof(g1.PacketRepeat{})},
		{OpMsgProt, unsafe.Sizeof(g1.PacketMsgProt{})},
		{OpFence, unsafe.Sizeof(g1.PacketFence{})},
		{OpLinDMA, unsafe.Sizeof(g1.PacketLinDMA{})},
		{OpNop, unsafe.Sizeof(g1.PacketNop{})},
		{OpStop, unsafe.Sizeof(g1.PacketStop{})},
		{OpArbPoint, unsafe.Sizeof(g1.PacketArbPoint{})},
		{OpWait, unsafe.Sizeof(g1.PacketWait{})},
		{OpCBList, unsafe.Sizeof(g2.PacketCBList{})},
		{OpLoadAndExe, unsafe.Sizeof(g1.PacketLoadAndExe{})},
	} {
		if got := driverLen(c.op); uintptr(got) != c.size {
			t.Errorf("%v: driver size %d, structure %d", c.op, got, c.size)
		}
	}
	for _, f := range []Format{Gaudi, Gaudi2} {
		for _, p := range samples(f) {
			b, _ := p.Append(f, nil)
			if len(b) != p.Len() {
				t.Errorf("%v %v: %d bytes, Len %d", f, p.Opcode(), len(b), p.Len())
			}
		}
	}
}

// TestSharedMacros pins what the encoder assumes: the fields it reads from
// the Gaudi header sit at the same bits in the Gaudi2 header.
func TestSharedMacros(t *testing.T) {
	pairs := [][2]uint64{
		{g1.GAUDI_PKT_CTL_OPCODE_MASK, g2.GAUDI2_PKT_CTL_OPCODE_MASK},
		{g1.GAUDI_PKT_CTL_EB_MASK, g2.GAUDI2_PKT_CTL_EB_MASK},
		{g1.GAUDI_PKT_CTL_RB_MASK, g2.GAUDI2_PKT_CTL_RB_MASK},
		{g1.GAUDI_PKT_CTL_MB_MASK, g2.GAUDI2_PKT_CTL_MB_MASK},
		{g1.GAUDI_PKT_SHORT_VAL_SOB_SYNC_VAL_MASK, g2.GAUDI2_PKT_SHORT_VAL_SOB_SYNC_VAL_MASK},
		{g1.GAUDI_PKT_SHORT_VAL_SOB_MOD_MASK, g2.GAUDI2_PKT_SHORT_VAL_SOB_MOD_MASK},
		{g1.GAUDI_PKT_SHORT_VAL_MON_SYNC_GID_MASK, g2.GAUDI2_PKT_SHORT_VAL_MON_SYNC_GID_MASK},
		{g1.GAUDI_PKT_SHORT_VAL_MON_MASK_MASK, g2.GAUDI2_PKT_SHORT_VAL_MON_MASK_MASK},
		{g1.GAUDI_PKT_SHORT_VAL_MON_MODE_MASK, g2.GAUDI2_PKT_SHORT_VAL_MON_MODE_MASK},
		{g1.GAUDI_PKT_SHORT_VAL_MON_SYNC_VAL_MASK, g2.GAUDI2_PKT_SHORT_VAL_MON_SYNC_VAL_MASK},
		{g1.GAUDI_PKT_SHORT_CTL_ADDR_MASK, g2.GAUDI2_PKT_SHORT_CTL_ADDR_MASK},
		{g1.GAUDI_PKT_SHORT_CTL_BASE_MASK, g2.GAUDI2_PKT_SHORT_CTL_BASE_MASK},
		{g1.GAUDI_PKT_FENCE_CFG_DEC_VAL_MASK, g2.GAUDI2_PKT_FENCE_CFG_DEC_VAL_MASK},
		{g1.GAUDI_PKT_FENCE_CFG_TARGET_VAL_MASK, g2.GAUDI2_PKT_FENCE_CFG_TARGET_VAL_MASK},
		{g1.GAUDI_PKT_FENCE_CFG_ID_MASK, g2.GAUDI2_PKT_FENCE_CFG_ID_MASK},
		{g1.GAUDI_PKT_FENCE_CTL_PRED_MASK, g2.GAUDI2_PKT_FENCE_CTL_PRED_MASK},
		{g1.GAUDI_PKT_LIN_DMA_CTL_WRCOMP_EN_MASK, g2.GAUDI2_PKT_LIN_DMA_CTL_WRCOMP_MASK},
		{g1.GAUDI_PKT_LIN_DMA_CTL_MEMSET_MASK, g2.GAUDI2_PKT_LIN_DMA_CTL_MEMSET_MASK},
	}
	for i, p := range pairs {
		if p[0] != p[1] {
			t.Errorf("pair %d: gaudi %#x, gaudi2 %#x", i, p[0], p[1])
		}
	}
}

func TestFieldErrors(t *testing.T) {
	tests := []struct {
		f     Format
		p     Packet
		field string
		want  error
	}{
		{Gaudi, LinDMA{Dst: 1 << 56}, "Dst", ErrFieldRange},
		{Gaudi, LinDMA{Endian: 1}, "Endian", ErrNotInFormat},
		{Gaudi, LinDMA{BF16: true}, "BF16", ErrNotInFormat},
		{Gaudi, LinDMA{FP16: true}, "FP16", ErrNotInFormat},
		{Gaudi2, LinDMA{Endian: 4}, "Endian", ErrFieldRange},
		{Gaudi2, LinDMA{Transpose: true}, "Transpose", ErrNotInFormat},
		{Gaudi2, LinDMA{DType: true}, "DType", ErrNotInFormat},
		{Gaudi2, LinDMA{Compress: true}, "Compress", ErrNotInFormat},
		{Gaudi2, LinDMA{Decompress: true}, "Decompress", ErrNotInFormat},
		{Gaudi, MsgLong{Op: 4}, "Op", ErrFieldRange},
		{Gaudi2, MsgLong{Pred: 32}, "Pred", ErrFieldRange},
		{Gaudi, MsgProt{Op: 4}, "Op", ErrFieldRange},
		{Gaudi, MsgShort{Base: 4}, "Base", ErrFieldRange},
		{Gaudi2, MsgShort{Op: 4}, "Op", ErrFieldRange},
		{Gaudi, MsgShort{DW: true}, "DW", ErrNotInFormat},
		{Gaudi, Fence{ID: 4}, "ID", ErrFieldRange},
		{Gaudi, Fence{Dec: 16}, "Dec", ErrFieldRange},
		{Gaudi2, Fence{Pred: 32}, "Pred", ErrFieldRange},
		{Gaudi, Wait{Cycles: 1 << 24}, "Cycles", ErrFieldRange},
		{Gaudi, Wait{Inc: 16}, "Inc", ErrFieldRange},
		{Gaudi, Wait{ID: 4}, "ID", ErrFieldRange},
		{Gaudi, Repeat{Pred: 32}, "Pred", ErrFieldRange},
		{Gaudi, ArbPoint{Priority: 256}, "Priority", ErrFieldRange},
		{Gaudi2, ArbPoint{Priority: 1 << 24}, "Priority", ErrFieldRange},
		{Gaudi, ArbPoint{Pred: 32}, "Pred", ErrFieldRange},
		{Gaudi, WReg32{Reg: true}, "Reg", ErrNotInFormat},
		{Gaudi, WReg32{Pred: 32}, "Pred", ErrFieldRange},
		{Gaudi, WRegBulk{Values: make([]uint64, MaxBulkValues+1)}, "len(Values)", ErrFieldRange},
		{Gaudi, WRegBulk{Pred: 32}, "Pred", ErrFieldRange},
		{Gaudi, LoadAndExe{PMap: true}, "PMap", ErrNotInFormat},
		{Gaudi2, LoadAndExe{Pred: 32}, "Pred", ErrFieldRange},
		{Gaudi, CPDMA{UpperCP: true}, "UpperCP", ErrNotInFormat},
		{Gaudi2, CPDMA{Pred: 32}, "Pred", ErrFieldRange},
		{Gaudi, CBList{}, "Opcode", ErrNotInFormat},
		{Gaudi2, CBList{Pred: 32}, "Pred", ErrFieldRange},
		{0, Nop{}, "Format", ErrNotInFormat},
		{5, Stop{}, "Format", ErrNotInFormat},
	}
	for _, tt := range tests {
		prefix := []byte{0xaa}
		b, err := tt.p.Append(tt.f, prefix)
		if !errors.Is(err, tt.want) {
			t.Errorf("%v %v: err = %v, want %v", tt.f, tt.p, err, tt.want)
			continue
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field || fe.Opcode != tt.p.Opcode() || fe.Format != tt.f {
			t.Errorf("%v %v: error %#v, want field %s", tt.f, tt.p, err, tt.field)
		}
		if !bytes.Equal(b, prefix) {
			t.Errorf("%v %v: wrote %x on error", tt.f, tt.p, b)
		}
		if err.Error() == "" {
			t.Error("empty message")
		}
	}
	for _, m := range []struct {
		f    Format
		p    Packet
		want string
	}{
		{Gaudi, LinDMA{Dst: 1 << 56}, "packet: gaudi LIN_DMA: Dst 0x100000000000000 does not fit in 56 bits"},
		{Gaudi, LinDMA{Endian: 1}, "packet: gaudi LIN_DMA: field Endian is not available in this format"},
		{Gaudi, CBList{}, "packet: gaudi: CB_LIST is not a gaudi packet"},
		{0, Nop{}, "packet: format(0): invalid format"},
	} {
		if _, err := m.p.Append(m.f, nil); err == nil || err.Error() != m.want {
			t.Errorf("message %q, want %q", err, m.want)
		}
	}
}

func TestEdgeValues(t *testing.T) {
	// The largest values that fit must encode.
	ok := []struct {
		f Format
		p Packet
	}{
		{Gaudi, LinDMA{Dst: 1<<56 - 1, ContextID: 0xffff, Size: MaxTransferSize}},
		{Gaudi2, LinDMA{Dst: ^uint64(0), ContextID: 0xffff, Endian: 3}},
		{Gaudi, WRegBulk{Values: make([]uint64, MaxBulkValues)}},
		{Gaudi2, ArbPoint{Priority: 1<<24 - 1}},
		{Gaudi, Wait{Cycles: 1<<24 - 1, Inc: 15, ID: 3}},
	}
	for _, tt := range ok {
		b, err := tt.p.Append(tt.f, nil)
		if err != nil {
			t.Errorf("%v %v: %v", tt.f, tt.p, err)
			continue
		}
		p, n, err := tt.f.Decode(b)
		if err != nil || n != len(b) || p.String() != tt.p.String() {
			t.Errorf("%v: decoded %v, %d, %v; want %v", tt.f, p, n, err, tt.p)
		}
	}
}

func TestSyncHelpers(t *testing.T) {
	if _, err := Gaudi.Signal(16384, false); !errors.Is(err, ErrFieldRange) {
		t.Errorf("Signal(16384) err = %v", err)
	}
	p, err := Gaudi2.Signal(16383, true)
	if err != nil || p.Offset != 0xfffc || p.Base != Gaudi2BaseSOB || !p.EngineBarrier || p.RegBarrier || !p.MsgBarrier {
		t.Errorf("Signal = %v, %v", p, err)
	}
	if u := p.SOBUpdate(); u != (SOBUpdate{Value: 1, Add: true}) {
		t.Errorf("signal update %+v", u)
	}
	if _, err := (SOBUpdate{Value: 1 << 15}).Word(Gaudi); !errors.Is(err, ErrFieldRange) {
		t.Errorf("SOBUpdate range: %v", err)
	}
	if _, err := (SOBUpdate{LongMode: true}).Word(Gaudi); !errors.Is(err, ErrNotInFormat) {
		t.Errorf("SOBUpdate LongMode on Gaudi: %v", err)
	}
	if _, err := (MonArm{Value: 1 << 15}).Word(Gaudi2); !errors.Is(err, ErrFieldRange) {
		t.Errorf("MonArm range: %v", err)
	}
	if _, err := (MonConfig{}).Word(Gaudi); !errors.Is(err, ErrNotInFormat) {
		t.Errorf("MonConfig on Gaudi: %v", err)
	}
	if _, err := (MonConfig{WrNum: 4}).Word(Gaudi2); !errors.Is(err, ErrFieldRange) {
		t.Errorf("MonConfig WrNum: %v", err)
	}
	if _, err := (MonConfig{MSBSID: 16}).Word(Gaudi2); !errors.Is(err, ErrFieldRange) {
		t.Errorf("MonConfig MSBSID: %v", err)
	}
	mc := MonConfig{LongSOB: true, CQEnable: true, WrNum: 3, LBWEnable: true, MSBSID: 9, LongHighGroup: true}
	w, err := mc.Word(Gaudi2)
	if err != nil || w != 0x1|0x10|0x60|0x100|0x90000|0x80000000 {
		t.Errorf("MonConfig word %#x, %v", w, err)
	}
	if got := (MsgShort{Value: w}).MonConfig(); got != mc {
		t.Errorf("MonConfig() = %+v", got)
	}
	if _, err := Gaudi.ArmMonitor(0, 2048, 1, 1); !errors.Is(err, ErrFieldRange) {
		t.Errorf("ArmMonitor group 256: %v", err)
	}
	if _, err := Gaudi.ArmMonitor(0, 0, 1, 1<<15); !errors.Is(err, ErrFieldRange) {
		t.Errorf("ArmMonitor value: %v", err)
	}
	if _, err := Gaudi.ArmMonitor(0, 6, 0x7, 1); !errors.Is(err, ErrFieldRange) {
		t.Errorf("ArmMonitor mask past the group: %v", err)
	}
	fw := Gaudi2.FenceWait()
	if fw != (Fence{Header: Header{MsgBarrier: true}, ID: 2, Target: 1, Dec: 1}) {
		t.Errorf("FenceWait = %v", fw)
	}
}

// TestSOBMask follows hl_gen_sob_mask: mask 1 selects the base object at
// its position in the group; other masks must end within the group.
func TestSOBMask(t *testing.T) {
	tests := []struct {
		base uint16
		mask uint8
		want uint8
		err  bool
	}{
		{0, 0, 0, true},
		{0, 1, 0xfe, false},
		{5, 1, 0xdf, false},
		{13, 1, 0xdf, false},
		{0, 0xff, 0x00, false},
		{1, 0xff, 0, true},
		{1, 0x7f, 0x80, false},
		{7, 0x3, 0, true},
		{6, 0x3, 0xfc, false},
		{8, 0x80, 0x7f, false},
	}
	for _, tt := range tests {
		got, err := SOBMask(tt.base, tt.mask)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("SOBMask(%d, %#x) = %#x, %v; want %#x, error %v", tt.base, tt.mask, got, err, tt.want, tt.err)
		}
		if err != nil && !errors.Is(err, ErrFieldRange) {
			t.Errorf("SOBMask error %v is not ErrFieldRange", err)
		}
	}
}

func TestBuilder(t *testing.T) {
	b := NewBuilder(Gaudi2, make([]byte, 0, 256))
	b.LinDMA(LinDMA{Src: 1, Dst: 2, Size: 3})
	b.Signal(1, false)
	b.MsgLong(MsgLong{Addr: 4})
	b.MsgProt(MsgProt{Addr: 5})
	b.MsgShort(MsgShort{Offset: 6})
	b.Fence(Fence{ID: 1})
	b.Wait(Wait{Cycles: 7})
	b.Nop(Nop{})
	b.Repeat(Repeat{})
	b.ArbPoint(ArbPoint{})
	b.WReg32(WReg32{})
	b.WRegBulk(WRegBulk{Values: []uint64{9}})
	b.LoadAndExe(LoadAndExe{})
	b.CPDMA(CPDMA{})
	b.CBList(CBList{})
	b.Stop(Stop{})
	if b.Err() != nil || b.Format() != Gaudi2 {
		t.Fatal(b.Err())
	}
	if want := 24 + 8 + 16 + 16 + 8 + 8 + 8 + 8 + 8 + 8 + 8 + 16 + 16 + 16 + 24 + 8; b.Len() != want {
		t.Fatalf("Len = %d, want %d", b.Len(), want)
	}
	n := 0
	if err := Gaudi2.Walk(b.Bytes(), func(int, Packet) error { n++; return nil }); err != nil || n != 16 {
		t.Fatalf("Walk: %d packets, %v", n, err)
	}

	// The first error sticks; later packets are dropped.
	b.Reset(nil)
	b.Nop(Nop{})
	b.Fence(Fence{ID: 9})
	b.Nop(Nop{})
	b.Signal(1, false)
	if !errors.Is(b.Err(), ErrFieldRange) || b.Len() != 8 {
		t.Fatalf("after error: %v, %d bytes", b.Err(), b.Len())
	}
	b.Reset(nil)
	b.Signal(1<<15, false)
	if !errors.Is(b.Err(), ErrFieldRange) || b.Len() != 0 {
		t.Fatalf("Signal error: %v, %d bytes", b.Err(), b.Len())
	}
}

// TestNoAllocs proves the encoders and the Builder do not allocate when the
// slice has room.
func TestNoAllocs(t *testing.T) {
	for _, f := range []Format{Gaudi, Gaudi2} {
		buf := make([]byte, 0, 4096)
		for _, p := range samples(f) {
			// Through the interface the value is already boxed; what is
			// measured is Append itself.
			if n := testing.AllocsPerRun(100, func() { _, _ = p.Append(f, buf[:0]) }); n != 0 {
				t.Errorf("%v %v.Append: %v allocations", f, p.Opcode(), n)
			}
		}
		b := NewBuilder(f, buf)
		vals := []uint64{1, 2, 3}
		n := testing.AllocsPerRun(100, func() {
			b.Reset(buf[:0])
			b.LinDMA(LinDMA{Src: 0x1000, Dst: 0x2000, Size: 4096, WriteCompletion: true})
			b.Signal(3, true)
			b.MsgLong(MsgLong{Addr: 0x100, Value: 1})
			b.MsgProt(MsgProt{Addr: 0x100, Value: 1})
			b.MsgShort(MsgShort{Offset: 4, Value: 1})
			b.Fence(f.FenceWait())
			b.Wait(Wait{Cycles: 10})
			b.Nop(Nop{})
			b.Stop(Stop{})
			b.Repeat(Repeat{JumpPtr: 1})
			b.ArbPoint(ArbPoint{Priority: 1})
			b.WReg32(WReg32{Offset: 8, Value: 1})
			b.WRegBulk(WRegBulk{Offset: 8, Values: vals})
			b.LoadAndExe(LoadAndExe{Src: 1, Exe: true})
			b.CPDMA(CPDMA{Src: 1, Size: 8})
			if f == Gaudi2 {
				b.CBList(CBList{IndexAddr: 1, TableAddr: 2})
			}
			if b.Err() != nil {
				panic(b.Err())
			}
		})
		if n != 0 {
			t.Errorf("%v Builder: %v allocations per command buffer", f, n)
		}
		arm := testing.AllocsPerRun(100, func() {
			if _, err := f.ArmMonitor(8, 16, 0x3, 1); err != nil {
				panic(err)
			}
		})
		if arm != 0 {
			t.Errorf("%v ArmMonitor: %v allocations", f, arm)
		}
	}
}
