package dma

import "github.com/gaudi-go/gaudi/packet"

// Engine barriers.
//
// A LIN_DMA packet whose engine barrier bit (EB) is set waits until the
// DMA engine finished every packet before it on the queue; one without it
// may start while they run, which is what keeps the engine busy. Habana's
// throughput paths leave EB clear, and set it only on a packet that must
// see an earlier one's writes. So does this package: within one command
// buffer, a packet gets EB when it reads or writes memory an earlier
// packet since the last barrier writes, or writes memory such a packet
// reads. The operations of a batch may run in any order (they are spread
// over queues), so this only guards the order a command buffer implies.
// The simulator models the race EB prevents (sim/barrier.go), so a missing
// barrier fails the tests that verify bytes.

// encoders are the Engine's LIN_DMA encoders: copy and fill, with and
// without the engine barrier.
type encoders struct {
	copy, copyEB, fill, fillEB packet.CopyEncoder
}

func newEncoders(f packet.Format) *encoders {
	hdr := packet.Header{MsgBarrier: true, RegBarrier: f == packet.Gaudi}
	eb := hdr
	eb.EngineBarrier = true
	return &encoders{
		copy:   packet.NewCopyEncoder(f, hdr, false, false),
		copyEB: packet.NewCopyEncoder(f, eb, false, false),
		fill:   packet.NewCopyEncoder(f, hdr, true, false),
		fillEB: packet.NewCopyEncoder(f, eb, true, false),
	}
}

// pick returns the encoder for a packet.
func (x *encoders) pick(memset, barrier bool) packet.CopyEncoder {
	switch {
	case memset && barrier:
		return x.fillEB
	case memset:
		return x.fill
	case barrier:
		return x.copyEB
	}
	return x.copy
}

// span is a range of device addresses [lo, hi).
type span struct{ lo, hi uint64 }

func (s span) overlaps(t span) bool { return s.lo < t.hi && t.lo < s.hi }

// maxTracked bounds the packets a command buffer tracks since its last
// barrier; the next one gets a barrier instead of a longer search.
const maxTracked = 32

// flight is what the packets of a command buffer since its last engine
// barrier read and write.
type flight struct {
	reads, writes []span
	// Inline storage for the first few, so that a job allocates nothing.
	readArr, writeArr [4]span
}

// init points the lists at the inline storage.
func (f *flight) init() {
	f.reads, f.writes = f.readArr[:0], f.writeArr[:0]
}

// admit records a packet and reports whether it needs the engine barrier.
func (f *flight) admit(memset bool, src, dst, n uint64) (barrier bool) {
	if n == 0 {
		return false
	}
	w := span{dst, dst + n}
	r := span{src, src + n}
	if len(f.writes) >= maxTracked {
		barrier = true
	}
	for _, x := range f.writes {
		if x.overlaps(w) || !memset && x.overlaps(r) {
			barrier = true
			break
		}
	}
	if !barrier {
		for _, x := range f.reads {
			if x.overlaps(w) {
				barrier = true
				break
			}
		}
	}
	if barrier {
		// It waits for everything before it: only it is in flight then.
		f.reads, f.writes = f.reads[:0], f.writes[:0]
	}
	if !memset {
		f.reads = append(f.reads, r)
	}
	f.writes = append(f.writes, w)
	return barrier
}
