// Command signal orders two DMA streams with a signal/wait pair: a copy
// host to device runs on one queue, a signal CS follows it there, a wait
// CS for that signal blocks a second queue, and a copy device to host
// queued behind the wait reads what the first copy wrote. It prints the
// completion timestamps of the four submissions and checks the order the
// pair guarantees: the copy in completes before the signal (one queue,
// in order), the wait before the copy out (the other queue), and so the
// copy in before the copy out. (The signal's completion may be reported
// after the wait's: the wait needs the signal to have run, not its
// completion to be reported.) Then it verifies the bytes; on a real Gaudi
// when one is present, on the simulator otherwise.
//
//	go run ./examples/signal [-device SEL] [-size 16M]
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/stream"
)

// newCommand returns the example's command line.
func newCommand() *cli.Command {
	return cli.New("signal", "signal [-device SEL] [-size SIZE]",
		"signal orders two DMA streams with a signal/wait pair and verifies that the copy out saw the\n"+
			"copy in.")
}

func main() {
	cmd := newCommand()
	size := cli.Size(16 << 20)
	cmd.Flags.Var(&size, "size", "bytes to copy, a `SIZE`: K, M, G for powers of 1024, KB, MB, GB for powers of 1000")
	cmd.ParseOrExit(os.Args[1:])
	if size == 0 || cmd.Flags.NArg() > 0 {
		cmd.Fatal(cmd.UsageError("need -size of at least 1 byte, and no arguments"))
	}
	cmd.Fatal(run(cmd, uint64(size)))
}

func run(cmd *cli.Command, size uint64) error {
	d, err := cmd.OpenDevice()
	if err != nil {
		return err
	}
	defer d.Close()
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		return err
	}
	defer m.Close()
	// One stream per direction: host to device on the first PCI DMA queue,
	// device to host on the second engine's.
	e, err := dma.New(m, dma.Options{Streams: 1, Timestamps: true})
	if err != nil {
		return err
	}
	defer e.Close()
	s, err := stream.New(d)
	if err != nil {
		return err
	}
	downName, upName := "PDMA_0_0", "PDMA_1_0"
	if d.ASIC().IsGaudi() {
		downName, upName = "DMA_0_0", "DMA_1_0"
	}
	down, err := d.Queue(downName)
	if err != nil {
		return err
	}
	up, err := d.Queue(upName)
	if err != nil {
		return err
	}

	src, err := m.AllocHost(size, memory.HostOptions{})
	if err != nil {
		return err
	}
	dst, err := m.AllocHost(size, memory.HostOptions{})
	if err != nil {
		return err
	}
	buf, err := m.Alloc(size, memory.AllocOptions{})
	if err != nil {
		return err
	}
	for i := range src.Bytes() {
		src.Bytes()[i] = byte(i*131 + 7)
	}
	kind := "hardware"
	if d.Simulated() {
		kind = "the simulator"
	}
	fmt.Printf("device: %s on %s\n", d, kind)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bin := e.NewBatch(dma.BatchOptions{})
	if err := bin.CopyToDevice(buf.Range(0, size), src.Range(0, size)); err != nil {
		return fmt.Errorf("copy in: %w", err)
	}
	in, err := bin.Start(ctx)
	if err != nil {
		return fmt.Errorf("copy in: %w", err)
	}
	opts := stream.SubmitOptions{Timestamp: true}
	sig, sob, err := s.Signal(ctx, down, opts)
	if err != nil {
		return err
	}
	wait, err := s.WaitForSignal(ctx, up, sig, opts)
	if err != nil {
		return err
	}
	bout := e.NewBatch(dma.BatchOptions{})
	if err := bout.CopyToHost(dst.Range(0, size), buf.Range(0, size)); err != nil {
		return fmt.Errorf("copy out: %w", err)
	}
	out, err := bout.Start(ctx)
	if err != nil {
		return fmt.Errorf("copy out: %w", err)
	}

	if err := out.Wait(ctx); err != nil {
		return fmt.Errorf("copy out: %w", err)
	}
	if err := in.Wait(ctx); err != nil {
		return fmt.Errorf("copy in: %w", err)
	}
	sigDone, err := s.Wait(ctx, sig)
	if err != nil {
		return err
	}
	var waitDone stream.Completion
	if wait != stream.NoSeq {
		if waitDone, err = s.Wait(ctx, wait); err != nil {
			return err
		}
	} else {
		waitDone.Timestamp = sigDone.Timestamp // the signal had run already
	}
	steps := []struct {
		name string
		at   time.Duration
	}{
		{fmt.Sprintf("copy host to device (queue %v)", down), in.Timestamp()},
		{fmt.Sprintf("signal SOB %#x to %d (queue %v)", sob.Addr, sob.Value, down), sigDone.Timestamp},
		{fmt.Sprintf("wait for the signal (queue %v)", up), waitDone.Timestamp},
		{fmt.Sprintf("copy device to host (queue %v)", up), out.Timestamp()},
	}
	base := steps[0].at
	for _, st := range steps {
		fmt.Printf("%-40s completed at +%v\n", st.name, (st.at - base).Round(time.Microsecond))
	}
	for _, o := range [][2]int{{0, 1}, {2, 3}, {0, 3}} {
		if a, b := steps[o[0]], steps[o[1]]; b.at < a.at {
			return fmt.Errorf("%s completed before %s", b.name, a.name)
		}
	}
	if !bytes.Equal(src.Bytes(), dst.Bytes()) {
		return fmt.Errorf("verification failed: the copy out did not see the copy in")
	}
	fmt.Printf("verified: %d bytes ordered across two queues by one signal/wait pair\n", size)
	return nil
}
