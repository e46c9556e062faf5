package dma

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// TestClosedObjects: calls on a closed Engine or Prepared, and a batch
// over a buffer closed before it started, fail with an error matching
// os.ErrClosed (and ErrClosed, which is os.ErrClosed).
func TestClosedObjects(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		call func(t *testing.T, r rig, h *memory.HostBuffer, buf *memory.Buffer) error
	}{
		{"Engine.Copy", func(t *testing.T, r rig, h *memory.HostBuffer, buf *memory.Buffer) error {
			r.e.Close()
			return copyVA(ctx, r.e, buf.VA(), h.VA(), 4096)
		}},
		{"Engine.Memset", func(t *testing.T, r rig, h *memory.HostBuffer, buf *memory.Buffer) error {
			r.e.Close()
			return memsetVA(ctx, r.e, buf.VA(), 0, 4096)
		}},
		{"Batch.Prepare", func(t *testing.T, r rig, h *memory.HostBuffer, buf *memory.Buffer) error {
			b := r.e.NewBatch(BatchOptions{})
			b.CopyAddr(buf.VA(), h.VA(), 4096)
			r.e.Close()
			_, err := b.Prepare(context.Background())
			return err
		}},
		{"Prepared.Run", func(t *testing.T, r rig, h *memory.HostBuffer, buf *memory.Buffer) error {
			b := r.e.NewBatch(BatchOptions{})
			b.CopyAddr(buf.VA(), h.VA(), 4096)
			p, err := b.Prepare(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			p.Close()
			return p.Run(ctx)
		}},
		{"buffer closed under a batch", func(t *testing.T, r rig, h *memory.HostBuffer, buf *memory.Buffer) error {
			b := r.e.NewBatch(BatchOptions{})
			b.CopyAddr(buf.VA(), h.VA(), 4096)
			buf.Close()
			_, err := b.Start(context.Background())
			return err
		}},
		{"device closed", func(t *testing.T, r rig, h *memory.HostBuffer, buf *memory.Buffer) error {
			r.d.Close()
			return copyVA(ctx, r.e, buf.VA(), h.VA(), 4096)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, sim.Gaudi2, Options{})
			h, err := r.m.AllocHost(4096, memory.HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			buf, err := r.m.Alloc(4096, memory.AllocOptions{})
			if err != nil {
				t.Fatal(err)
			}
			err = tt.call(t, r, h, buf)
			if !errors.Is(err, os.ErrClosed) || !errors.Is(err, ErrClosed) {
				t.Errorf("%v, want an error matching os.ErrClosed", err)
			}
		})
	}
}

// TestReleaseErrors: a CB DESTROY or an UNMAP that fails while the Engine
// releases what it used is returned by Close (of the Engine or of a
// Prepared), including a release a finished transfer did on its own.
func TestReleaseErrors(t *testing.T) {
	ctx := context.Background()
	destroyFault := sim.Fault{Ioctl: "CB", MatchOp: true, Op: hl.HL_CB_OP_DESTROY, Errno: unix.EIO}
	unmapFault := sim.Fault{Ioctl: "MEMORY", MatchOp: true, Op: hl.HL_MEM_OP_UNMAP, Errno: unix.EIO}
	tests := []struct {
		name string
		asic sim.ASIC
		opts Options
		sub  string // of the failing ioctl
		run  func(t *testing.T, r rig, h *memory.HostBuffer, buf *memory.Buffer) error
	}{
		{"Gaudi kernel CBs", sim.Gaudi, Options{}, "DESTROY", func(t *testing.T, r rig, h *memory.HostBuffer, buf *memory.Buffer) error {
			if err := copyVA(ctx, r.e, buf.VA(), h.VA(), 4096); err != nil {
				t.Fatal(err)
			}
			simdevice.Sim(r.d).InjectFault(destroyFault)
			return r.e.Close()
		}},
		{"Gaudi2 mapped kernel CBs", sim.Gaudi2, Options{MappedKernelCBs: true}, "DESTROY", func(t *testing.T, r rig, h *memory.HostBuffer, buf *memory.Buffer) error {
			if err := copyVA(ctx, r.e, buf.VA(), h.VA(), 4096); err != nil {
				t.Fatal(err)
			}
			simdevice.Sim(r.d).InjectFault(destroyFault)
			return r.e.Close()
		}},
		{"Gaudi2 user CB slab", sim.Gaudi2, Options{}, "UNMAP", func(t *testing.T, r rig, h *memory.HostBuffer, buf *memory.Buffer) error {
			if err := copyVA(ctx, r.e, buf.VA(), h.VA(), 4096); err != nil {
				t.Fatal(err)
			}
			simdevice.Sim(r.d).InjectFault(unmapFault)
			return r.e.Close()
		}},
		{"buffer released by a finished transfer", sim.Gaudi2, Options{}, "UNMAP", func(t *testing.T, r rig, h *memory.HostBuffer, buf *memory.Buffer) error {
			tr, err := startCopyVA(r.e, buf.VA(), h.VA(), 4096)
			if err != nil {
				t.Fatal(err)
			}
			if err := buf.Close(); err != nil {
				t.Fatalf("Close of a held buffer: %v", err)
			}
			simdevice.Sim(r.d).InjectFault(unmapFault)
			if err := tr.Wait(ctx); err != nil {
				t.Fatalf("the transfer itself: %v", err)
			}
			if r.m.Lookup(buf.VA()).Kind != memory.Unknown {
				t.Fatal("the finished transfer did not release the buffer")
			}
			return r.e.Close()
		}},
		{"buffer released by Prepared.Close", sim.Gaudi2, Options{}, "UNMAP", func(t *testing.T, r rig, h *memory.HostBuffer, buf *memory.Buffer) error {
			b := r.e.NewBatch(BatchOptions{})
			b.CopyAddr(buf.VA(), h.VA(), 4096)
			p, err := b.Prepare(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if err := buf.Close(); err != nil {
				t.Fatalf("Close of a held buffer: %v", err)
			}
			simdevice.Sim(r.d).InjectFault(unmapFault)
			return p.Close()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, tt.asic, tt.opts)
			h, err := r.m.AllocHost(4096, memory.HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			buf, err := r.m.Alloc(4096, memory.AllocOptions{})
			if err != nil {
				t.Fatal(err)
			}
			err = tt.run(t, r, h, buf)
			var e *ioctl.Error
			if !errors.Is(err, unix.EIO) || !errors.As(err, &e) || e.Sub != tt.sub {
				t.Errorf("%v, want the failed %s's EIO", err, tt.sub)
			}
		})
	}
}
