package packet

import "testing"

// BenchmarkAppendLinDMA encodes one LIN_DMA into a slice with room.
func BenchmarkAppendLinDMA(b *testing.B) {
	buf := make([]byte, 0, 64)
	p := LinDMA{Src: 0x7f00_0000_1000, Dst: 0x1000_0000_0000, Size: 1 << 20, WriteCompletion: true}
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = p.Append(Gaudi2, buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuilderCB builds the command buffer of a 1 GiB copy split in
// 64 LIN_DMA packets of 16 MiB, followed by a signal.
func BenchmarkBuilderCB(b *testing.B) {
	for _, f := range []Format{Gaudi, Gaudi2} {
		b.Run(f.String(), func(b *testing.B) {
			buf := make([]byte, 0, 64*24+8)
			bl := NewBuilder(f, buf)
			b.ReportAllocs()
			b.SetBytes(int64(cap(buf)))
			for b.Loop() {
				bl.Reset(buf[:0])
				for i := range uint64(64) {
					bl.LinDMA(LinDMA{Src: 0x7f00_0000_0000 + i<<24, Dst: 0x10_0000_0000 + i<<24, Size: 1 << 24})
				}
				bl.Signal(7, true)
				if bl.Err() != nil {
					b.Fatal(bl.Err())
				}
			}
		})
	}
}

// BenchmarkWalk decodes the same command buffer.
func BenchmarkWalk(b *testing.B) {
	bl := NewBuilder(Gaudi2, nil)
	for i := range uint64(64) {
		bl.LinDMA(LinDMA{Src: i << 24, Dst: 0x10_0000_0000 + i<<24, Size: 1 << 24})
	}
	bl.Signal(7, true)
	cb := bl.Bytes()
	b.ReportAllocs()
	b.SetBytes(int64(len(cb)))
	for b.Loop() {
		n := 0
		if err := Gaudi2.Walk(cb, func(int, Packet) error { n++; return nil }); err != nil || n != 65 {
			b.Fatal(err, n)
		}
	}
}

// BenchmarkValidateUser runs the Gaudi driver's user command buffer checks.
func BenchmarkValidateUser(b *testing.B) {
	bl := NewBuilder(Gaudi, nil)
	for i := range uint64(64) {
		bl.LinDMA(LinDMA{Src: i << 24, Dst: 0x10_0000_0000 + i<<24, Size: 1 << 24})
	}
	cb := bl.Bytes()
	b.ReportAllocs()
	b.SetBytes(int64(len(cb)))
	for b.Loop() {
		if err := Gaudi.ValidateUser(cb); err != nil {
			b.Fatal(err)
		}
	}
}
