package dma

import (
	"context"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// fakeFile is an ioctl.File that completes every CS at once: CS answers
// the next sequence number, WAIT_CS answers COMPLETED, and INFO (the
// encoding probe) succeeds. It allocates nothing, so what a benchmark on
// it counts is the library's.
type fakeFile struct {
	seq   atomic.Uint64
	chunk hl.CSChunk // the first chunk of the last CS
	waits atomic.Uint64
}

func (f *fakeFile) Ioctl(req uint, arg unsafe.Pointer) error {
	switch req {
	case uint(hl.DRM_IOCTL_HL_INFO):
		return nil
	case uint(hl.DRM_IOCTL_HL_CS):
		a := (*hl.CSArgs)(arg)
		in := a.In()
		if in.NumChunksExecute == 0 {
			return unix.EINVAL
		}
		ptr := in.ChunksExecute() // an address, as the kernel sees it
		f.chunk = **(**hl.CSChunk)(unsafe.Pointer(&ptr))
		*a = hl.CSArgs{}
		a.Out().SetSeq(f.seq.Add(1))
		return nil
	case uint(hl.DRM_IOCTL_HL_WAIT_CS):
		a := (*hl.WaitCSArgs)(arg)
		if seq := a.In().Seq(); seq == 0 || seq > f.seq.Load() {
			return unix.EINVAL
		}
		f.waits.Add(1)
		*a = hl.WaitCSArgs{}
		a.Out().Status = hl.HL_WAIT_CS_STATUS_COMPLETED
		return nil
	}
	return unix.ENOTTY
}

func (f *fakeFile) Mmap(offset int64, length int, prot, flags int) ([]byte, error) {
	return nil, unix.ENODEV
}
func (f *fakeFile) Munmap(b []byte) error { return nil }
func (f *fakeFile) Close() error          { return nil }
func (f *fakeFile) Name() string          { return "fake" }

// fakePrepared returns a Prepared of one 24-byte Gaudi2 user CB job on an
// Engine whose device file is a fakeFile. The Engine has no memory
// manager: it can run the Prepared, not encode batches.
func fakePrepared(t testing.TB) (*Prepared, *fakeFile) {
	ff := &fakeFile{}
	io := ioctl.New(ff)
	e := &Engine{io: io, format: packet.Gaudi2, q: queueTable{userCB: true}, opts: Options{MaxRetries: 1000, Streams: 2}}
	e.cbs = newCBPool(io, nil, true, false)
	if err := e.begin(); err != nil {
		t.Fatal(err)
	}
	p := &Prepared{e: e}
	cb := &cmdBuf{mem: make([]byte, 24), handle: 0x1000_0000_0000, pooled: true}
	p.setJobs([]*job{{queue: 0, cb: cb, buf: cb.mem}}, 0)
	t.Cleanup(func() {
		p.Close()
		e.Close()
		io.Close()
	})
	return p, ff
}

// TestPreparedRunFake checks the fake-file rig: Run submits the chunk and
// waits, and allocates nothing.
func TestPreparedRunFake(t *testing.T) {
	p, ff := fakePrepared(t)
	ctx := context.Background()
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if ff.seq.Load() != 1 || ff.waits.Load() != 1 {
		t.Fatalf("%d CSs, %d waits", ff.seq.Load(), ff.waits.Load())
	}
	if c := ff.chunk; c.QueueIndex != 0 || c.CBHandle() != 0x1000_0000_0000 || c.CBSize() != 24 ||
		c.CSChunkFlags != hl.HL_CS_CHUNK_FLAGS_USER_ALLOC_CB {
		t.Fatalf("chunk %+v", c)
	}
	if n := testing.AllocsPerRun(1000, func() {
		if err := p.Run(ctx); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Run allocates %v times", n)
	}
}

// BenchmarkPreparedRunLibrary is BenchmarkPreparedRun on a fake device
// file that completes every CS at once: the cost and the allocations of
// the library alone (dma and ioctl), without the simulator.
func BenchmarkPreparedRunLibrary(b *testing.B) {
	p, _ := fakePrepared(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Run(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
