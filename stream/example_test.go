package stream_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
	"github.com/gaudi-go/gaudi/stream"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// Order two queues of a (simulated) Gaudi2: the wait CS on PDMA_1_0 lets
// nothing queued behind it run before the signal CS on PDMA_0_0 ran.
func ExampleStreams_Signal() {
	dir, err := os.MkdirTemp("", "stream-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := sim.Default(sim.Gaudi2, 1)
	cfg.LockDir = dir
	sys, err := sim.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer sys.Close()
	d, err := simdevice.OpenSim(sys.Device(0))
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	s, err := stream.New(d)
	if err != nil {
		log.Fatal(err)
	}

	sig, sob, err := s.Signal(uint32(hl.GAUDI2_QUEUE_ID_PDMA_0_0), stream.WithTimestamp())
	if err != nil {
		log.Fatal(err)
	}
	wait, err := s.WaitForSignal(uint32(hl.GAUDI2_QUEUE_ID_PDMA_1_0), sig, stream.WithTimestamp())
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	a, err := s.Wait(ctx, sig)
	if err != nil {
		log.Fatal(err)
	}
	after := a.Timestamp
	if wait != stream.NoSeq {
		b, err := s.Wait(ctx, wait)
		if err != nil {
			log.Fatal(err)
		}
		after = b.Timestamp
	}
	fmt.Printf("signal brought its SOB to %d; wait done after the signal: %v\n", sob.Value, after >= a.Timestamp)
	// Output: signal brought its SOB to 1; wait done after the signal: true
}
