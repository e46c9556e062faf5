// Command dma copies bytes host to device, device to device and device to
// host with the DMA engines, and verifies them byte for byte: on a real
// Gaudi when one is present, on the simulator otherwise (it says which).
//
//	go run ./examples/dma [-device SEL] [-size 64M] [-warm 5]
//
// Each copy is timed twice, and the example says which is which: the
// first copy, which also pays the first touch of the destination's pages
// (on the simulator, host memory behind its HBM: a page fault per page,
// 4 KiB unless the host gives it huge pages), and the median of -warm
// more copies of the same bytes, warm.
package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
)

func main() {
	cmd := cli.New("dma", "dma [-device SEL] [-size SIZE] [-warm N]",
		"dma copies -size bytes host to device, device to device and device to host, times the first copy\n"+
			"and warm ones, and verifies the bytes.")
	size := cli.Size(64 << 20)
	cmd.Flags.Var(&size, "size", "bytes to copy, a `SIZE`: K, M, G for powers of 1024, KB, MB, GB for powers of 1000")
	warm := cmd.Flags.Int("warm", 5, "warm copies timed after the first (their median is shown)")
	cmd.ParseOrExit(os.Args[1:])
	if size == 0 || *warm < 1 || cmd.Flags.NArg() > 0 {
		cmd.Fatal(cmd.UsageError("need -size of at least 1 byte, -warm of at least 1, and no arguments"))
	}
	cmd.Fatal(run(cmd, uint64(size), *warm))
}

func run(cmd *cli.Command, size uint64, warm int) error {
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
	e, err := dma.New(m, dma.Options{})
	if err != nil {
		return err
	}
	defer e.Close()

	src, err := m.AllocHost(size, memory.HostOptions{HugePages: true})
	if err != nil {
		return err
	}
	dst, err := m.AllocHost(size, memory.HostOptions{HugePages: true})
	if err != nil {
		return err
	}
	a, err := m.Alloc(size, memory.AllocOptions{})
	if err != nil {
		return err
	}
	b, err := m.Alloc(size, memory.AllocOptions{})
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for i := range src.Bytes() {
		src.Bytes()[i] = byte(r.Uint32())
	}
	kind := "hardware"
	if d.Simulated() {
		kind = "the simulator"
	}
	fmt.Printf("device: %s on %s\n", d, kind)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	steps := []struct {
		name string
		copy func() error
	}{
		{"host to device", func() error { return e.CopyToDevice(ctx, a.Range(0, size), src.Range(0, size)) }},
		{"device to device", func() error { return e.CopyOnDevice(ctx, b.Range(0, size), a.Range(0, size)) }},
		{"device to host", func() error { return e.CopyToHost(ctx, dst.Range(0, size), b.Range(0, size)) }},
	}
	rate := func(el time.Duration) string {
		return fmt.Sprintf("%10v %7.2f GB/s", el.Round(time.Microsecond), float64(size)/el.Seconds()/1e9)
	}
	fmt.Printf("%-17s %10s  %-26s  %s\n", "", "size", "first copy", fmt.Sprintf("warm (median of %d)", warm))
	for _, s := range steps {
		times := make([]time.Duration, 0, warm+1)
		for range warm + 1 {
			start := time.Now()
			if err := s.copy(); err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			times = append(times, time.Since(start))
		}
		first, rest := times[0], times[1:]
		slices.Sort(rest)
		fmt.Printf("%-17s %10s  %s  %s\n", s.name, cli.FormatSize(size), rate(first), rate(rest[(len(rest)-1)/2]))
	}
	if d.Simulated() {
		fmt.Printf("first copy: includes the first touch of the destination; simulated HBM is host memory in %s\n", sim.DRAMPages())
	} else {
		fmt.Println("first copy: includes the driver's first use of the buffers")
	}
	fmt.Printf("warm: the same copy again, the destination's pages already in place; GB/s = 1e9 bytes/s\n")
	if !bytes.Equal(src.Bytes(), dst.Bytes()) {
		for i := range src.Bytes() {
			if src.Bytes()[i] != dst.Bytes()[i] {
				return fmt.Errorf("verification failed: first difference at byte %d", i)
			}
		}
	}
	fmt.Printf("verified: %d bytes identical after host -> device -> device -> host\n", size)
	return nil
}
