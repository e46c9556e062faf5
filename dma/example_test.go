package dma_test

import (
	"bytes"
	"context"
	"fmt"
	"log"

	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/simdevice"
)

// The happy path: open a device, allocate HBM and pinned host memory, copy
// there and back, verify. The copy's direction is in its name and its
// argument types: a host range cannot be passed where device memory goes.
func Example() {
	d, err := simdevice.Open("sim") // device.Open("") on a machine with a Gaudi
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	e, err := dma.New(m, dma.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	const n = 1 << 20
	host, err := m.AllocHost(2*n, memory.HostOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer host.Close()
	hbm, err := m.Alloc(n, memory.AllocOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer hbm.Close()
	in, out := host.Range(0, n), host.Range(n, n)
	for i := range in.Bytes() {
		in.Bytes()[i] = byte(i * 7)
	}
	ctx := context.Background()
	if err := e.CopyToDevice(ctx, hbm.Range(0, n), in); err != nil {
		log.Fatal(err)
	}
	if err := e.CopyToHost(ctx, out, hbm.Range(0, n)); err != nil {
		log.Fatal(err)
	}
	fmt.Println("verified:", bytes.Equal(in.Bytes(), out.Bytes()))
	// Output: verified: true
}

// A Batch submits several operations together and returns at once; the
// Transfer tells when the device is done.
func ExampleBatch() {
	d, err := simdevice.Open("sim")
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	e, err := dma.New(m, dma.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	host, err := m.AllocHost(8192, memory.HostOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer host.Close()
	a, err := m.Alloc(8192, memory.AllocOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()

	b := e.NewBatch(dma.BatchOptions{})
	if err := b.Memset(a.Range(0, 4096), 0x2a2a2a2a2a2a2a2a); err != nil {
		log.Fatal(err)
	}
	if err := b.CopyToDevice(a.Range(4096, 4096), host.Range(0, 4096)); err != nil {
		log.Fatal(err)
	}
	t, err := b.Start(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	if err := t.Wait(context.Background()); err != nil {
		log.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := a.ReadAt(got, 100); err != nil {
		log.Fatal(err)
	}
	fmt.Println(b.Len(), "operations;", got)
	// Output: 2 operations; [42 42 42 42]
}
