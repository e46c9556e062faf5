package sim

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gaudi-go/gaudi/packet"
)

// TestEngineBarrier checks the race model of barrier.go: a LIN_DMA that
// depends on an earlier one of the same job gets hazardFill unless its
// engine barrier bit is set; independent packets need no barrier.
func TestEngineBarrier(t *testing.T) {
	const n = 4096
	for _, asic := range []ASIC{Gaudi2, Gaudi} {
		_, _, f := openSim(t, asic)
		fm := f.dev.hardware().format()
		src, srcVA := hostMem(t, f, 4*n)
		dst, dstVA := hostMem(t, f, 4*n)
		dev := deviceBuf(t, f, 4*n)
		eb := packet.Header{EngineBarrier: true}
		tests := []struct {
			name    string
			packets func(second packet.Header) []packet.LinDMA
			hazard  bool // without the barrier on the second packet
		}{
			{"read after write", func(h packet.Header) []packet.LinDMA {
				return []packet.LinDMA{{Src: srcVA, Dst: dev, Size: n}, {Header: h, Src: dev, Dst: dstVA, Size: n}}
			}, true},
			{"read after write, partial overlap", func(h packet.Header) []packet.LinDMA {
				return []packet.LinDMA{{Src: srcVA, Dst: dev, Size: n}, {Header: h, Src: dev + n - 1, Dst: dstVA, Size: n}}
			}, true},
			{"write after read", func(h packet.Header) []packet.LinDMA {
				return []packet.LinDMA{{Src: dev, Dst: dstVA, Size: n}, {Header: h, Src: srcVA, Dst: dev, Size: n}}
			}, true},
			{"write after write", func(h packet.Header) []packet.LinDMA {
				return []packet.LinDMA{{Src: srcVA, Dst: dev, Size: n}, {Header: h, Memset: true, Src: 0x5a5a5a5a, Dst: dev, Size: n}}
			}, true},
			{"independent", func(h packet.Header) []packet.LinDMA {
				return []packet.LinDMA{{Src: srcVA, Dst: dev, Size: n}, {Header: h, Src: srcVA + n, Dst: dev + n, Size: n}}
			}, false},
			{"shared source", func(h packet.Header) []packet.LinDMA {
				return []packet.LinDMA{{Src: srcVA, Dst: dev, Size: n}, {Header: h, Src: srcVA, Dst: dev + n, Size: n}}
			}, false},
		}
		for _, tt := range tests {
			for _, barrier := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/%s/barrier=%v", asic, tt.name, barrier), func(t *testing.T) {
					fillRandom(src[:2*n], n)
					var h packet.Header
					if barrier {
						h = eb
					}
					ps := tt.packets(h)
					before := f.dev.BarrierHazards()
					mustComplete(t, f, runCB(t, f, 0, build(t, fm, func(b *packet.Builder) {
						for _, p := range ps {
							b.LinDMA(p)
						}
					}), 0, 0))
					got := f.dev.BarrierHazards() - before
					want := uint64(0)
					if tt.hazard && !barrier {
						want = 1
					}
					if got != want {
						t.Fatalf("%d hazards, want %d", got, want)
					}
					var kinds []ViolationKind
					for range want {
						kinds = append(kinds, ViolationBarrierHazard)
					}
					takeViolations(t, f.dev, kinds...)
					if tt.name == "read after write" {
						ok := bytes.Equal(dst[:n], src[:n])
						if ok == (want == 1) {
							t.Fatalf("bytes right = %v with %d hazards", ok, want)
						}
						if want == 1 && dst[0] != hazardFill {
							t.Fatalf("destination byte %#x, want the hazard fill %#x", dst[0], hazardFill)
						}
					}
				})
			}
		}
	}
}
