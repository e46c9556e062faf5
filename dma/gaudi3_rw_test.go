package dma

import (
	"bytes"
	"context"
	"testing"

	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
)

// TestGaudi3ReadWriteAt: a memory.Buffer's WriteAt and ReadAt move their
// bytes with the Gaudi3 Engine made on the same Manager.
func TestGaudi3ReadWriteAt(t *testing.T) {
	r := newRig(t, sim.Gaudi3, Options{})
	buf, err := r.m.Alloc(8<<20, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in := make([]byte, 5<<20+3)
	fill(in, 11)
	if _, err := buf.WriteAtContext(context.Background(), in, 4097); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, len(in))
	if _, err := buf.ReadAtContext(context.Background(), out, 4097); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in, out) {
		t.Error("WriteAt then ReadAt through the Gaudi3 Engine differ")
	}
}
