package sim

import (
	"sync"
	"time"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The CS types that control the device instead of submitting work
// (common/command_submission.c: cs_ioctl_engine_cores, cs_ioctl_engines,
// cs_ioctl_flush_pci_hbw_writes; gaudi2/gaudi2.c: gaudi2_set_engine_cores,
// gaudi2_set_engines). Only Gaudi2 supports engine modes
// (supports_engine_modes); Gaudi answers EPERM. Both ASICs have an HBW
// flush register, so FLUSH_PCI_HBW_WRITES succeeds on both.
//
// The simulator records the state the commands leave (Device.EngineCoreHalted,
// Device.EngineStalled) until the next hard reset or, on Gaudi2, the end of
// the compute context, whose engine reset runs the cores and resumes the
// engines again. Every ARC core is taken as enabled. A halted core does not
// stop the simulated queues: the simulator runs the driver's legacy
// (non-ARC) mode, where the queue managers, not the ARC cores, fetch the
// work. A stalled EDMA engine does: its four queues start no further job
// until it is resumed (or a reset halts them; a long stall meets the TDR
// as on hardware). The simulator has no TPC or MME engines to stall; their
// queues run on.

// gaudi2CPUIDMax is CPU_ID_MAX (gaudi2_arc_common_packets.h): num_engine_cores.
const gaudi2CPUIDMax = 69

// gaudi2EngineStallable reports whether the driver's set_engine_modes
// knows engine id: the EDMA, MME and TPC 0-5 engines of the four dcores
// (11 ids per dcore: EDMA 0-1, MME, TPC 0-5, DEC 0-1). TPC 6 of dcore 0,
// the decoders and every other engine are invalid.
func gaudi2EngineStallable(id uint32) bool {
	return id < 44 && id%11 <= 8
}

// engineModes is the run state of a device's ARC cores and engines.
type engineModes struct {
	mu      sync.Mutex
	epoch   uint64    // the reset epoch the state belongs to
	halted  [2]uint64 // ARC cores halted, one bit per CPU_ID_*
	stalled uint64    // engines stalled, one bit per GAUDI2_*_ENGINE_ID_*
	flushes uint64    // FLUSH_PCI_HBW_WRITES requests served
}

// resetEpoch counts the engine resets of the device: hard resets, and the
// compute resets of Gaudi2's context release.
func (d *Device) resetEpoch() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return uint64(d.hardResets)<<32 | uint64(d.releaseResets)
}

// modesLocked returns the engine state, cleared when the engines were
// reset since it was last written. d.engines.mu is held.
func (d *Device) modesLocked() *engineModes {
	m := &d.engines
	if e := d.resetEpoch(); e != m.epoch {
		m.epoch, m.halted, m.stalled = e, [2]uint64{}, 0
	}
	return m
}

// engineCores is cs_ioctl_engine_cores with gaudi2_set_engine_cores.
func (c *csCtx) engineCores(ptr uint64, n, cmd uint32) error {
	if !c.dev.prof.dramVirtual {
		return unix.EPERM // supports_engine_modes
	}
	if n == 0 || n > gaudi2CPUIDMax {
		return unix.EINVAL
	}
	if cmd != uint32(hl.HL_ENGINE_CORE_RUN) && cmd != uint32(hl.HL_ENGINE_CORE_HALT) {
		return unix.EINVAL
	}
	ids := make([]uint32, n)
	if err := c.f.copyIn(ptr, sliceBytes(ids)); err != nil {
		return unix.EFAULT
	}
	c.dev.setCores(ids, cmd == uint32(hl.HL_ENGINE_CORE_HALT))
	return nil
}

// setCores halts or runs the ARC cores ids. Ids of cores that do not
// exist are skipped, as the driver skips cores that are not enabled.
func (d *Device) setCores(ids []uint32, halt bool) {
	d.engines.mu.Lock()
	defer d.engines.mu.Unlock()
	m := d.modesLocked()
	for _, id := range ids {
		if id >= gaudi2CPUIDMax {
			continue
		}
		if halt {
			m.halted[id/64] |= 1 << (id % 64)
		} else {
			m.halted[id/64] &^= 1 << (id % 64)
		}
	}
}

// engines is cs_ioctl_engines with gaudi2_set_engines' engine checks.
func (c *csCtx) engines(ptr uint64, n, cmd uint32) error {
	if !c.dev.prof.dramVirtual {
		return unix.EPERM
	}
	if cmd >= uint32(hl.HL_ENGINE_COMMAND_MAX) {
		return unix.EINVAL
	}
	limit := uint32(hl.GAUDI2_ENGINE_ID_SIZE)
	if cmd == uint32(hl.HL_ENGINE_CORE_RUN) || cmd == uint32(hl.HL_ENGINE_CORE_HALT) {
		limit = gaudi2CPUIDMax
	}
	if n == 0 || n > limit {
		return unix.EINVAL
	}
	ids := make([]uint32, n)
	if err := c.f.copyIn(ptr, sliceBytes(ids)); err != nil {
		return unix.EFAULT
	}
	switch cmd {
	case uint32(hl.HL_ENGINE_CORE_HALT), uint32(hl.HL_ENGINE_CORE_RUN):
		c.dev.setCores(ids, cmd == uint32(hl.HL_ENGINE_CORE_HALT))
		return nil
	case uint32(hl.HL_ENGINE_STALL), uint32(hl.HL_ENGINE_RESUME):
		return c.dev.setEngines(ids, cmd == uint32(hl.HL_ENGINE_STALL))
	}
	return unix.EINVAL
}

// setEngines stalls or resumes engines in order, as set_engine_modes
// does: an invalid id ends the command with EINVAL, and the engines before
// it keep their new state.
func (d *Device) setEngines(ids []uint32, stall bool) error {
	d.engines.mu.Lock()
	defer d.engines.mu.Unlock()
	m := d.modesLocked()
	for _, id := range ids {
		if !gaudi2EngineStallable(id) {
			return unix.EINVAL
		}
		if stall {
			m.stalled |= 1 << id
		} else {
			m.stalled &^= 1 << id
		}
	}
	return nil
}

// flushHBW is cs_ioctl_flush_pci_hbw_writes: a read of the ASIC's HBW
// flush register, which both ASICs have. Posted writes do not exist in the
// simulator; the request is counted.
func (c *csCtx) flushHBW() error {
	c.dev.engines.mu.Lock()
	c.dev.engines.flushes++
	c.dev.engines.mu.Unlock()
	return nil
}

// EngineCoreHalted reports whether ARC core id (a CPU_ID_* value of
// gaudi2_arc_common_packets.h) is halted by ENGINE_CORE_COMMAND or
// ENGINES_COMMAND.
func (d *Device) EngineCoreHalted(id uint32) bool {
	if id >= gaudi2CPUIDMax {
		return false
	}
	d.engines.mu.Lock()
	defer d.engines.mu.Unlock()
	return d.modesLocked().halted[id/64]&(1<<(id%64)) != 0
}

// EngineStalled reports whether engine id (hl.GAUDI2_*_ENGINE_ID_*) is
// stalled by ENGINES_COMMAND.
func (d *Device) EngineStalled(id uint32) bool {
	if id >= 64 {
		return false
	}
	d.engines.mu.Lock()
	defer d.engines.mu.Unlock()
	return d.modesLocked().stalled&(1<<id) != 0
}

// HBWFlushes returns how many FLUSH_PCI_HBW_WRITES requests the device
// served.
func (d *Device) HBWFlushes() uint64 {
	d.engines.mu.Lock()
	defer d.engines.mu.Unlock()
	return d.engines.flushes
}

// gaudi2EDMAQueues maps the first queue of each Gaudi2 EDMA queue manager
// (four streams each) to the engine that executes it.
var gaudi2EDMAQueues = [...]struct {
	q0     hl.Gaudi2QueueID
	engine hl.Gaudi2EngineID
}{
	{hl.GAUDI2_QUEUE_ID_DCORE0_EDMA_0_0, hl.GAUDI2_DCORE0_ENGINE_ID_EDMA_0},
	{hl.GAUDI2_QUEUE_ID_DCORE0_EDMA_1_0, hl.GAUDI2_DCORE0_ENGINE_ID_EDMA_1},
	{hl.GAUDI2_QUEUE_ID_DCORE1_EDMA_0_0, hl.GAUDI2_DCORE1_ENGINE_ID_EDMA_0},
	{hl.GAUDI2_QUEUE_ID_DCORE1_EDMA_1_0, hl.GAUDI2_DCORE1_ENGINE_ID_EDMA_1},
	{hl.GAUDI2_QUEUE_ID_DCORE2_EDMA_0_0, hl.GAUDI2_DCORE2_ENGINE_ID_EDMA_0},
	{hl.GAUDI2_QUEUE_ID_DCORE2_EDMA_1_0, hl.GAUDI2_DCORE2_ENGINE_ID_EDMA_1},
	{hl.GAUDI2_QUEUE_ID_DCORE3_EDMA_0_0, hl.GAUDI2_DCORE3_ENGINE_ID_EDMA_0},
	{hl.GAUDI2_QUEUE_ID_DCORE3_EDMA_1_0, hl.GAUDI2_DCORE3_ENGINE_ID_EDMA_1},
}

// gaudi2EDMAEngine returns the EDMA engine id of Gaudi2 queue q, or -1
// when an EDMA does not execute it.
func gaudi2EDMAEngine(q int) int {
	for _, e := range gaudi2EDMAQueues {
		if q >= int(e.q0) && q < int(e.q0)+4 {
			return int(e.engine)
		}
	}
	return -1
}

// stallPoll is how often a queue of a stalled engine looks again.
const stallPoll = 200 * time.Microsecond

// waitEngine blocks while the engine that executes the queue is stalled,
// as a stalled EDMA takes no more work. It reports false when the stream
// halted (a reset) meanwhile. Stalls are rare and short, so it polls
// rather than tie the queues to the engine state's lock.
func (q *hwQueue) waitEngine() bool {
	if q.engine < 0 {
		return true
	}
	d := q.hw.d
	for d.EngineStalled(uint32(q.engine)) {
		if q.halted.Load() {
			return false
		}
		time.Sleep(stallPoll)
	}
	return !q.halted.Load()
}
