package stream_test

import (
	"context"
	"testing"

	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/stream"
)

// BenchmarkSignalWait measures a signal CS, a wait CS for it on another
// queue and the wait for the wait CS, on the simulator.
func BenchmarkSignalWait(b *testing.B) {
	for _, a := range asics() {
		b.Run(a.String(), func(b *testing.B) {
			r := newRigB(b, a)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				sig, _, err := r.s.Signal(ctx, r.down(), stream.SubmitOptions{})
				if err != nil {
					b.Fatal(err)
				}
				w, err := r.s.WaitForSignal(ctx, r.up(), sig, stream.SubmitOptions{})
				if err != nil {
					b.Fatal(err)
				}
				seq := sig
				if w != ^uint64(0) {
					seq = w
				}
				if _, err := r.s.Wait(ctx, seq); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPollMulti measures a multi-CS poll of 32 completed CSs (Gaudi).
func BenchmarkPollMulti(b *testing.B) {
	r := newRigB(b, sim.Gaudi)
	ctx := context.Background()
	seqs := make([]uint64, 32)
	for i := range seqs {
		s, _, err := r.s.Signal(ctx, r.down(), stream.SubmitOptions{})
		if err != nil {
			b.Fatal(err)
		}
		seqs[i] = s
	}
	if _, err := r.s.Wait(context.Background(), seqs[31]); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.s.PollMulti(ctx, seqs); err != nil {
			b.Fatal(err)
		}
	}
}
