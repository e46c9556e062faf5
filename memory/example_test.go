package memory_test

import (
	"fmt"
	"log"

	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/simdevice"
)

// A device buffer is an io.ReaderAt and io.WriterAt: small transfers need
// no host buffer of the caller's. The bytes travel through pinned staging
// memory with the DMA engine made on the same Manager.
func ExampleBuffer_WriteAt() {
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
	e, err := dma.New(m, dma.Options{}) // attaches itself as the Manager's mover
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	buf, err := m.Alloc(1<<20, memory.AllocOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Close()
	if _, err := buf.WriteAt([]byte("hello, HBM"), 4096); err != nil {
		log.Fatal(err)
	}
	got := make([]byte, 10)
	if _, err := buf.ReadAt(got, 4096); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", got)
	// Output: hello, HBM
}

// Ranges name the part of a buffer a copy touches; they are checked when
// used, so a range past the end is an error, never a stray DMA.
func ExampleBuffer_Range() {
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
	buf, err := m.Alloc(1<<20, memory.AllocOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Close()
	fmt.Println(buf.Range(0, 4096).Check())
	fmt.Println(buf.Range(buf.Size()-8, 16).Check() != nil)
	// Output:
	// <nil>
	// true
}
