package packet

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

func TestCopyEncoderMatchesAppend(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, f := range []Format{Gaudi, Gaudi2} {
		for i := 0; i < 2000; i++ {
			h := Header{EngineBarrier: r.IntN(2) == 0, RegBarrier: r.IntN(2) == 0, MsgBarrier: r.IntN(2) == 0}
			memset, wc := r.IntN(2) == 0, r.IntN(2) == 0
			src, dst, size := r.Uint64(), r.Uint64(), r.Uint32()
			if f == Gaudi {
				dst &= 1<<56 - 1
			}
			want, err := LinDMA{Header: h, Src: src, Dst: dst, Size: size, Memset: memset, WriteCompletion: wc}.Append(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := NewCopyEncoder(f, h, memset, wc).Append(make([]byte, 0, 24), src, dst, size)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%v: CopyEncoder %x (%v), Append %x", f, got, err, want)
			}
		}
	}
	b := make([]byte, 3, 64)
	out, err := NewCopyEncoder(Gaudi, Header{}, false, false).Append(b, 0, 1<<56, 1)
	if !errors.Is(err, ErrFieldRange) || len(out) != 3 {
		t.Errorf("57-bit Gaudi dst: %v, %d bytes", err, len(out))
	}
	full := make([]byte, 10, 33)
	if out, err := NewCopyEncoder(Gaudi2, Header{}, false, false).Append(full, 0, 0, 1); !errors.Is(err, ErrNoRoom) || len(out) != 10 || cap(out) != 33 {
		t.Errorf("full buffer: %v, len %d cap %d", err, len(out), cap(out))
	}
	buf := make([]byte, 0, 24*64)
	e := NewCopyEncoder(Gaudi2, Header{EngineBarrier: true}, false, false)
	if n := testing.AllocsPerRun(100, func() {
		buf = buf[:0]
		for i := 0; i < 64; i++ {
			buf, _ = e.Append(buf, 1, 2, 3)
		}
	}); n != 0 {
		t.Errorf("%v allocations per run", n)
	}
}

func BenchmarkCopyEncoder(b *testing.B) {
	e := NewCopyEncoder(Gaudi2, Header{EngineBarrier: true, MsgBarrier: true}, false, false)
	buf := make([]byte, 0, 24*1024)
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		if len(buf) == cap(buf) {
			buf = buf[:0]
		}
		buf, _ = e.Append(buf, i, i+4096, 4096)
		i++
	}
}

// BenchmarkCopyEncoderBatch encodes 1024 packets per iteration, as the dma
// package fills a command buffer, and reports the cost per packet.
func BenchmarkCopyEncoderBatch(b *testing.B) {
	e := NewCopyEncoder(Gaudi2, Header{EngineBarrier: true, MsgBarrier: true}, false, false)
	buf := make([]byte, 0, 24*1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = buf[:0]
		for i := uint64(0); i < 1024; i++ {
			buf, _ = e.Append(buf, i, i+4096, 4096)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1024, "ns/packet")
}
