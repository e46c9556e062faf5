package stream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
	"github.com/gaudi-go/gaudi/stream"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// openSim opens a simulated device of asic for the examples; done closes
// it again. A program on hardware opens its device with device.Open or
// device.OpenDefault instead.
func openSim(asic sim.ASIC) (d *device.Device, done func()) {
	dir, err := os.MkdirTemp("", "stream-example")
	if err != nil {
		log.Fatal(err)
	}
	cfg := sim.Default(asic, 1)
	cfg.LockDir = dir
	sys, err := sim.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	if d, err = simdevice.OpenSim(sys.Device(0)); err != nil {
		log.Fatal(err)
	}
	return d, func() { d.Close(); sys.Close(); os.RemoveAll(dir) }
}

// Order two queues of a Gaudi2: the wait CS on PDMA_1_0 lets nothing
// queued behind it run before the signal CS on PDMA_0_0 ran.
func ExampleStreams_Signal() {
	d, done := openSim(sim.Gaudi2)
	defer done()
	s, err := stream.New(d)
	if err != nil {
		log.Fatal(err)
	}
	down, err := d.Queue("PDMA_0_0")
	if err != nil {
		log.Fatal(err)
	}
	up, err := d.Queue("PDMA_1_0")
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	opts := stream.SubmitOptions{Timestamp: true}
	sig, sob, err := s.Signal(ctx, down, opts)
	if err != nil {
		log.Fatal(err)
	}
	wait, err := s.WaitForSignal(ctx, up, sig, opts)
	if err != nil {
		log.Fatal(err)
	}
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
	fmt.Printf("signal on %v brought its SOB to %d; the wait on %v done after it: %v\n", down, sob.Value, up, after >= a.Timestamp)
	// Output: signal on PDMA_0_0 brought its SOB to 1; the wait on PDMA_1_0 done after it: true
}

// Submit a command buffer of one's own: on Gaudi2 a LIN_DMA packet in host
// memory mapped for the device, run by the PCI DMA queue PDMA_0_0.
func ExampleStreams_Submit() {
	d, done := openSim(sim.Gaudi2)
	defer done()
	s, err := stream.New(d)
	if err != nil {
		log.Fatal(err)
	}
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	src, err := m.AllocHost(4096, memory.HostOptions{})
	if err != nil {
		log.Fatal(err)
	}
	dst, err := m.AllocHost(4096, memory.HostOptions{})
	if err != nil {
		log.Fatal(err)
	}
	cb, err := m.AllocHost(4096, memory.HostOptions{})
	if err != nil {
		log.Fatal(err)
	}
	copy(src.Bytes(), "hello, gaudi")

	b := packet.NewBuilder(packet.Gaudi2, cb.Bytes()[:0])
	b.LinDMA(packet.LinDMA{Src: src.VA(), Dst: dst.VA(), Size: 12})
	if b.Err() != nil {
		log.Fatal(b.Err())
	}
	q, err := d.Queue("PDMA_0_0")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	seq, err := s.Submit(ctx, []stream.Chunk{{Queue: q, CB: cb.VA(), Size: uint32(b.Len()), UserCB: true}}, stream.SubmitOptions{})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := s.Wait(ctx, seq); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", bytes.TrimRight(dst.Bytes()[:16], "\x00"))
	// Output: hello, gaudi
}

// Poll several command submissions at once (first-generation Gaudi; Gaudi2
// has no multi-CS waits).
func ExampleStreams_PollMulti() {
	d, done := openSim(sim.Gaudi)
	defer done()
	s, err := stream.New(d)
	if err != nil {
		log.Fatal(err)
	}
	q, err := d.Queue("DMA_0_0")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	var seqs []uint64
	for range 3 {
		seq, _, err := s.Signal(ctx, q, stream.SubmitOptions{})
		if err != nil {
			log.Fatal(err)
		}
		seqs = append(seqs, seq)
	}
	// One queue runs its submissions in order: when the last completed,
	// all did.
	if _, err := s.Wait(ctx, seqs[2]); err != nil {
		log.Fatal(err)
	}
	res, err := s.PollMulti(ctx, seqs)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d of %d completed (%03b)\n", res.Count, len(seqs), res.Completed)
	// Output: 3 of 3 completed (111)
}

// Ask the driver for the completion time, and for a timeout of its own
// instead of the device's default. The zero SubmitOptions keeps every
// default.
func ExampleSubmitOptions() {
	d, done := openSim(sim.Gaudi2)
	defer done()
	s, err := stream.New(d)
	if err != nil {
		log.Fatal(err)
	}
	q, err := d.Queue("PDMA_0_0")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	seq, _, err := s.Signal(ctx, q, stream.SubmitOptions{Timeout: 5 * time.Second, Timestamp: true})
	if err != nil {
		log.Fatal(err)
	}
	c, err := s.Wait(ctx, seq)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("completion time reported:", c.Timestamp > 0)
	// Output: completion time reported: true
}

// A queue belongs to one ASIC: a first-generation Gaudi's queue given to a
// Gaudi2 is refused before anything reaches the driver.
func ExampleStreams_Signal_otherASIC() {
	d, done := openSim(sim.Gaudi2)
	defer done()
	s, err := stream.New(d)
	if err != nil {
		log.Fatal(err)
	}
	_, _, err = s.Signal(context.Background(), device.GaudiQueue(hl.GAUDI_QUEUE_ID_DMA_0_0), stream.SubmitOptions{})
	var wrong *device.WrongASICError
	fmt.Println(errors.As(err, &wrong), errors.Is(err, unix.EINVAL))
	fmt.Println(err)
	// Output:
	// true true
	// signal: queue DMA_0_0 is a GAUDI queue, not one of a GAUDI2 device
}
