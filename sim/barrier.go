package sim

import (
	"github.com/gaudi-go/gaudi/packet"
)

// The engine barrier.
//
// A DMA engine runs the LIN_DMA packets of a queue one after the other,
// but a packet whose engine barrier bit (EB, ctl bit 29) is clear may start
// before the engine finished the packets before it: its reads and writes
// race with theirs. Habana's throughput paths clear EB on their transfers
// (hl-thunk's DMA tests set it only on a packet that must see an earlier
// one's writes), and a packet with EB set waits until the engine is idle.
//
// The simulator executes packets in order, which would make a missing
// barrier harmless. It models the race instead: a LIN_DMA without EB whose
// source or destination overlaps what an earlier packet of the same job
// writes, or whose destination overlaps what an earlier one reads, since
// the last packet with EB, is a hazard. Its destination receives
// hazardFill rather than the data, as a race on the chip might leave it,
// and the device counts the hazard (Device.BarrierHazards), so a test that
// verifies its bytes fails and can name the cause.

// hazardFill is the byte a hazardous LIN_DMA writes.
const hazardFill = 0xeb

// span2 is a range of addresses [lo, hi).
type span2 struct{ lo, hi uint64 }

func (s span2) overlaps(t span2) bool { return s.lo < t.hi && t.lo < s.hi }

// inflight is what the LIN_DMA packets since the last engine barrier of a
// job read and write.
type inflight struct {
	reads, writes []span2
}

func (f *inflight) reset() {
	f.reads, f.writes = f.reads[:0], f.writes[:0]
}

// admit records p and reports whether it races with the packets before
// it.
func (f *inflight) admit(p packet.LinDMA) (hazard bool) {
	if p.EngineBarrier {
		f.reset()
	}
	if p.Size == 0 {
		return false
	}
	dst := span2{p.Dst, p.Dst + uint64(p.Size)}
	for _, w := range f.writes {
		if w.overlaps(dst) {
			hazard = true
		}
	}
	for _, r := range f.reads {
		if r.overlaps(dst) {
			hazard = true
		}
	}
	if !p.Memset {
		src := span2{p.Src, p.Src + uint64(p.Size)}
		for _, w := range f.writes {
			if w.overlaps(src) {
				hazard = true
			}
		}
		f.reads = append(f.reads, src)
	}
	f.writes = append(f.writes, dst)
	return hazard
}

// BarrierHazards returns how many LIN_DMA packets raced with an earlier
// packet of their job because their engine barrier bit was clear.
func (d *Device) BarrierHazards() uint64 { return d.hazards.Load() }
