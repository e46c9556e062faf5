package packet

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// raw builds a packet from its 32-bit words, little endian.
func raw(words ...uint32) []byte {
	var b []byte
	for _, w := range words {
		b = le.AppendUint32(b, w)
	}
	return b
}

func ctlOf(op Opcode) uint32 { return uint32(op) << 24 }

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name   string
		f      Format
		b      []byte
		want   error
		op     Opcode
		reason string
		n      int // length returned with ErrReservedBits
	}{
		{"empty", Gaudi, nil, ErrTruncated, 0, "0 bytes left, a packet header needs 8", 0},
		{"short header", Gaudi2, raw(0), ErrTruncated, 0, "4 bytes left", 0},
		{"opcode 0", Gaudi, raw(0, 0), ErrUnknownOpcode, 0, "not a gaudi opcode", 0},
		{"CB_LIST on gaudi", Gaudi, raw(0, ctlOf(OpCBList), 0, 0, 0, 0), ErrUnknownOpcode, OpCBList, "not a gaudi opcode", 0},
		{"0x10 on gaudi", Gaudi, raw(0, ctlOf(0x10)), ErrUnknownOpcode, 0x10, "not a gaudi opcode", 0},
		{"0x1f on gaudi2", Gaudi2, raw(0, ctlOf(0x1f)), ErrUnknownOpcode, 0x1f, "not a gaudi2 opcode", 0},
		{"WRITE_ARC_STREAM", Gaudi2, raw(0, ctlOf(OpWriteArcStream)), ErrUnsupportedOpcode, OpWriteArcStream, "no layout", 0},
		{"LAST_READ_FROM_ARC", Gaudi2, raw(0, ctlOf(OpLastReadFromArc)), ErrUnsupportedOpcode, OpLastReadFromArc, "no layout", 0},
		{"WREG_64_SHORT", Gaudi2, raw(0, ctlOf(OpWReg64Short)), ErrUnsupportedOpcode, OpWReg64Short, "no layout", 0},
		{"WREG_64_LONG", Gaudi2, raw(0, ctlOf(OpWReg64Long), 0, 0), ErrUnsupportedOpcode, OpWReg64Long, "no layout", 0},
		{"LIN_DMA cut", Gaudi2, raw(0, ctlOf(OpLinDMA), 0, 0), ErrTruncated, OpLinDMA, "24-byte packet, 16 bytes left", 0},
		{"MSG_LONG cut", Gaudi, raw(0, ctlOf(OpMsgLong), 0), ErrTruncated, OpMsgLong, "16-byte packet, 12 bytes left", 0},
		{"WREG_BULK past the end", Gaudi, raw(3, ctlOf(OpWRegBulk), 1, 2, 3, 4, 5), ErrTruncated, OpWRegBulk, "32-byte packet, 28 bytes left", 0},
		{"WREG_BULK huge", Gaudi2, raw(0xffff, ctlOf(OpWRegBulk)), ErrTruncated, OpWRegBulk, "524288-byte packet, 8 bytes left", 0},
		{"NOP reserved word", Gaudi, raw(1, ctlOf(OpNop)), ErrReservedBits, OpNop, "reserved bits 0x1 set in reserved word", 8},
		{"NOP ctl", Gaudi2, raw(0, ctlOf(OpNop)|0x100), ErrReservedBits, OpNop, "reserved bits 0x100 set in ctl", 8},
		{"STOP ctl", Gaudi, raw(0, ctlOf(OpStop)|1), ErrReservedBits, OpStop, "set in ctl", 8},
		{"gaudi LIN_DMA without lin", Gaudi, raw(0, ctlOf(OpLinDMA), 0, 0, 0, 0), ErrReservedBits, OpLinDMA, "lin bit", 24},
		{"gaudi LIN_DMA bit 7", Gaudi, raw(0, ctlOf(OpLinDMA)|0x88, 0, 0, 0, 0), ErrReservedBits, OpLinDMA, "0x80 set in ctl", 24},
		{"gaudi2 LIN_DMA bit 3", Gaudi2, raw(0, ctlOf(OpLinDMA)|0x8, 0, 0, 0, 0), ErrReservedBits, OpLinDMA, "0x8 set in ctl", 24},
		{"gaudi2 LIN_DMA bit 5", Gaudi2, raw(0, ctlOf(OpLinDMA)|0x20, 0, 0, 0, 0), ErrReservedBits, OpLinDMA, "0x20 set in ctl", 24},
		{"MSG_LONG bit 5", Gaudi, raw(0, ctlOf(OpMsgLong)|0x20, 0, 0), ErrReservedBits, OpMsgLong, "0x20 set in ctl", 16},
		{"gaudi MSG_SHORT dw", Gaudi, raw(0, ctlOf(OpMsgShort)|1<<18), ErrReservedBits, OpMsgShort, "0x40000 set in ctl", 8},
		{"gaudi2 MSG_SHORT bit 19", Gaudi2, raw(0, ctlOf(OpMsgShort)|1<<19), ErrReservedBits, OpMsgShort, "0x80000 set in ctl", 8},
		{"FENCE cfg", Gaudi, raw(0x10, ctlOf(OpFence)), ErrReservedBits, OpFence, "0x10 set in cfg", 8},
		{"WAIT cfg", Gaudi2, raw(1<<30, ctlOf(OpWait)), ErrReservedBits, OpWait, "0x40000000 set in cfg", 8},
		{"WAIT ctl", Gaudi2, raw(0, ctlOf(OpWait)|1), ErrReservedBits, OpWait, "0x1 set in ctl", 8},
		{"REPEAT cfg", Gaudi, raw(4, ctlOf(OpRepeat)), ErrReservedBits, OpRepeat, "0x4 set in cfg", 8},
		{"gaudi ARB_POINT priority", Gaudi, raw(0x100, ctlOf(OpArbPoint)), ErrReservedBits, OpArbPoint, "0x100 set in cfg", 8},
		{"gaudi WREG_32 reg", Gaudi, raw(0, ctlOf(OpWReg32)|0x20), ErrReservedBits, OpWReg32, "0x20 set in ctl", 8},
		{"WREG_BULK size64 high", Gaudi, raw(0x10000, ctlOf(OpWRegBulk)), ErrReservedBits, OpWRegBulk, "0x10000 set in size64", 8},
		{"gaudi LOAD_AND_EXE pmap", Gaudi, raw(2, ctlOf(OpLoadAndExe), 0, 0), ErrReservedBits, OpLoadAndExe, "0x2 set in cfg", 16},
		{"gaudi CP_DMA upper", Gaudi, raw(0, ctlOf(OpCPDMA)|0x20, 0, 0), ErrReservedBits, OpCPDMA, "0x20 set in ctl", 16},
		{"CB_LIST reserved", Gaudi2, raw(1, ctlOf(OpCBList), 0, 0, 0, 0), ErrReservedBits, OpCBList, "set in reserved word", 24},
		{"invalid format", 0, raw(0, ctlOf(OpNop)), ErrNotInFormat, 0, "invalid format", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, n, err := tt.f.Decode(tt.b)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err %T is not a *DecodeError", err)
			}
			if de.Opcode != tt.op || de.Offset != 0 || !strings.Contains(de.Reason, tt.reason) {
				t.Errorf("error %+v, want opcode %v and reason %q", de, tt.op, tt.reason)
			}
			if n != tt.n {
				t.Errorf("n = %d, want %d", n, tt.n)
			}
			if (p != nil) != (tt.n != 0) {
				t.Errorf("packet %v returned with %v", p, err)
			}
			if p != nil {
				// Re-encoding clears what the fields cannot hold.
				b, err := p.Append(tt.f, nil)
				if err != nil {
					t.Fatal(err)
				}
				if q, m, err := tt.f.Decode(b); err != nil || m != n || !reflect.DeepEqual(q, p) {
					t.Errorf("re-encoded %x decodes to %v, %d, %v", b, q, m, err)
				}
			}
		})
	}
}

func TestDecodeErrorMessage(t *testing.T) {
	cb := append(raw(0, ctlOf(OpNop)), raw(0, ctlOf(OpLinDMA), 0, 0)...)
	err := Gaudi2.Walk(cb, func(int, Packet) error { return nil })
	want := "packet: gaudi2: offset 8: LIN_DMA (0x09): truncated packet: 24-byte packet, 16 bytes left"
	if err == nil || err.Error() != want {
		t.Errorf("Walk error %q, want %q", err, want)
	}
	err = Gaudi.Walk(append(raw(0, ctlOf(OpNop)), 1, 2, 3), func(int, Packet) error { return nil })
	want = "packet: gaudi: offset 8: truncated packet: 3 bytes left, a packet header needs 8"
	if err == nil || err.Error() != want {
		t.Errorf("Walk error %q, want %q", err, want)
	}
}

func TestWalk(t *testing.T) {
	b := NewBuilder(Gaudi, nil)
	b.LinDMA(LinDMA{Src: 1, Dst: 2, Size: 3})
	b.WReg32(WReg32{Offset: 4, Value: 5})
	b.Fence(Gaudi.FenceWait())
	cb := b.Bytes()
	var offs []int
	var ops []Opcode
	if err := Gaudi.Walk(cb, func(off int, p Packet) error {
		offs = append(offs, off)
		ops = append(ops, p.Opcode())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(offs, ops) != "[0 24 32] [LIN_DMA WREG_32 FENCE]" {
		t.Errorf("walked %v %v", offs, ops)
	}
	stop := errors.New("stop")
	calls := 0
	if err := Gaudi.Walk(cb, func(int, Packet) error { calls++; return stop }); err != stop || calls != 1 {
		t.Errorf("fn error: %v after %d calls", err, calls)
	}
	// A reserved bit stops Walk with the packet's offset.
	bad := append(append([]byte{}, cb...), raw(1, ctlOf(OpNop))...)
	err := Gaudi.Walk(bad, func(int, Packet) error { return nil })
	var de *DecodeError
	if !errors.As(err, &de) || de.Offset != 40 || !errors.Is(err, ErrReservedBits) {
		t.Errorf("Walk error %v", err)
	}
	if err := Gaudi.Walk(nil, func(int, Packet) error { return stop }); err != nil {
		t.Errorf("empty buffer: %v", err)
	}
}

func TestValidateUser(t *testing.T) {
	lin := LinDMA{Src: 1, Dst: 2, Size: 3}
	enc := func(f Format, ps ...Packet) []byte {
		var b []byte
		for _, p := range ps {
			var err error
			if b, err = p.Append(f, b); err != nil {
				t.Fatal(err)
			}
		}
		return b
	}
	tests := []struct {
		name string
		cb   []byte
		want error
		off  int
	}{
		{"allowed", enc(Gaudi, lin, WReg32{}, MsgLong{}, MsgShort{}, Repeat{}, Fence{}, Nop{}, ArbPoint{}, LoadAndExe{Exe: true}, Wait{}), nil, 0},
		{"MSG_PROT", enc(Gaudi, lin, MsgProt{}), ErrPrivileged, 24},
		{"CP_DMA", enc(Gaudi, CPDMA{}), ErrPrivileged, 0},
		{"STOP", enc(Gaudi, Nop{}, Stop{}), ErrPrivileged, 8},
		{"WREG_BULK", enc(Gaudi, WRegBulk{Values: []uint64{1}}), ErrPrivileged, 0},
		// The driver sizes WREG_BULK as 8 bytes, so missing values give
		// -EPERM, not -EINVAL.
		{"WREG_BULK cut", raw(4, ctlOf(OpWRegBulk)), ErrPrivileged, 0},
		{"LOAD_AND_EXE dst", enc(Gaudi, LoadAndExe{Dst: true}), ErrPrivileged, 0},
		{"unknown", raw(0, ctlOf(OpCBList), 0, 0, 0, 0), ErrUnknownOpcode, 0},
		{"cut", enc(Gaudi, lin)[:20], ErrTruncated, 0},
		{"tail", append(enc(Gaudi, Nop{}), 0, 0), ErrTruncated, 8},
		// Reserved bits are not the driver's concern.
		{"reserved", raw(7, ctlOf(OpNop)|0xff), nil, 0},
	}
	for _, tt := range tests {
		err := Gaudi.ValidateUser(tt.cb)
		if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
			continue
		}
		var de *DecodeError
		if err != nil && (!errors.As(err, &de) || de.Offset != tt.off) {
			t.Errorf("%s: error %v, want offset %d", tt.name, err, tt.off)
		}
	}
	if err := Gaudi2.ValidateUser(raw(0, ctlOf(0x1f))); err != nil {
		t.Errorf("gaudi2: %v", err)
	}
	if err := Format(0).ValidateUser(nil); !errors.Is(err, ErrNotInFormat) {
		t.Errorf("invalid format: %v", err)
	}
}

func TestStrings(t *testing.T) {
	tests := []struct {
		p    Packet
		want string
	}{
		{LinDMA{Src: 0x1000, Dst: 0x2000, Size: 4096, WriteCompletion: true, Header: Header{MsgBarrier: true}},
			"LIN_DMA{Src:0x1000 Dst:0x2000 Size:4096 WriteCompletion MB}"},
		{LinDMA{Memset: true, Src: 0xff, Endian: 1, ContextID: 7}, "LIN_DMA{Src:0xff Dst:0x0 Size:0 Memset ContextID:7 Endian:1}"},
		{MsgShort{Base: 1, Offset: 0x40, Value: 0x80000001, Header: Header{EngineBarrier: true, RegBarrier: true}},
			"MSG_SHORT{Base:1 Offset:0x40 Value:0x80000001 EB RB}"},
		{MsgLong{Addr: 0x10, Value: 1, Op: MsgWriteTimestamp}, "MSG_LONG{Addr:0x10 Value:0x1 Op:1}"},
		{MsgProt{Addr: 0x10, Value: 1}, "MSG_PROT{Addr:0x10 Value:0x1}"},
		{Fence{ID: 2, Target: 1, Dec: 1}, "FENCE{ID:2 Target:1 Dec:1}"},
		{Wait{Cycles: 5, Inc: 1, ID: 3}, "WAIT{Cycles:5 Inc:1 ID:3}"},
		{Nop{}, "NOP{}"},
		{Stop{Header: Header{MsgBarrier: true}}, "STOP{MB}"},
		{Repeat{JumpPtr: 0x20, Outer: true}, "REPEAT{JumpPtr:0x20 Outer}"},
		{ArbPoint{Priority: 3, Release: true}, "ARB_POINT{Priority:3 Release}"},
		{WReg32{Offset: 0x44, Value: 9, Reg: true}, "WREG_32{Offset:0x44 Value:0x9 Reg}"},
		{WRegBulk{Offset: 0x44, Values: []uint64{1, 2}}, "WREG_BULK{Offset:0x44 Values:2}"},
		{LoadAndExe{Src: 0x8, Load: true, Exe: true}, "LOAD_AND_EXE{Src:0x8 Load Exe}"},
		{CPDMA{Src: 0x8, Size: 64, Pred: 2}, "CP_DMA{Src:0x8 Size:64 Pred:2}"},
		{CBList{IndexAddr: 1, TableAddr: 2, SizeDesc: true}, "CB_LIST{IndexAddr:0x1 TableAddr:0x2 SizeDesc}"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
	if Opcode(0x1f).String() != "OPCODE_0x1f" || OpWReg64Long.String() != "WREG_64_LONG" {
		t.Errorf("opcode names %v %v", Opcode(0x1f), OpWReg64Long)
	}
	if Gaudi.String() != "gaudi" || Gaudi2.String() != "gaudi2" || Format(7).String() != "format(7)" {
		t.Error("format names")
	}
}
