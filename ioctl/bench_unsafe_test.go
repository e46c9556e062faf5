package ioctl_test

import (
	"context"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/ioctl/internal/fakefile"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// BenchmarkInfoFake measures what a typed call adds to the ioctl itself:
// the encoding lookup, the closed check, the argument copy kept for EINTR
// retries and the interface call. It must not allocate.
func BenchmarkInfoFake(b *testing.B) {
	d := ioctl.New(fakefile.New(func(req uint, arg unsafe.Pointer) error { return nil }))
	d.Encoding()
	var args hl.InfoArgs
	out := make([]byte, 64)
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Info(hl.HL_INFO_DEVICE_STATUS, &args, out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWaitCSFake measures a WAIT_CS that completes at once, the common
// case after a short DMA. It must not allocate.
func BenchmarkWaitCSFake(b *testing.B) {
	d := ioctl.New(fakefile.New(func(req uint, arg unsafe.Pointer) error {
		if req == hl.DRM_IOCTL_HL_WAIT_CS {
			args := fakefile.Arg[hl.WaitCSArgs](arg)
			*args = hl.WaitCSArgs{}
			args.Out().Status = hl.HL_WAIT_CS_STATUS_COMPLETED
		}
		return nil
	}))
	d.Encoding()
	ctx := context.Background()
	var args hl.WaitCSArgs
	b.ReportAllocs()
	for b.Loop() {
		args.In().SetSeq(1)
		args.In().SetTimeoutUs(1_000_000)
		if err := d.WaitCS(ctx, &args); err != nil {
			b.Fatal(err)
		}
	}
}

func TestTypedCallsDoNotAllocate(t *testing.T) {
	d := ioctl.New(fakefile.New(func(req uint, arg unsafe.Pointer) error {
		if req == hl.DRM_IOCTL_HL_WAIT_CS {
			fakefile.Arg[hl.WaitCSArgs](arg).Out().Status = hl.HL_WAIT_CS_STATUS_COMPLETED
		}
		return nil
	}))
	d.Encoding()
	var (
		info  hl.InfoArgs
		cb    hl.CBArgs
		cs    hl.CSArgs
		csc   hl.CSChunksArgs
		wait  hl.WaitCSArgs
		mem   hl.MemArgs
		debug hl.DebugArgs
	)
	out := make([]byte, 64)
	chunks := make([]hl.CSChunk, 1)
	ctx := context.Background()
	calls := []struct {
		name string
		fn   func() error
	}{
		{"Info", func() error { return d.Info(hl.HL_INFO_DEVICE_STATUS, &info, out) }},
		{"CB", func() error { return d.CB(&cb) }},
		{"CS", func() error { return d.CS(&cs) }},
		{"CSChunks", func() error {
			csc.ChunksExecute, csc.NumChunksExecute = hl.SlicePointer(chunks), 1
			return d.CSChunks(&csc)
		}},
		{"WaitCS", func() error { return d.WaitCS(ctx, &wait) }},
		{"Memory", func() error { return d.Memory(&mem) }},
		{"Debug", func() error { return d.Debug(&debug, out, out) }},
	}
	for _, c := range calls {
		allocs := testing.AllocsPerRun(100, func() {
			if err := c.fn(); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocs per call, want 0", c.name, allocs)
		}
	}
}
