package ipc_test

import (
	"context"
	"fmt"
	"log"

	"github.com/gaudi-go/gaudi/ipc"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/simdevice"
)

// Handing device memory to another process: the exporter serves dma-bufs
// of its buffers on a Unix socket; the importer, given the handle (bytes
// it can receive any way), gets the descriptor. Both sides run in one
// process here; in real use the handle crosses a process boundary.
func Example() {
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
	buf, err := m.Alloc(4<<20, memory.AllocOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Close()
	x, err := buf.Export(0, 4<<20, memory.ExportOptions{Name: "example"})
	if err != nil {
		log.Fatal(err)
	}
	defer x.Close()

	srv, err := ipc.NewExporter("", ipc.ExporterOptions{}) // an abstract socket of its own
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	h, err := srv.Export(x, ipc.DeviceIDOf(d))
	if err != nil {
		log.Fatal(err)
	}
	wire, err := h.MarshalBinary() // what the other process receives
	if err != nil {
		log.Fatal(err)
	}

	var got ipc.Handle
	if err := got.UnmarshalBinary(wire); err != nil {
		log.Fatal(err)
	}
	im, err := ipc.Import(context.Background(), srv.Addr(), got)
	if err != nil {
		log.Fatal(err)
	}
	defer im.Close()
	fmt.Println("imported", im.Size>>20, "MiB at offset", im.Offset)
	// Output: imported 4 MiB at offset 0
}
