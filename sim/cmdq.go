package sim

import "sync"

// The lower CP (CMDQ) of a QMAN, as far as its fences go. A QMAN has four
// upper CPs, the streams the driver's queues feed, and a lower CP that
// runs what they hand it with CP_DMA; its fence counters are
// CP_FENCE0..3_RDATA_4, next to the streams' RDATA_0..3, and hl-thunk's
// "common CP" tests fence there (cmdq_fence). The simulator runs a CP_DMA
// command buffer inline on the stream that issued it, so a FENCE inside
// one waits on the lower CP's counters, shared by the QMAN's four streams;
// writes to RDATA_4 add to them. A reset clears them.

// cmdqState is a QMAN's lower CP fence counters.
type cmdqState struct {
	mu    sync.Mutex
	cond  *sync.Cond
	fence [4]uint32
}

func newCmdq() *cmdqState {
	c := &cmdqState{}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// add adds v to counter id.
func (c *cmdqState) add(id uint8, v uint32) {
	c.mu.Lock()
	c.fence[id] += v
	c.cond.Broadcast()
	c.mu.Unlock()
}

// wait is FENCE on the lower CP for stream q: wait until counter id
// reaches target, then take dec; a halt of q ends it.
func (c *cmdqState) wait(q *hwQueue, id, target, dec uint8) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.fence[id] < uint32(target) {
		if q.halted.Load() {
			return errHalted
		}
		c.cond.Wait()
	}
	c.fence[id] -= uint32(dec)
	return nil
}

// wake wakes the waits, for a halt.
func (c *cmdqState) wake() {
	c.mu.Lock()
	c.cond.Broadcast()
	c.mu.Unlock()
}

// clear zeroes the counters, for a reset.
func (c *cmdqState) clear() {
	c.mu.Lock()
	c.fence = [4]uint32{}
	c.mu.Unlock()
}

// linkCmdqs gives the four streams of every QMAN their shared lower CP.
func (hw *hwState) linkCmdqs() {
	for _, s := range hw.qms {
		c := newCmdq()
		for _, i := range s {
			if i >= 0 {
				hw.queues[i].cmdq = c
			}
		}
	}
}
