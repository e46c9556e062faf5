package stream_test

import (
	"errors"
	"math/bits"
	"sync"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/stream"
	"golang.org/x/sys/unix"
)

// multiCS submits hl-thunk's 32 CSs of test_wait_for_multi_cs_common on
// the down queue: CS0 fences on SOB0 (or on nothing, for the poll mode),
// the others on SOB1.
func multiCS(t *testing.T, r *rig, fenceFirst bool) (seqs []uint64, sob0, sob1 uint16) {
	u := r.firstSOB(t)
	sob0, sob1 = u.sob, u.sob+1
	r.wait(t, r.run(t, r.plus(r.down(), 1), r.build(t, func(b *packet.Builder) {
		r.sobWrite(t, b, sob0, 0, false, false)
		r.sobWrite(t, b, sob1, 0, false, false)
	})))
	for i := 0; i < stream.MaxMulti; i++ {
		sob := sob1
		if i == 0 {
			sob = sob0
		}
		var cb []byte
		if i == 0 && !fenceFirst {
			cb = r.build(t, func(b *packet.Builder) { b.Nop(packet.Nop{}) })
		} else {
			cb = r.monitorFence(t, r.down(), userSync{sob: sob}, u.mon+uint16(i), 1, func(b *packet.Builder) { b.Nop(packet.Nop{}) })
		}
		seqs = append(seqs, r.runOpts(t, r.down(), cb, stream.SubmitOptions{Timeout: 30 * time.Second, Timestamp: true}))
	}
	return seqs, sob0, sob1
}

// TestWaitForMultiCSComplete is test_wait_for_multi_cs_complete (Gaudi):
// a multi-CS wait on the 32 CSs sleeps until another queue releases CS0,
// and reports CS0 alone.
func TestWaitForMultiCSComplete(t *testing.T) {
	r := newRig(t, sim.Gaudi)
	seqs, sob0, sob1 := multiCS(t, r, true)
	if res, err := r.s.PollMulti(ctxT(t), seqs); err != nil || res.Completed != 0 {
		t.Fatalf("poll before anything ran: %+v, %v", res, err)
	}
	release := r.setSOB(t, sob0, 1)
	rc := r.newCB(t, release)
	go func() {
		time.Sleep(100 * time.Millisecond)
		if _, err := r.s.Submit(ctxT(t), []stream.Chunk{r.chunk(rc, r.plus(r.down(), 1), len(release))}, stream.SubmitOptions{}); err != nil {
			t.Error(err)
		}
	}()
	start := time.Now()
	res, err := r.s.WaitMulti(ctxT(t), seqs)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 1 || res.Count != 1 || res.Timestamp == 0 {
		t.Errorf("multi-CS wait = %+v; want CS0 alone, with a timestamp", res)
	}
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Errorf("multi-CS wait returned after %v, before CS0 was released", el)
	}
	r.run(t, r.plus(r.down(), 1), r.setSOB(t, sob1, 1))
	for _, s := range seqs {
		r.wait(t, s)
	}
	res, err = r.s.PollMulti(ctxT(t), seqs)
	if err != nil || res.Completed != ^uint32(0) || res.Count != 32 {
		t.Errorf("poll after all completed: %+v, %v", res, err)
	}
}

// TestWaitForMultiCSPoll is test_wait_for_multi_cs_poll: CS0 has no
// fence; once it completed, a poll reports it alone.
func TestWaitForMultiCSPoll(t *testing.T) {
	r := newRig(t, sim.Gaudi)
	seqs, _, sob1 := multiCS(t, r, false)
	r.wait(t, seqs[0])
	res, err := r.s.PollMulti(ctxT(t), seqs)
	if err != nil || res.Completed != 1 || res.Count != 1 {
		t.Errorf("poll = %+v, %v; want CS0 alone", res, err)
	}
	r.run(t, r.plus(r.down(), 1), r.setSOB(t, sob1, 1))
	for _, s := range seqs {
		r.wait(t, s)
	}
}

// TestWaitForMultiCSRules checks the driver's refusals: Gaudi2 has no
// multi-CS waits (EPERM); more than 32 sequence numbers, or one never
// given out, are EINVAL.
func TestWaitForMultiCSRules(t *testing.T) {
	r2 := newRig(t, sim.Gaudi2)
	if _, err := r2.s.PollMulti(ctxT(t), []uint64{1}); !errors.Is(err, stream.ErrNotSupported) || !errors.Is(err, unix.EPERM) {
		t.Errorf("Gaudi2 multi-CS: %v, want EPERM", err)
	}
	r := newRig(t, sim.Gaudi)
	if _, err := r.s.PollMulti(ctxT(t), make([]uint64, 33)); !errors.Is(err, unix.EINVAL) {
		t.Errorf("33 sequence numbers: %v", err)
	}
	if _, err := r.s.PollMulti(ctxT(t), []uint64{99}); !errors.Is(err, unix.EINVAL) {
		t.Errorf("a sequence never given out: %v", err)
	}
}

// multiThread is test_wait_for_multi_cs_multi_thread(_single_mode):
// submitters put NOP CSs on the four down streams while waiters retire
// them with multi-CS waits of up to 32 (single mode: one) sequence
// numbers at a time, until every CS is seen complete.
func multiThread(t *testing.T, single bool) {
	r := newRig(t, sim.Gaudi)
	const submitters, perQueue, waiters = 4, 200, 2
	nop := r.build(t, func(b *packet.Builder) { b.Nop(packet.Nop{}) })
	cbs := make([]cb, submitters)
	for i := range cbs {
		cbs[i] = r.newCB(t, nop)
	}
	var (
		mu      sync.Mutex
		pending []uint64
		done    int
	)
	var wg sync.WaitGroup
	for q := 0; q < submitters; q++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perQueue; i++ {
				seq, err := r.s.Submit(ctxT(t), []stream.Chunk{r.chunk(cbs[q], r.queue(uint32(q)), len(nop))}, stream.SubmitOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				pending = append(pending, seq)
				mu.Unlock()
			}
		}()
	}
	total := submitters * perQueue
	for w := 0; w < waiters; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if done == total {
					mu.Unlock()
					return
				}
				n := min(len(pending), stream.MaxMulti)
				if single {
					n = min(n, 1)
				}
				batch := append([]uint64(nil), pending[:n]...)
				pending = pending[n:]
				mu.Unlock()
				if n == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				res, err := r.s.WaitMulti(ctxT(t), batch)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for i, s := range batch {
					if res.Completed&(1<<i) == 0 {
						pending = append(pending, s)
					}
				}
				done += bits.OnesCount32(res.Completed)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if done != total {
		t.Errorf("%d of %d CSs seen complete", done, total)
	}
}

// TestWaitForMultiCSMultiThread is test_wait_for_multi_cs_multi_thread.
func TestWaitForMultiCSMultiThread(t *testing.T) { multiThread(t, false) }

// TestWaitForMultiCSMultiThreadSingleMode is
// test_wait_for_multi_cs_multi_thread_single_mode.
func TestWaitForMultiCSMultiThreadSingleMode(t *testing.T) { multiThread(t, true) }
