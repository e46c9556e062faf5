// Command dma copies bytes host to device, device to device and device to
// host with the DMA engines, and verifies them byte for byte: on a real
// Gaudi when one is present, on the simulator otherwise (it says which).
//
//	go run ./examples/dma [-size 64M]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"time"

	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/simdevice"
)

func main() {
	log.SetFlags(0)
	size := flag.Uint64("size", 64<<20, "bytes to copy")
	flag.Parse()
	if err := run(*size); err != nil {
		log.Fatalf("dma: %v", err)
	}
}

func run(size uint64) error {
	d, err := simdevice.OpenDefault()
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
	for _, s := range steps {
		start := time.Now()
		if err := s.copy(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		el := time.Since(start)
		fmt.Printf("%-17s %8d MiB in %10v  %6.2f GB/s\n", s.name, size>>20, el.Round(time.Microsecond), float64(size)/el.Seconds()/1e9)
	}
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
