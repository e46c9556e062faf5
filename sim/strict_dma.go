package sim

import (
	"fmt"
	"hash/maphash"
	"sync"
)

// Strict mode's checks of what the engines reach (strict.go).
//
// Memory unmapped under a CS in flight. The device reaches memory through
// its MMU when the packets run, not when the CS is submitted: a buffer
// unmapped (and freed) while a CS that uses it is queued or running makes
// the CS fault, or, when the address was mapped again meanwhile, read or
// write whatever took its place. In strict mode the device orders CS
// submissions, MAPs and UNMAPs on one clock; an UNMAP leaves a tombstone
// of the address range for the CSs in flight then. An access that faults
// inside a tombstone newer than its CS, or that reaches a mapping made
// after its CS was submitted inside such a tombstone, is recorded as
// ViolationFreedInFlight; any other fault as ViolationPageFault. The MMU
// page fault itself is recorded as before (RecordPageFault). On
// first-generation Gaudi device memory is not mapped (the driver only
// counts ALLOC and FREE), so a freed DRAM range is out of sight; so are
// Gaudi2 addresses of physical DRAM and of the command buffer pool (CBs
// mapped with HL_CB_FLAGS_MAP), and command buffers of CP_DMA packets,
// which are fetched when they run.
//
// Host memory replaced since MAP: see strict_host_unsafe.go. DMA that finds the
// host memory unmapped (hostfault.go) is recorded as ViolationHostReplaced,
// once per job.
//
// Command buffers changed in flight. A Gaudi2 CS (and a CS on a Gaudi
// internal queue) names its command buffers by device address; the engine
// fetches them while the CS runs, so rewriting one before the CS completed
// changes what runs. In strict mode each such command buffer is hashed
// when the CS is submitted, and again when its job starts and when it
// ends: a difference is recorded as ViolationCBChanged. The copies the
// driver makes of Gaudi's kernel CBs cannot change.
//
// Barrier hazards (barrier.go) are recorded as ViolationBarrierHazard.

// tombstone is an address range a context unmapped, for the CSs that were
// in flight then.
type tombstone struct {
	start, end uint64 // [start, end) device addresses
	at         uint64 // strictState.clock at the UNMAP
	what       string
}

// tombstones are a context's recent UNMAPs (context.gone).
type tombstones struct {
	mu   sync.Mutex
	list []tombstone
}

// oldestInFlight returns the submission time of the file's oldest CS in
// flight, or the clock's next value when none is.
func (f *File) oldestInFlight() uint64 {
	d := f.dev
	c := f.cs.p.Load()
	if c == nil {
		return d.strict.clock.Load() + 1
	}
	hw := c.hw
	hw.mu.Lock()
	defer hw.mu.Unlock()
	oldest := d.strict.clock.Load() + 1
	for _, s := range hw.mirror {
		if s.c == c && !s.completed {
			oldest = min(oldest, s.submitAt)
		}
	}
	return oldest
}

// bury adds a tombstone for [start, end), dropping those older than every
// CS in flight at oldest (which no CS can reach any more).
func (t *tombstones) bury(oldest uint64, ts tombstone) {
	t.mu.Lock()
	defer t.mu.Unlock()
	keep := t.list[:0]
	for _, x := range t.list {
		if x.at >= oldest {
			keep = append(keep, x)
		}
	}
	clear(t.list[len(keep):])
	t.list = append(keep, ts)
}

// find returns the newest tombstone holding addr that is newer than
// since.
func (t *tombstones) find(addr, since uint64) (tombstone, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.list) - 1; i >= 0; i-- {
		x := t.list[i]
		if x.at > since && addr >= x.start && addr < x.end {
			return x, true
		}
	}
	return tombstone{}, false
}

// strictUnmap leaves a tombstone for a mapping the context unmaps; oldest
// is File.oldestInFlight, taken before the context's lock.
func (c *context) strictUnmap(oldest uint64, m *mapping) {
	what := fmt.Sprintf("the host mapping of [%#x, +%#x) at %#x", m.hostAddr, m.hostSize, m.va)
	if !m.host {
		what = fmt.Sprintf("the mapping of device memory handle %d at %#x", m.pack.handle, m.va)
	}
	c.gone.bury(oldest, tombstone{
		start: m.vaStart, end: m.vaStart + m.size,
		at: c.dev.strict.clock.Add(1), what: what,
	})
}

// strictFault records the violation of an access at addr that no mapping
// covers, for the job's CS.
func (x *execEnv) strictFault(addr uint64) {
	s := x.cs
	if t, ok := x.ctx.gone.find(addr, s.submitAt); ok {
		x.violate(ViolationFreedInFlight, addr, fmt.Sprintf("CS %d on queue %d reached %#x after %s was unmapped, while the CS was in flight: the device page-faults (or, mapped again, uses what took its place)",
			s.seq, x.q.id, addr, t.what))
		return
	}
	x.violate(ViolationPageFault, addr, fmt.Sprintf("CS %d on queue %d reached %#x, which no mapping covers", s.seq, x.q.id, addr))
}

// strictNewer records the violation of an access at addr that reached a
// mapping made after the job's CS was submitted, where an older one was
// unmapped meanwhile.
func (x *execEnv) strictNewer(addr uint64) {
	s := x.cs
	if t, ok := x.ctx.gone.find(addr, s.submitAt); ok {
		x.violate(ViolationFreedInFlight, addr, fmt.Sprintf("CS %d on queue %d reached %#x after %s was unmapped and the address mapped again, while the CS was in flight: the data goes to the new mapping",
			s.seq, x.q.id, addr, t.what))
	}
}

// violate records a DMA violation of the job's CS.
func (x *execEnv) violate(k ViolationKind, addr uint64, detail string) {
	x.hw.d.violate(x.c.f.serial, Violation{Kind: k, Op: "DMA", Seq: x.cs.seq, Addr: addr, Detail: detail})
}

// strictHostGone records, once per job, that DMA found host memory the
// caller unmapped after MAP.
func (x *execEnv) strictHostGone(va, n uint64) {
	if x.cs == nil || x.goneSeen {
		return
	}
	x.goneSeen = true
	x.violate(ViolationHostReplaced, va, fmt.Sprintf("CS %d on queue %d reached host memory at device address %#x (%d bytes) that was unmapped since MAP: on hardware the device uses the pinned pages nobody sees any more",
		x.cs.seq, x.q.id, va, n))
}

// cbSeed keys the command buffer hashes.
var cbSeed = maphash.MakeSeed()

// hashCB hashes a user command buffer as the engine would fetch it now,
// without touching the fault counters; ok is false when it cannot be read
// (the job will fault on it).
func (c *csCtx) hashCB(addr, size uint64) (sum uint64, ok bool) {
	x := execEnv{hw: c.hw, c: c, ctx: c.f.ctx}
	var h maphash.Hash
	h.SetSeed(cbSeed)
	var win [16 << 10]byte
	for off := uint64(0); off < size; {
		b := win[:min(uint64(len(win)), size-off)]
		for done := uint64(0); done < uint64(len(b)); {
			var k uint64
			if err := x.guard(func() error { return x.loadOnce(addr+off+done, b[done:], &k) }); err != nil {
				return 0, false
			}
			done += k
		}
		h.Write(b)
		off += uint64(len(b))
	}
	return h.Sum64(), true
}

// strictHashCBs hashes the user command buffers of a CS being submitted.
func (c *csCtx) strictHashCBs(s *cs) {
	for _, j := range s.jobs {
		if !j.kernelCB {
			j.cbHash, j.cbHashed = c.hashCB(j.addr, j.size)
		}
	}
}

// strictCheckCB compares a job's command buffer with its hash at
// submission; when is "execution" or "completion".
func (x *execEnv) strictCheckCB(j *job, when string) {
	if !j.cbHashed {
		return
	}
	sum, ok := j.cs.c.hashCB(j.addr, j.size)
	if !ok || sum == j.cbHash {
		return
	}
	j.cbHashed = false // reported once
	x.violate(ViolationCBChanged, j.addr, fmt.Sprintf("the command buffer of CS %d job %d on queue %d (%d bytes at %#x) changed between the submission and the %s of the job: the engine runs what it fetches, not what was submitted",
		j.cs.seq, j.id, x.q.id, j.size, j.addr, when))
}

// strictHazard records a LIN_DMA that raced for want of an engine barrier.
func (x *execEnv) strictHazard(dst uint64) {
	if x.cs == nil {
		return
	}
	x.violate(ViolationBarrierHazard, dst, fmt.Sprintf("CS %d on queue %d: a LIN_DMA to %#x depends on an earlier packet of its command buffer without the engine barrier bit",
		x.cs.seq, x.q.id, dst))
}
