package dma

import (
	"context"
	"testing"

	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
)

// TestPooledTransferHoldsNoBuffer: a copy's own Transfer goes back to the
// Engine's pool with nothing in its state, so that the pool keeps none of
// the caller's buffers alive, while its inline store (jobs, chunks,
// command buffers: only the Engine's) is left as it was, for the next
// copy to overwrite rather than for this one to clear (issue 29).
func TestPooledTransferHoldsNoBuffer(t *testing.T) {
	for _, asic := range []sim.ASIC{sim.Gaudi2, sim.Gaudi3} {
		t.Run(asic.String(), func(t *testing.T) {
			r := newRig(t, asic, Options{})
			h, err := r.m.AllocHost(4096, memory.HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			d, err := r.m.Alloc(4096, memory.AllocOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var pooled *Transfer
			// A garbage collection between the copy and Get empties the
			// pool; copy again until Get finds the Transfer.
			for try := 0; pooled == nil; try++ {
				if try == 100 {
					t.Fatal("the pool never had the copy's Transfer")
				}
				if err := r.e.CopyToDevice(context.Background(), d.Range(0, 4096), h.Range(0, 4096)); err != nil {
					t.Fatal(err)
				}
				pooled, _ = r.e.transfers.Get().(*Transfer)
			}
			defer r.e.transfers.Put(pooled)
			st := &pooled.transferState
			if st.holdArr != [4]any{} || st.opArr != [1]op{} || st.holds != nil || st.batch.ops != nil || st.batch.e != nil || st.e != nil {
				t.Errorf("a pooled Transfer keeps state: holds %v, ops %v, Engine %p", st.holdArr, st.opArr, st.e)
			}
			if pooled.store.jobPtrs[0] == nil {
				t.Error("a pooled Transfer's inline store was cleared: every copy pays for clearing it")
			}
		})
	}
}
