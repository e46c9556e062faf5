package packet

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestDecodeLinDMAMatchesDecode checks DecodeLinDMA against Decode on
// random bytes: LIN_DMA packets with every control bit pattern (reserved
// bits and, on Gaudi, a clear lin bit included), other opcodes, short
// buffers and invalid formats.
func TestDecodeLinDMAMatchesDecode(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var b [40]byte
	for _, f := range []Format{Gaudi, Gaudi2, Format(0), Format(7)} {
		lin := 0
		for i := 0; i < 20000; i++ {
			for k := 0; k+8 <= len(b); k += 8 {
				binary.LittleEndian.PutUint64(b[k:], r.Uint64())
			}
			ctl := binary.LittleEndian.Uint32(b[4:])
			if r.IntN(4) != 0 { // mostly LIN_DMA
				ctl = ctl&^(0x1f<<24) | uint32(OpLinDMA)<<24
				binary.LittleEndian.PutUint32(b[4:], ctl)
			}
			n := len(b)
			if r.IntN(8) == 0 {
				n = r.IntN(len(b) + 1)
			}
			want, wantN, err := f.Decode(b[:n])
			wantP, isLin := want.(LinDMA)
			wantOK := isLin && (err == nil || errors.Is(err, ErrReservedBits))
			got, gotN, ok := f.DecodeLinDMA(b[:n])
			if ok != wantOK {
				t.Fatalf("%v % x: DecodeLinDMA ok %v, Decode %T %v", f, b[:n], ok, want, err)
			}
			if !ok {
				if got != (LinDMA{}) || gotN != 0 {
					t.Fatalf("%v % x: not ok but returned %+v, %d", f, b[:n], got, gotN)
				}
				continue
			}
			lin++
			if got != wantP || gotN != wantN {
				t.Fatalf("%v % x:\nDecodeLinDMA %+v, %d\nDecode       %+v, %d", f, b[:n], got, gotN, wantP, wantN)
			}
		}
		if f.valid() && lin < 10000 {
			t.Errorf("%v: only %d LIN_DMA packets compared", f, lin)
		}
	}
}

// TestDecodeLinDMAEncoded decodes what Append and CopyEncoder write.
func TestDecodeLinDMAEncoded(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, f := range []Format{Gaudi, Gaudi2} {
		for i := 0; i < 2000; i++ {
			p := LinDMA{
				Header: Header{EngineBarrier: r.IntN(2) == 0, RegBarrier: r.IntN(2) == 0, MsgBarrier: r.IntN(2) == 0},
				Src:    r.Uint64(), Dst: r.Uint64(), Size: r.Uint32(),
				WriteCompletion: r.IntN(2) == 0, Memset: r.IntN(2) == 0, ContextID: uint16(r.Uint32()),
			}
			if f == Gaudi {
				p.Dst &= 1<<56 - 1
				p.Transpose, p.DType, p.Compress, p.Decompress = r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(2) == 0
			} else {
				p.Endian, p.BF16, p.FP16 = uint8(r.IntN(4)), r.IntN(2) == 0, r.IntN(2) == 0
			}
			b, err := p.Append(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, 0xAA) // a following byte changes nothing
			if got, n, ok := f.DecodeLinDMA(b); !ok || n != 24 || got != p {
				t.Fatalf("%v: %+v decoded as %+v, %d, %v", f, p, got, n, ok)
			}
		}
	}
}

func TestDecodeLinDMAAllocs(t *testing.T) {
	b, _ := LinDMA{Src: 1, Dst: 2, Size: 3}.Append(Gaudi2, nil)
	var sink LinDMA
	if n := testing.AllocsPerRun(100, func() {
		p, _, _ := Gaudi2.DecodeLinDMA(b)
		sink = p
	}); n != 0 {
		t.Errorf("%v allocations per decode", n)
	}
	_ = sink
}

func BenchmarkDecodeLinDMA(b *testing.B) {
	pkt, _ := LinDMA{Src: 1, Dst: 2, Size: 3}.Append(Gaudi2, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := Gaudi2.DecodeLinDMA(pkt); !ok {
			b.Fatal("not decoded")
		}
	}
}
