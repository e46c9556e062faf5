package packet

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
)

// samples3 returns one packet of every type of a Gaudi3 format, with most
// fields set.
func samples3(f Format) []Packet {
	h := Header{EngineBarrier: true}
	if f == Gaudi3 {
		h.RegBarrier, h.MsgBarrier = true, true
	}
	ps := []Packet{
		WReg32{Header: h, Value: 0xdeadbeef, Offset: 0x1234, Pred: 2},
		WRegBulk{Header: h, Offset: 0x100, Pred: 7, Values: []uint64{1, 2, 3}},
		MsgLong{Header: h, Addr: 0xfc00_0000, Value: 7, Op: MsgWriteTimestamp, Pred: 31},
		MsgShort{Header: h, Value: 0x80000001, Offset: 0x40, Base: 5, DW: true},
		Gaudi3Fence{Header: h, ID: 2, Target: 0x3fff, Dec: 1, ChannelID: 17, Pred: 4},
		Nop{Header: h},
		Stop{Header: h},
		Wait{Header: Header{EngineBarrier: true, MsgBarrier: f == Gaudi3}, Cycles: 1 << 20, Inc: 1, ID: 3},
		WReg64Short{Header: h, Offset: 0x1000, Base: 31, DRegOffset: 0x3fff, Pred: 1},
		WReg64Long{Header: h, Offset: 0x1_0000_2000, Base: 3, DRegOffset: 0x20, DWEnable: 3, Rel: true, Pred: 9},
	}
	if f == Gaudi3 {
		return append(ps,
			MsgProt{Header: h, Addr: 0xfc00_0004, Value: 1, WeaklyOrdered: true},
			Gaudi3LinDMA{Header: h, Src: 0x0201_0000_0000_1000, Dst: 0xff70_0000_0000_2000, Size: 4096, Memset: true, Endian: 2,
				IncContextID: true, AddOffset: true, Convert: 3, ConvertType: 31, ConvertClip: true, ConvertRounding: 7},
			LoadAndExe{Header: h, Src: 0x1000, PMap: true, Load: true, Exe: true, Pred: 3},
		)
	}
	nop := Nop{Header: Header{EngineBarrier: true, MsgBarrier: true}}
	return append(ps, nop,
		WReg32{Offset: 1<<18 - 1},
		WReg64Short{DRegOffset: 0xffff},
		LinPDMA{Header: h, Src: 0xff70_0000_1234_0000, Dst: 0x0201_0000_0000_0000, Size: 1 << 20, HostToDevice: true},
		LinPDMA{Src: 0x0201_0000_0000_0000, Dst: 0xff70_0000_1234_0000, Size: 64, Fence: true, FenceID: 1, FenceTarget: 0x2000, FenceDec: 15},
		LinPDMA{Src: 0x5a5a5a5a_5a5a5a5a, Dst: 0x0201_0000_0000_8000, Size: 1 << 30, Memset: true, WriteCompletion: true,
			CompletionAddr: 0x0300_007f_fc00_1234, CompletionData: 0x80000001, AdvanceCompletionQueue: true, Endian: 1},
		LinPDMA{Size: 0, WriteCompletion: true, CompletionAddr: 0x10, CompletionData: 1, Fence: true, FenceTarget: 1, FenceDec: 1, IncContextID: true, AddOffset: true},
		ChWReg32{Header: h, Value: 0x1f, Offset: 0xfff, BlockB: true, Pred: 1},
		ChWRegBulk{Header: h, Offset: 0x10, Values: []uint64{0xffffffffffffffff}},
		ChWReg64Short{Header: h, Offset: 0x80, Base: 2, DRegOffset: 0xfff, BlockB: true},
		ChWReg64Long{Offset: 0xfedcba9876543210, Base: 1, DRegOffset: 0x400, DWEnable: 1, Pred: 31},
	)
}

func TestGaudi3RoundTrip(t *testing.T) {
	for _, f := range []Format{Gaudi3, Gaudi3PQM} {
		var cb []byte
		for _, p := range samples3(f) {
			var err error
			if cb, err = p.Append(f, cb); err != nil {
				t.Fatalf("%v: %v: %v", f, p, err)
			}
		}
		var got []Packet
		if err := f.Walk(cb, func(off int, p Packet) error { got = append(got, p); return nil }); err != nil {
			t.Fatalf("%v: Walk: %v", f, err)
		}
		want := samples3(f)
		if len(got) != len(want) {
			t.Fatalf("%v: %d packets, want %d", f, len(got), len(want))
		}
		for i := range want {
			if got[i].String() != want[i].String() {
				t.Errorf("%v: packet %d = %v, want %v", f, i, got[i], want[i])
			}
		}
		if err := f.ValidateUser(cb); err != nil {
			t.Errorf("%v: ValidateUser: %v", f, err)
		}
	}
}

// TestGaudi3Opcodes checks the formats' opcode sets against the
// specifications' enums (package uapi/gaudi3) and the names.
func TestGaudi3Opcodes(t *testing.T) {
	qman := map[Opcode]bool{}
	for _, id := range []g3.PacketID{g3.PACKET_WREG_32, g3.PACKET_WREG_BULK, g3.PACKET_MSG_LONG, g3.PACKET_MSG_SHORT,
		g3.PACKET_MSG_PROT, g3.PACKET_FENCE, g3.PACKET_LIN_DMA, g3.PACKET_NOP, g3.PACKET_STOP, g3.PACKET_WAIT,
		g3.PACKET_LOAD_AND_EXE, g3.PACKET_WRITE_ARC_STREAM, g3.PACKET_WREG_64_SHORT, g3.PACKET_WREG_64_LONG} {
		qman[Opcode(id)] = true
	}
	pqm := map[Opcode]bool{}
	for _, id := range []g3.PQMPacketID{g3.PQM_PACKET_WREG_32, g3.PQM_PACKET_WREG_BULK, g3.PQM_PACKET_MSG_LONG,
		g3.PQM_PACKET_MSG_SHORT, g3.PQM_PACKET_FENCE, g3.PQM_PACKET_LIN_PDMA, g3.PQM_PACKET_NOP, g3.PQM_PACKET_STOP,
		g3.PQM_PACKET_WAIT, g3.PQM_PACKET_WREG_64_SHORT, g3.PQM_PACKET_WREG_64_LONG, g3.PQM_PACKET_CH_WREG_32,
		g3.PQM_PACKET_CH_WREG_BULK, g3.PQM_PACKET_CH_WREG_64_SHORT, g3.PQM_PACKET_CH_WREG_64_LONG} {
		pqm[Opcode(id)] = true
	}
	for op := range Opcode(32) {
		if Gaudi3.Has(op) != qman[op] || Gaudi3PQM.Has(op) != pqm[op] {
			t.Errorf("opcode %#x: Gaudi3.Has %v (spec %v), Gaudi3PQM.Has %v (spec %v)", uint8(op), Gaudi3.Has(op), qman[op], Gaudi3PQM.Has(op), pqm[op])
		}
		if Gaudi2.Has(op) && op >= OpChWReg32 {
			t.Errorf("Gaudi2 has %v", op)
		}
	}
	for f, s := range map[Format]string{Gaudi3: "gaudi3", Gaudi3PQM: "gaudi3-pqm", 5: "format(5)"} {
		if f.String() != s {
			t.Errorf("Format(%d).String() = %q, want %q", f, f.String(), s)
		}
	}
	if Gaudi3PQM.opName(OpLinPDMA) != "LIN_PDMA" || Gaudi3.opName(OpLinDMA) != "LIN_DMA" || OpChWReg64Long.String() != "CH_WREG_64_LONG" {
		t.Error("opcode names")
	}
	if got := (LinPDMA{Size: 8}).String(); !strings.HasPrefix(got, "LIN_PDMA{") {
		t.Errorf("LinPDMA.String() = %q", got)
	}
}

func TestGaudi3FieldErrors(t *testing.T) {
	tests := []struct {
		f     Format
		p     Packet
		field string
		want  error
	}{
		{Gaudi3, Fence{}, "Type", ErrNotInFormat},
		{Gaudi3PQM, Fence{}, "Type", ErrNotInFormat},
		{Gaudi3, LinDMA{}, "Type", ErrNotInFormat},
		{Gaudi3PQM, LinDMA{}, "Type", ErrNotInFormat},
		{Gaudi2, Gaudi3Fence{}, "Type", ErrNotInFormat},
		{Gaudi3PQM, Gaudi3LinDMA{}, "Type", ErrNotInFormat},
		{Gaudi3, LinPDMA{}, "Type", ErrNotInFormat},
		{Gaudi2, WReg64Short{}, "Type", ErrNotInFormat},
		{Gaudi2, WReg64Long{}, "Type", ErrNotInFormat},
		{Gaudi, WReg64Short{}, "Opcode", ErrNotInFormat},
		{Gaudi3, ChWReg32{}, "Opcode", ErrNotInFormat},
		{Gaudi3PQM, MsgProt{}, "Opcode", ErrNotInFormat},
		{Gaudi3PQM, CPDMA{}, "Opcode", ErrNotInFormat},
		{Gaudi3, ArbPoint{}, "Opcode", ErrNotInFormat},
		{Gaudi3, Repeat{}, "Opcode", ErrNotInFormat},
		{Gaudi3, CBList{}, "Opcode", ErrNotInFormat},
		{Gaudi3PQM, LoadAndExe{}, "Opcode", ErrNotInFormat},
		{Gaudi3PQM, Nop{Header: Header{RegBarrier: true}}, "RegBarrier", ErrNotInFormat},
		{Gaudi3PQM, Stop{Header: Header{MsgBarrier: true}}, "MsgBarrier", ErrNotInFormat},
		{Gaudi3PQM, WReg32{Header: Header{RegBarrier: true}}, "RegBarrier", ErrNotInFormat},
		{Gaudi3, Wait{Header: Header{RegBarrier: true}}, "RegBarrier", ErrNotInFormat},
		{Gaudi3PQM, WReg32{Reg: true}, "Reg", ErrNotInFormat},
		{Gaudi3PQM, WReg32{Offset: 1 << 18}, "Offset", ErrFieldRange},
		{Gaudi3, WReg32{Offset: 1 << 16}, "Offset", ErrFieldRange},
		{Gaudi2, WReg32{Offset: 1 << 16}, "Offset", ErrFieldRange},
		{Gaudi3PQM, WRegBulk{Offset: 1 << 18}, "Offset", ErrFieldRange},
		{Gaudi3PQM, MsgLong{NoSnoop: true}, "NoSnoop", ErrNotInFormat},
		{Gaudi3PQM, MsgShort{WeaklyOrdered: true}, "WeaklyOrdered", ErrNotInFormat},
		{Gaudi3, MsgShort{Base: 8}, "Base", ErrFieldRange},
		{Gaudi3PQM, MsgShort{Base: 8}, "Base", ErrFieldRange},
		{Gaudi2, MsgShort{Base: 4}, "Base", ErrFieldRange},
		{Gaudi3, Gaudi3Fence{Target: 1 << 14}, "Target", ErrFieldRange},
		{Gaudi3PQM, Gaudi3Fence{ChannelID: 32}, "ChannelID", ErrFieldRange},
		{Gaudi3, Gaudi3Fence{Dec: 16}, "Dec", ErrFieldRange},
		{Gaudi3, Gaudi3LinDMA{Endian: 4}, "Endian", ErrFieldRange},
		{Gaudi3, Gaudi3LinDMA{ConvertType: 32}, "ConvertType", ErrFieldRange},
		{Gaudi3, Gaudi3LinDMA{ConvertRounding: 8}, "ConvertRounding", ErrFieldRange},
		{Gaudi3PQM, LinPDMA{FenceTarget: 1}, "FenceTarget (without Fence)", ErrFieldRange},
		{Gaudi3PQM, LinPDMA{CompletionAddr: 1}, "CompletionAddr (without WriteCompletion)", ErrFieldRange},
		{Gaudi3PQM, LinPDMA{CompletionData: 1, Fence: true}, "CompletionData (without WriteCompletion)", ErrFieldRange},
		{Gaudi3PQM, LinPDMA{Fence: true, FenceTarget: 1 << 14}, "FenceTarget", ErrFieldRange},
		{Gaudi3PQM, LinPDMA{Header: Header{MsgBarrier: true}}, "MsgBarrier", ErrNotInFormat},
		{Gaudi3PQM, LinPDMA{Endian: 4}, "Endian", ErrFieldRange},
		{Gaudi3, WReg64Short{DRegOffset: 1 << 14}, "DRegOffset", ErrFieldRange},
		{Gaudi3PQM, WReg64Short{Base: 32}, "Base", ErrFieldRange},
		{Gaudi3, WReg64Long{DWEnable: 4}, "DWEnable", ErrFieldRange},
		{Gaudi3PQM, ChWReg32{Offset: 1 << 12}, "Offset", ErrFieldRange},
		{Gaudi3PQM, ChWRegBulk{Values: make([]uint64, MaxBulkValues+1)}, "len(Values)", ErrFieldRange},
		{Gaudi3PQM, ChWReg64Short{DRegOffset: 1 << 12}, "DRegOffset", ErrFieldRange},
		{Gaudi3PQM, ChWReg64Long{DWEnable: 4}, "DWEnable", ErrFieldRange},
		{Gaudi3PQM, ChWReg64Long{Pred: 32}, "Pred", ErrFieldRange},
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
			t.Errorf("%v %v: buffer changed to %x on error", tt.f, tt.p, b)
		}
		if err.Error() == "" || !strings.HasPrefix(err.Error(), "packet: ") {
			t.Errorf("%v %v: message %q", tt.f, tt.p, err)
		}
	}
	_, err := LinPDMA{CompletionAddr: 1}.Append(Gaudi3PQM, nil)
	if !strings.Contains(err.Error(), "gaudi3-pqm LIN_PDMA") {
		t.Errorf("message %q does not name LIN_PDMA", err)
	}
	_, err = Fence{}.Append(Gaudi3, nil)
	if !strings.Contains(err.Error(), "does not encode the gaudi3 layout") {
		t.Errorf("message %q", err)
	}
	// What the Gaudi3 formats take of the Gaudi2 fields.
	for _, ok := range []struct {
		f Format
		p Packet
	}{
		{Gaudi3, LoadAndExe{PMap: true}},
		{Gaudi3, WReg32{Reg: true}},
		{Gaudi3PQM, MsgShort{DW: true, Base: 7}},
		{Gaudi3, MsgShort{DW: true, Base: 7, WeaklyOrdered: true, NoSnoop: true}},
		{Gaudi3PQM, Nop{Header: Header{EngineBarrier: true, MsgBarrier: true}}},
		{Gaudi3PQM, WReg64Short{DRegOffset: 0xffff}},
	} {
		if _, err := ok.p.Append(ok.f, nil); err != nil {
			t.Errorf("%v %v: %v", ok.f, ok.p, err)
		}
	}
}

func TestGaudi3SyncWords(t *testing.T) {
	u := SOBUpdate{Value: 5, Add: true, LongMode: true, ZeroCounter: true}
	for _, f := range []Format{Gaudi3, Gaudi3PQM} {
		w, err := u.Word(f)
		if err != nil || w != 5|1<<31|1<<24|1<<28 {
			t.Errorf("%v: SOBUpdate word %#x, %v", f, w, err)
		}
		if got := (MsgShort{Value: w}).SOBUpdate(); got != u {
			t.Errorf("%v: read back %+v", f, got)
		}
		if _, err := f.Signal(1, false); !errors.Is(err, ErrNotInFormat) {
			t.Errorf("%v: Signal: %v", f, err)
		}
		if _, err := f.ArmMonitor(0, 0, 1, 1); !errors.Is(err, ErrNotInFormat) {
			t.Errorf("%v: ArmMonitor: %v", f, err)
		}
		if _, err := (MonConfig{}).Word(f); !errors.Is(err, ErrNotInFormat) {
			t.Errorf("%v: MonConfig: %v", f, err)
		}
	}
	if _, err := u.Word(Gaudi2); !errors.Is(err, ErrNotInFormat) {
		t.Errorf("ZeroCounter on Gaudi2: %v", err)
	}
}

// TestGaudi3Decode covers what Decode refuses or flags in the Gaudi3
// formats.
func TestGaudi3Decode(t *testing.T) {
	ctl := func(op Opcode, bits uint32) uint32 { return uint32(op)<<24 | bits }
	commit := uint32(1 << 11)
	tests := []struct {
		name string
		f    Format
		b    []byte
		want error
		n    int
	}{
		{"LIN_DMA with a completion", Gaudi3, raw(8, ctl(OpLinDMA, commit|1), 0, 0, 0, 0), ErrUnsupportedOpcode, 0},
		{"LIN_DMA with a fence", Gaudi3, raw(8, ctl(OpLinDMA, commit|1<<5), 0, 0, 0, 0), ErrUnsupportedOpcode, 0},
		{"LIN_DMA without commit", Gaudi3, raw(8, ctl(OpLinDMA, 0), 0, 0, 0, 0), ErrReservedBits, 24},
		{"LIN_DMA ctl bit 23", Gaudi3, raw(8, ctl(OpLinDMA, commit|1<<23), 0, 0, 0, 0), ErrReservedBits, 24},
		{"LIN_PDMA two completions", Gaudi3PQM, raw(8, ctl(OpLinPDMA, commit|2), 0, 0, 0, 0), ErrUnsupportedOpcode, 0},
		{"LIN_PDMA addresses from registers", Gaudi3PQM, raw(8, ctl(OpLinPDMA, commit|1<<10), 0, 0, 0, 0), ErrUnsupportedOpcode, 0},
		{"LIN_PDMA without commit", Gaudi3PQM, raw(8, ctl(OpLinPDMA, 0), 0, 0, 0, 0), ErrReservedBits, 24},
		{"LIN_PDMA RB", Gaudi3PQM, raw(8, ctl(OpLinPDMA, commit|1<<30), 0, 0, 0, 0), ErrReservedBits, 24},
		{"LIN_PDMA completion truncated", Gaudi3PQM, raw(8, ctl(OpLinPDMA, commit|1), 0, 0, 0, 0), ErrTruncated, 0},
		{"LIN_PDMA fence reserved word", Gaudi3PQM, raw(8, ctl(OpLinPDMA, commit|1<<5), 0, 0, 0, 0, 1, 0), ErrReservedBits, 32},
		{"LIN_PDMA fence word bits 15:4", Gaudi3PQM, raw(8, ctl(OpLinPDMA, commit|1<<5), 0, 0, 0, 0, 0, 0x10), ErrReservedBits, 32},
		{"LIN_PDMA fence word without fence_en", Gaudi3PQM, raw(8, ctl(OpLinPDMA, commit|1), 0, 0, 0, 0, 0, 0, 0, 1), ErrReservedBits, 40},
		{"LIN_PDMA fenced", Gaudi3PQM, raw(8, ctl(OpLinPDMA, commit|1<<5), 0, 0, 0, 0, 0, 0x40010001), nil, 32},
		{"WRITE_ARC_STREAM", Gaudi3, raw(0, ctl(OpWriteArcStream, 0)), ErrUnsupportedOpcode, 0},
		{"CB_LIST", Gaudi3, raw(0, ctl(OpCBList, 0), 0, 0, 0, 0), ErrUnknownOpcode, 0},
		{"MSG_PROT in PQM", Gaudi3PQM, raw(0, ctl(OpMsgProt, 0), 0, 0), ErrUnknownOpcode, 0},
		{"WAIT with bit 30", Gaudi3, raw(0, ctl(OpWait, 1<<30)), ErrReservedBits, 8},
		{"PQM WREG_32 bit 31", Gaudi3PQM, raw(0, ctl(OpWReg32, 1<<31)), ErrReservedBits, 8},
		{"PQM NOP payload bit 1", Gaudi3PQM, raw(2, ctl(OpNop, 0)), ErrReservedBits, 8},
		{"PQM NOP MB", Gaudi3PQM, raw(1, ctl(OpNop, 1<<29)), nil, 8},
		{"PQM WREG_64_SHORT dreg msb", Gaudi3PQM, raw(0, ctl(OpWReg64Short, 3<<30)), nil, 8},
		{"WREG_64_LONG word 0 bit 3", Gaudi3, raw(8, ctl(OpWReg64Long, 0), 0, 0), ErrReservedBits, 16},
		{"CH_WREG_BULK values", Gaudi3PQM, raw(2, ctl(OpChWRegBulk, 0), 1, 2, 3, 4), nil, 24},
		{"CH_WREG_32 bit 19", Gaudi3PQM, raw(0, ctl(OpChWReg32, 1<<19)), ErrReservedBits, 8},
		{"Gaudi3 FENCE cfg bit 9", Gaudi3, raw(1<<9, ctl(OpFence, 0)), ErrReservedBits, 8},
	}
	for _, tt := range tests {
		p, n, err := tt.f.Decode(tt.b)
		if !errors.Is(err, tt.want) || n != tt.n {
			t.Errorf("%s: Decode = %v, %d, %v; want %d, %v", tt.name, p, n, err, tt.n, tt.want)
			continue
		}
		if (n == 0) != (p == nil) {
			t.Errorf("%s: packet %v with length %d", tt.name, p, n)
		}
		var de *DecodeError
		if err != nil && (!errors.As(err, &de) || de.Format != tt.f) {
			t.Errorf("%s: error %#v", tt.name, err)
		}
	}
	p, _, err := Gaudi3.Decode(raw(8, ctl(OpWait, 1<<30|1<<29)))
	if w, ok := p.(Wait); !ok || w.RegBarrier || !w.EngineBarrier || !errors.Is(err, ErrReservedBits) {
		t.Errorf("Gaudi3 WAIT with bit 30: %#v, %v", p, err)
	}
	p, _, _ = Gaudi3PQM.Decode(raw(8, ctl(OpLinPDMA, commit|1<<5), 0, 0, 0, 0, 0, 0x40010001))
	if l, ok := p.(LinPDMA); !ok || !l.Fence || l.FenceID != 1 || l.FenceTarget != 1 || l.FenceDec != 1 || l.WriteCompletion {
		t.Errorf("fenced LIN_PDMA: %#v", p)
	}
	_, _, err = Gaudi3PQM.Decode(raw(8, ctl(OpLinPDMA, commit|2), 0, 0, 0, 0))
	if err == nil || !strings.Contains(err.Error(), "LIN_PDMA") {
		t.Errorf("error %v does not name LIN_PDMA", err)
	}
	if _, _, ok := Gaudi3.DecodeLinDMA(raw(8, ctl(OpLinDMA, commit), 0, 0, 0, 0)); ok {
		t.Error("DecodeLinDMA decoded a Gaudi3 packet")
	}
}

func TestNewCopyEncoderRefusesGaudi3(t *testing.T) {
	for _, f := range []Format{Gaudi3, Gaudi3PQM, 0} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewCopyEncoder(%v) did not panic", f)
				}
			}()
			NewCopyEncoder(f, Header{}, false, false)
		}()
	}
}

// TestGaudi3NoAllocs proves the Gaudi3 encoders do not allocate when the
// slice has room.
func TestGaudi3NoAllocs(t *testing.T) {
	buf := make([]byte, 0, 4096)
	for _, f := range []Format{Gaudi3, Gaudi3PQM} {
		for _, p := range samples3(f) {
			if n := testing.AllocsPerRun(100, func() { _, _ = p.Append(f, buf[:0]) }); n != 0 {
				t.Errorf("%v %v.Append: %v allocations", f, p.Opcode(), n)
			}
		}
	}
	b := NewBuilder(Gaudi3PQM, buf)
	n := testing.AllocsPerRun(100, func() {
		b.Reset(buf[:0])
		b.LinPDMA(LinPDMA{Src: 0xff70_0000_0000_1000, Dst: 0x0201_0000_0000_0000, Size: 1 << 20, HostToDevice: true,
			WriteCompletion: true, CompletionAddr: 0x0300_007f_fc00_0000, CompletionData: 1})
		b.ChWReg32(ChWReg32{Offset: 0x10, Value: 1})
		b.Gaudi3Fence(Gaudi3Fence{ID: 1, Target: 1, Dec: 1})
	})
	if n != 0 || b.Err() != nil {
		t.Errorf("Builder: %v allocations, %v", n, b.Err())
	}
}

// BenchmarkAppendLinPDMA encodes one LIN_PDMA with a completion write, the
// packet a PQM copy is made of, into a slice with room.
func BenchmarkAppendLinPDMA(b *testing.B) {
	buf := make([]byte, 0, 64)
	p := LinPDMA{Src: 0xff70_0000_0000_1000, Dst: 0x0201_0000_0000_0000, Size: 1 << 20, HostToDevice: true,
		WriteCompletion: true, CompletionAddr: 0x0300_007f_fc00_0000, CompletionData: 1}
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = p.Append(Gaudi3PQM, buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}
