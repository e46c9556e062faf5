package stream

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/internal/submit"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Completion is what a finished wait reports.
type Completion struct {
	// Timestamp is the completion time on CLOCK_MONOTONIC, when the driver
	// reported one (the CS asked for it with SubmitOptions.Timestamp; interrupt waits
	// always report one); 0 otherwise.
	Timestamp time.Duration
	// Gone reports that the driver no longer tracked the sequence number:
	// it completed long ago.
	Gone bool
}

// forever is a timeout the ioctl layer treats as unbounded: the context
// alone ends the wait.
const forever = math.MaxUint64

// Wait waits, within ctx, for the command submission seq to complete. A
// submission the device timed out or a reset aborted is an error
// (ioctl.ErrTimeout, unix.EIO). EIO does not say the engines stopped:
// the driver also answers it when it postpones a reset until the device
// is released (an eventfd registered, after a CS timeout or an engine
// error; common/device.c hl_device_cond_reset), and the submission's
// engines run on until that reset. A caller that frees memory on EIO
// checks first that device.Device.ResetCount moved, as package dma does. While a reset is under way the driver
// answers EBUSY, which says nothing about the submission: Wait asks again
// (internal/submit's retry policy: a pause from 1 ms doubling to 100 ms)
// until the driver gives the submission's verdict; when ctx ends first, or
// the device stays not operational for submit.BusyFor (10 s), the error
// matches ioctl.ErrNotOperational (and ctx's error when ctx ended).
//
// It replaces hlthunk_wait_for_cs and hlthunk_wait_for_cs_with_timestamp.
func (s *Streams) Wait(ctx context.Context, seq uint64) (Completion, error) {
	a := new(hl.WaitCSArgs)
	var busy submit.Busy
	for {
		*a = hl.WaitCSArgs{}
		a.In().SetSeq(seq)
		a.In().SetTimeoutUs(forever)
		again, err := busy.Retry(ctx, s.io.WaitCS(ctx, a), submit.BusyFor)
		if again {
			continue
		}
		if err != nil {
			return Completion{}, wrap("wait", err)
		}
		break
	}
	out := a.Out()
	if out.Status != hl.HL_WAIT_CS_STATUS_COMPLETED {
		return Completion{}, fmt.Errorf("wait: status %d", out.Status)
	}
	return completionOf(out), nil
}

func completionOf(out *hl.WaitCSOut) Completion {
	var c Completion
	if out.Flags&hl.HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD != 0 {
		c.Timestamp = time.Duration(out.TimestampNsec)
	}
	c.Gone = out.Flags&hl.HL_WAIT_CS_STATUS_FLAG_GONE != 0
	return c
}

// MaxMulti is the most sequence numbers one multi-CS wait takes
// (HL_WAIT_MULTI_CS_LIST_MAX_LEN).
const MaxMulti = hl.HL_WAIT_MULTI_CS_LIST_MAX_LEN

// MultiResult is what a multi-CS wait reports: bit i of Completed is set
// when seqs[i] completed (or is gone); Count is how many; Timestamp is the
// completion time the driver reports, when it has one, and Gone is set
// when it has none (the driver's GONE flag for multi-CS waits).
type MultiResult struct {
	Completed uint32
	Count     int
	Timestamp time.Duration
	Gone      bool
}

// WaitMulti waits, within ctx, until at least one of seqs (at most
// MaxMulti) completed, and reports which did. Gaudi only: Gaudi2 answers
// EPERM, which matches ErrNotSupported.
//
// It replaces hlthunk_wait_for_multi_cs and
// hlthunk_wait_for_multi_cs_with_timestamp.
func (s *Streams) WaitMulti(ctx context.Context, seqs []uint64) (MultiResult, error) {
	return s.multi(ctx, seqs, forever)
}

// PollMulti reports which of seqs completed, without waiting; ctx is
// checked before the request goes out.
func (s *Streams) PollMulti(ctx context.Context, seqs []uint64) (MultiResult, error) {
	return s.multi(ctx, seqs, 0)
}

func (s *Streams) multi(ctx context.Context, seqs []uint64, timeout uint64) (MultiResult, error) {
	if len(seqs) == 0 || len(seqs) > MaxMulti {
		return MultiResult{}, fmt.Errorf("multi-CS wait: %d sequence numbers (want 1 to %d): %w", len(seqs), MaxMulti, unix.EINVAL)
	}
	arr := make([]uint64, len(seqs))
	copy(arr, seqs)
	a := new(hl.WaitCSMultiArgs)
	var busy submit.Busy // EBUSY: asked again, as Wait does
	for {
		*a = hl.WaitCSMultiArgs{Seqs: hl.SlicePointer(arr), SeqArrLen: uint8(len(arr)), TimeoutUs: timeout}
		again, err := busy.Retry(ctx, s.io.WaitMultiCS(ctx, a), submit.BusyFor)
		if again {
			continue
		}
		if err != nil {
			return MultiResult{}, wrap("multi-CS wait", err)
		}
		break
	}
	out := a.Out()
	var r MultiResult
	if out.Status == hl.HL_WAIT_CS_STATUS_COMPLETED {
		r.Completed = out.CSCompletionMap
		r.Count = bits.OnesCount32(r.Completed)
		c := completionOf(out)
		r.Timestamp, r.Gone = c.Timestamp, c.Gone
	}
	return r, nil
}

// Interrupt ids that match a class of interrupts rather than one.
const (
	// AnyInterrupt matches every user completion queue interrupt
	// (HL_WAIT_CS_FLAGS_ANY_CQ_INTERRUPT).
	AnyInterrupt = hl.HL_WAIT_CS_FLAGS_ANY_CQ_INTERRUPT >> 20
	// AnyDecoderInterrupt matches every decoder interrupt
	// (HL_WAIT_CS_FLAGS_ANY_DEC_INTERRUPT).
	AnyDecoderInterrupt = hl.HL_WAIT_CS_FLAGS_ANY_DEC_INTERRUPT >> 20
)

// WaitInterrupt waits, within ctx, until user interrupt id (or
// AnyInterrupt) has fired with *counter at least target, and returns when
// the interrupt came (CLOCK_MONOTONIC; the call time when the counter was
// already there). The driver reads *counter from user memory for the whole
// wait; the argument holds it through a Pointer, so a Go variable is
// allocated where it cannot move, and mapped memory works too. Gaudi2 only
// (Gaudi answers EPERM, ErrNotSupported). A wait the driver answers while
// the device is in reset (EBUSY) fails at once with an error matching
// ioctl.ErrNotOperational: unlike a CS, an interrupt gets no verdict from
// a reset, and the counter may never reach target (internal/submit).
//
// It replaces hlthunk_wait_for_interrupt and
// hlthunk_wait_for_interrupt_with_timestamp.
func (s *Streams) WaitInterrupt(ctx context.Context, id uint32, counter *uint64, target uint64) (time.Duration, error) {
	a := &hl.WaitCSInterruptArgs{
		Addr:               hl.NewPointer(unsafe.Pointer(counter)),
		Target:             target,
		Flags:              id << 20,
		InterruptTimeoutUs: forever,
	}
	if err := s.io.WaitInterrupt(ctx, a); err != nil {
		return 0, wrap("wait for interrupt", err)
	}
	return time.Duration(a.Out().TimestampNsec), nil
}

// WaitKernelCQ waits, within ctx, until user interrupt id (or
// AnyInterrupt) has fired with the 64-bit counter at index offset of the
// kernel command buffer cqHandle (a CQ counters buffer) at least target,
// and returns when the interrupt came. Gaudi2 only.
//
// It replaces hlthunk_wait_for_interrupt_by_handle and
// hlthunk_wait_for_interrupt_by_handle_with_timestamp.
func (s *Streams) WaitKernelCQ(ctx context.Context, id uint32, cqHandle, offset, target uint64) (time.Duration, error) {
	a := new(hl.WaitCSArgs)
	in := a.In()
	in.Flags = hl.HL_WAIT_CS_FLAGS_INTERRUPT | hl.HL_WAIT_CS_FLAGS_INTERRUPT_KERNEL_CQ | id<<20
	in.SetCQCountersHandle(cqHandle)
	in.CQCountersOffset = offset
	in.SetTarget(target)
	in.SetInterruptTimeoutUs(forever)
	if err := s.io.WaitCS(ctx, a); err != nil {
		return 0, wrap("wait for interrupt", err)
	}
	return time.Duration(a.Out().TimestampNsec), nil
}

// RegisterTimestamp asks the driver to write, into element index of buf,
// the time user interrupt id (or AnyInterrupt) brings the 64-bit counter
// at index cqOffset of the kernel command buffer cqHandle to at least
// target; it does not wait. When the counter is there already the time is
// written at once. Registering the same element again moves it. Gaudi2
// only. ctx is checked before the request goes out.
//
// It replaces hlthunk_register_timestamp_interrupt.
func (s *Streams) RegisterTimestamp(ctx context.Context, id uint32, cqHandle, cqOffset, target uint64, buf *TimestampBuffer, index uint64) error {
	a := new(hl.WaitCSArgs)
	in := a.In()
	in.Flags = hl.HL_WAIT_CS_FLAGS_INTERRUPT | hl.HL_WAIT_CS_FLAGS_INTERRUPT_KERNEL_CQ |
		hl.HL_WAIT_CS_FLAGS_REGISTER_INTERRUPT | id<<20
	in.SetCQCountersHandle(cqHandle)
	in.CQCountersOffset = cqOffset
	in.SetTarget(target)
	in.TimestampHandle = buf.handle
	in.TimestampOffset = index
	in.SetInterruptTimeoutUs(0xff) // as hl-thunk: a registration does not wait
	if err := s.io.WaitCS(ctx, a); err != nil {
		return wrap("register timestamp", err)
	}
	return nil
}

// TimestampBuffer is a driver timestamp store (MEMORY TS_ALLOC) mapped
// into the process: n 64-bit elements the driver writes interrupt times
// into (RegisterTimestamp). Safe for concurrent use; Close is idempotent.
type TimestampBuffer struct {
	s      *Streams
	handle uint64
	n      int

	mu  sync.Mutex
	mem []byte // nil once closed
}

// AllocTimestamps allocates a timestamp store of n elements (1 to
// TS_MAX_ELEMENTS_NUM) and maps it.
//
// It replaces hlthunk_allocate_timestamp_elements (and the mmap hl-thunk
// leaves to its caller).
func (s *Streams) AllocTimestamps(n int) (*TimestampBuffer, error) {
	if n <= 0 || n > hl.TS_MAX_ELEMENTS_NUM {
		return nil, fmt.Errorf("allocate timestamps: %d elements: %w", n, unix.EINVAL)
	}
	a := new(hl.MemArgs)
	a.In().Op = hl.HL_MEM_OP_TS_ALLOC
	a.In().NumOfElements = uint32(n)
	if err := s.io.Memory(a); err != nil {
		return nil, wrap("allocate timestamps", err)
	}
	h := a.Out().Handle()
	mem, err := s.io.Mmap(int64(h), n*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map timestamps: %w", err)
	}
	return &TimestampBuffer{s: s, handle: h, n: n, mem: mem}, nil
}

// Handle returns the store's handle (its mmap offset).
func (b *TimestampBuffer) Handle() uint64 { return b.handle }

// Len returns the number of elements.
func (b *TimestampBuffer) Len() int { return b.n }

// At returns element i: the CLOCK_MONOTONIC time the driver wrote, or 0.
// It returns 0 after Close or for i out of range.
func (b *TimestampBuffer) At(i int) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mem == nil || i < 0 || i >= b.n {
		return 0
	}
	return time.Duration(atomic.LoadUint64((*uint64)(unsafe.Pointer(&b.mem[i*8]))))
}

// Clear sets element i to 0, so a later registration's write shows.
func (b *TimestampBuffer) Clear(i int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mem != nil && i >= 0 && i < b.n {
		atomic.StoreUint64((*uint64)(unsafe.Pointer(&b.mem[i*8])), 0)
	}
}

// Close unmaps the store; the driver frees it when the device file closes
// (the uapi has no free for timestamp stores).
func (b *TimestampBuffer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mem == nil {
		return nil
	}
	err := b.s.io.Munmap(b.mem)
	b.mem = nil
	return err
}
