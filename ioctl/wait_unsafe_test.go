package ioctl

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/ioctl/internal/fakefile"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// waitAttempt is what the fake driver saw in one WAIT_CS.
type waitAttempt struct {
	Seq, TimeoutUs, InterruptTimeoutUs uint64
	Flags                              uint32
}

// waitFake is a fake driver for WAIT_CS: answer decides each attempt's
// outcome from its number (0-based) and the arguments. It records what it saw.
type waitFake struct {
	mu       sync.Mutex
	attempts []waitAttempt
	answer   func(n int, args *hl.WaitCSArgs) error
}

func (w *waitFake) ioctl(req uint, arg unsafe.Pointer) error {
	if req != hl.DRM_IOCTL_HL_WAIT_CS {
		return nil // the probe
	}
	args := fakefile.Arg[hl.WaitCSArgs](arg)
	in := args.In()
	w.mu.Lock()
	n := len(w.attempts)
	w.attempts = append(w.attempts, waitAttempt{in.Seq(), in.TimeoutUs(), in.InterruptTimeoutUs(), in.Flags})
	w.mu.Unlock()
	return w.answer(n, args)
}

func (w *waitFake) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.attempts = nil
}

func (w *waitFake) seen() []waitAttempt {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]waitAttempt(nil), w.attempts...)
}

// complete writes a driver answer into args, clearing the input as the
// driver does.
func complete(args *hl.WaitCSArgs, status uint32) {
	*args = hl.WaitCSArgs{}
	args.Out().Status = status
}

// newWaitDevice returns a Device on w with a fake clock and the given slice.
func newWaitDevice(t *testing.T, w *waitFake, slice time.Duration) (*Device, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Now()}
	d := New(fakefile.New(w.ioctl))
	d.now = clk.now
	d.slice = slice
	if e := d.Encoding(); e != EncodingDRM {
		t.Fatalf("Encoding() = %v", e)
	}
	return d, clk
}

func seqWaitArgs(seq, timeoutUs uint64) *hl.WaitCSArgs {
	var args hl.WaitCSArgs
	args.In().SetSeq(seq)
	args.In().SetTimeoutUs(timeoutUs)
	return &args
}

func TestWaitCSRemainingTime(t *testing.T) {
	var clk *fakeClock
	w := &waitFake{answer: func(n int, args *hl.WaitCSArgs) error {
		switch n {
		case 0:
			clk.advance(300 * time.Millisecond)
			return unix.EINTR
		case 1:
			clk.advance(200 * time.Millisecond)
			return unix.EINTR
		}
		complete(args, hl.HL_WAIT_CS_STATUS_COMPLETED)
		return nil
	}}
	d, c := newWaitDevice(t, w, time.Hour)
	clk = c
	if err := d.WaitCS(context.Background(), seqWaitArgs(42, 1_000_000)); err != nil {
		t.Fatalf("WaitCS() = %v", err)
	}
	want := []waitAttempt{
		{Seq: 42, TimeoutUs: 1_000_000},
		{Seq: 42, TimeoutUs: 700_000},
		{Seq: 42, TimeoutUs: 500_000},
	}
	if diff := cmp.Diff(want, w.seen()); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
}

func TestWaitCSRealClockShrinks(t *testing.T) {
	w := &waitFake{answer: func(n int, args *hl.WaitCSArgs) error {
		if n == 0 {
			time.Sleep(20 * time.Millisecond)
			return unix.EINTR
		}
		complete(args, hl.HL_WAIT_CS_STATUS_COMPLETED)
		return nil
	}}
	d := New(fakefile.New(w.ioctl))
	d.slice = time.Hour
	if err := d.WaitCS(context.Background(), seqWaitArgs(1, 1_000_000)); err != nil {
		t.Fatalf("WaitCS() = %v", err)
	}
	got := w.seen()
	if len(got) != 2 {
		t.Fatalf("%d attempts, want 2", len(got))
	}
	elapsed := got[0].TimeoutUs - got[1].TimeoutUs
	if elapsed < 20_000 || elapsed > 500_000 {
		t.Errorf("second timeout %dus is %dus shorter than the first, want about 20000us", got[1].TimeoutUs, elapsed)
	}
}

func TestWaitCSDeadlinePassedDuringEINTR(t *testing.T) {
	var clk *fakeClock
	w := &waitFake{answer: func(n int, args *hl.WaitCSArgs) error {
		if n == 0 {
			clk.advance(2 * time.Second)
			return unix.EINTR
		}
		complete(args, hl.HL_WAIT_CS_STATUS_BUSY)
		return nil
	}}
	d, c := newWaitDevice(t, w, time.Hour)
	clk = c
	args := seqWaitArgs(3, 1_000_000)
	if err := d.WaitCS(context.Background(), args); err != nil {
		t.Fatalf("WaitCS() = %v, want nil with status BUSY", err)
	}
	if s := args.Out().Status; s != hl.HL_WAIT_CS_STATUS_BUSY {
		t.Errorf("status = %d, want BUSY", s)
	}
	want := []waitAttempt{{Seq: 3, TimeoutUs: 1_000_000}, {Seq: 3, TimeoutUs: 0}}
	if diff := cmp.Diff(want, w.seen()); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
}

func TestWaitCSSlices(t *testing.T) {
	var clk *fakeClock
	w := &waitFake{answer: func(n int, args *hl.WaitCSArgs) error {
		clk.advance(time.Duration(args.In().TimeoutUs()) * time.Microsecond)
		complete(args, hl.HL_WAIT_CS_STATUS_BUSY)
		return nil
	}}
	d, c := newWaitDevice(t, w, 10*time.Millisecond)
	clk = c
	ctx, cancel := context.WithCancel(context.Background()) // cancellable: sliced
	defer cancel()
	args := seqWaitArgs(9, 35_000)
	if err := d.WaitCS(ctx, args); err != nil {
		t.Fatalf("WaitCS() = %v", err)
	}
	if s := args.Out().Status; s != hl.HL_WAIT_CS_STATUS_BUSY {
		t.Errorf("status = %d, want BUSY", s)
	}
	want := []waitAttempt{
		{Seq: 9, TimeoutUs: 10_000},
		{Seq: 9, TimeoutUs: 10_000},
		{Seq: 9, TimeoutUs: 10_000},
		{Seq: 9, TimeoutUs: 5_000},
	}
	if diff := cmp.Diff(want, w.seen()); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
}

// A wait nothing can cancel is one call for the whole time; an unbounded
// one is still sliced, so that Close gets its turn.
func TestWaitCSUncancellableWholeTime(t *testing.T) {
	var clk *fakeClock
	w := &waitFake{answer: func(n int, args *hl.WaitCSArgs) error {
		if n >= 3 {
			complete(args, hl.HL_WAIT_CS_STATUS_COMPLETED)
			return nil
		}
		clk.advance(time.Duration(args.In().TimeoutUs()) * time.Microsecond)
		complete(args, hl.HL_WAIT_CS_STATUS_BUSY)
		return nil
	}}
	d, c := newWaitDevice(t, w, 10*time.Millisecond)
	clk = c
	if err := d.WaitCS(context.Background(), seqWaitArgs(9, 35_000)); err != nil {
		t.Fatalf("WaitCS() = %v", err)
	}
	if diff := cmp.Diff([]waitAttempt{{Seq: 9, TimeoutUs: 35_000}}, w.seen()); diff != "" {
		t.Errorf("bounded wait: attempts (-want +got):\n%s", diff)
	}
	w.reset()
	if err := d.WaitCS(context.Background(), seqWaitArgs(9, math.MaxUint64)); err != nil {
		t.Fatalf("WaitCS() = %v", err)
	}
	want := []waitAttempt{{Seq: 9, TimeoutUs: 10_000}, {Seq: 9, TimeoutUs: 10_000}, {Seq: 9, TimeoutUs: 10_000}, {Seq: 9, TimeoutUs: 10_000}}
	if diff := cmp.Diff(want, w.seen()); diff != "" {
		t.Errorf("unbounded wait: attempts (-want +got):\n%s", diff)
	}
}

func TestWaitCSUnbounded(t *testing.T) {
	w := &waitFake{answer: func(n int, args *hl.WaitCSArgs) error {
		if n < 3 {
			complete(args, hl.HL_WAIT_CS_STATUS_BUSY)
		} else {
			complete(args, hl.HL_WAIT_CS_STATUS_COMPLETED)
		}
		return nil
	}}
	d, _ := newWaitDevice(t, w, 10*time.Millisecond)
	if err := d.WaitCS(context.Background(), seqWaitArgs(5, math.MaxUint64)); err != nil {
		t.Fatalf("WaitCS() = %v", err)
	}
	want := []waitAttempt{
		{Seq: 5, TimeoutUs: 10_000},
		{Seq: 5, TimeoutUs: 10_000},
		{Seq: 5, TimeoutUs: 10_000},
		{Seq: 5, TimeoutUs: 10_000},
	}
	if diff := cmp.Diff(want, w.seen()); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
}

func TestWaitCSPoll(t *testing.T) {
	w := &waitFake{answer: func(n int, args *hl.WaitCSArgs) error {
		complete(args, hl.HL_WAIT_CS_STATUS_BUSY)
		return nil
	}}
	d, _ := newWaitDevice(t, w, 10*time.Millisecond)
	args := seqWaitArgs(5, 0)
	if err := d.WaitCS(context.Background(), args); err != nil {
		t.Fatalf("WaitCS() = %v", err)
	}
	if diff := cmp.Diff([]waitAttempt{{Seq: 5}}, w.seen()); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
	if s := args.Out().Status; s != hl.HL_WAIT_CS_STATUS_BUSY {
		t.Errorf("status = %d, want BUSY", s)
	}
}

func TestWaitCSContextDeadlineFirst(t *testing.T) {
	var clk *fakeClock
	w := &waitFake{answer: func(n int, args *hl.WaitCSArgs) error {
		clk.advance(time.Duration(args.In().TimeoutUs()) * time.Microsecond)
		complete(args, hl.HL_WAIT_CS_STATUS_BUSY)
		return nil
	}}
	d, c := newWaitDevice(t, w, 10*time.Millisecond)
	clk = c
	// The fake clock is not the one ctx's timer runs on, so ctx has not
	// expired when the fake driver's time runs out.
	ctx, cancel := context.WithDeadline(context.Background(), c.now().Add(25*time.Millisecond))
	defer cancel()
	err := d.WaitCS(ctx, seqWaitArgs(8, 10_000_000))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitCS() = %v, want an error matching context.DeadlineExceeded", err)
	}
	want := []waitAttempt{
		{Seq: 8, TimeoutUs: 10_000},
		{Seq: 8, TimeoutUs: 10_000},
		{Seq: 8, TimeoutUs: 5_000},
	}
	if diff := cmp.Diff(want, w.seen()); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
}

func TestWaitCSCancel(t *testing.T) {
	w := &waitFake{answer: func(n int, args *hl.WaitCSArgs) error {
		time.Sleep(time.Duration(args.In().TimeoutUs()) * time.Microsecond)
		complete(args, hl.HL_WAIT_CS_STATUS_BUSY)
		return nil
	}}
	d := New(fakefile.New(w.ioctl))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	start := time.Now()
	err := d.WaitCS(ctx, seqWaitArgs(1, 60_000_000))
	elapsed := time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("WaitCS() = %v, want an error matching context.Canceled", err)
	}
	if elapsed > time.Second {
		t.Errorf("WaitCS returned %v after cancel, want promptly", elapsed)
	}
	if n := len(w.seen()); n < 2 {
		t.Errorf("%d attempts, want the wait issued in slices", n)
	}
}

func TestWaitCSCanceledBeforeStart(t *testing.T) {
	w := &waitFake{answer: func(n int, args *hl.WaitCSArgs) error {
		t.Error("WAIT_CS issued with a canceled context")
		return nil
	}}
	d, _ := newWaitDevice(t, w, 10*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.WaitCS(ctx, seqWaitArgs(1, 1000)); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitCS() = %v, want context.Canceled", err)
	}
}

func TestWaitCSOutcomes(t *testing.T) {
	tests := []struct {
		name      string
		errno     error  // the driver's return value
		status    uint32 // the driver's status
		wantErrno error  // nil: WaitCS succeeds
		timeout   bool   // matches ErrTimeout
	}{
		{"completed", nil, hl.HL_WAIT_CS_STATUS_COMPLETED, nil, false},
		{"timedout errno", unix.ETIMEDOUT, hl.HL_WAIT_CS_STATUS_TIMEDOUT, unix.ETIMEDOUT, true},
		{"timedout status", nil, hl.HL_WAIT_CS_STATUS_TIMEDOUT, unix.ETIMEDOUT, true},
		{"aborted errno", unix.EIO, hl.HL_WAIT_CS_STATUS_ABORTED, unix.EIO, false},
		{"aborted status", nil, hl.HL_WAIT_CS_STATUS_ABORTED, unix.EIO, false},
		{"not operational", unix.EBUSY, 0, unix.EBUSY, false},
		{"unknown seq", unix.EINVAL, 0, unix.EINVAL, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &waitFake{answer: func(n int, args *hl.WaitCSArgs) error {
				complete(args, tt.status)
				return tt.errno
			}}
			d, _ := newWaitDevice(t, w, 10*time.Millisecond)
			args := seqWaitArgs(1, 1000)
			err := d.WaitCS(context.Background(), args)
			if tt.wantErrno == nil {
				if err != nil {
					t.Fatalf("WaitCS() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErrno) {
				t.Errorf("WaitCS() = %v, want an error matching %v", err, tt.wantErrno)
			}
			if got := errors.Is(err, ErrTimeout); got != tt.timeout {
				t.Errorf("errors.Is(%v, ErrTimeout) = %v, want %v", err, got, tt.timeout)
			}
			var e *Error
			if !errors.As(err, &e) || e.Op != "WAIT_CS" {
				t.Errorf("WaitCS() = %#v, want an *Error for WAIT_CS", err)
			}
			if s := args.Out().Status; s != tt.status {
				t.Errorf("status = %d, want %d", s, tt.status)
			}
			if n := len(w.seen()); n != 1 {
				t.Errorf("%d attempts, want 1", n)
			}
		})
	}
}

func TestWaitCSInterruptUsesInterruptTimeout(t *testing.T) {
	var clk *fakeClock
	w := &waitFake{answer: func(n int, args *hl.WaitCSArgs) error {
		if n == 0 {
			clk.advance(400 * time.Microsecond)
			return unix.EINTR
		}
		complete(args, hl.HL_WAIT_CS_STATUS_COMPLETED)
		return nil
	}}
	d, c := newWaitDevice(t, w, time.Hour)
	clk = c
	var args hl.WaitCSInterruptArgs
	const flags = hl.HL_WAIT_CS_FLAGS_INTERRUPT | 0x00300000 // interrupt id 3
	value := new(uint64)
	args.Flags = flags
	args.Addr = hl.NewPointer(unsafe.Pointer(value))
	args.Target = 77
	args.InterruptTimeoutUs = 1000
	if err := d.WaitInterrupt(context.Background(), &args); err != nil {
		t.Fatalf("WaitInterrupt() = %v", err)
	}
	addr := uint64(uintptr(unsafe.Pointer(value)))
	want := []waitAttempt{
		{Seq: addr, TimeoutUs: 77, InterruptTimeoutUs: 1000, Flags: flags},
		{Seq: addr, TimeoutUs: 77, InterruptTimeoutUs: 600, Flags: flags},
	}
	if diff := cmp.Diff(want, w.seen()); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
}

func TestWaitCSRefusesUserAddresses(t *testing.T) {
	w := &waitFake{answer: func(n int, args *hl.WaitCSArgs) error {
		complete(args, hl.HL_WAIT_CS_STATUS_COMPLETED)
		return nil
	}}
	d, _ := newWaitDevice(t, w, time.Hour)
	for _, flags := range []uint32{hl.HL_WAIT_CS_FLAGS_MULTI_CS, hl.HL_WAIT_CS_FLAGS_INTERRUPT} {
		var args hl.WaitCSArgs
		args.In().Flags = flags
		err := d.WaitCS(context.Background(), &args)
		if !errors.Is(err, unix.EINVAL) {
			t.Errorf("WaitCS(flags %#x) = %v, want EINVAL (the view with a Pointer is required)", flags, err)
		}
	}
	if n := len(w.seen()); n != 0 {
		t.Errorf("%d attempts reached the driver, want 0", n)
	}
}

func TestWaitCSRegisterIssuedOnce(t *testing.T) {
	w := &waitFake{answer: func(n int, args *hl.WaitCSArgs) error {
		complete(args, hl.HL_WAIT_CS_STATUS_BUSY)
		return nil
	}}
	d, _ := newWaitDevice(t, w, 10*time.Millisecond)
	var args hl.WaitCSArgs
	const flags = hl.HL_WAIT_CS_FLAGS_INTERRUPT | hl.HL_WAIT_CS_FLAGS_INTERRUPT_KERNEL_CQ | hl.HL_WAIT_CS_FLAGS_REGISTER_INTERRUPT
	args.In().Flags = flags
	args.In().SetInterruptTimeoutUs(123_456_789)
	if err := d.WaitCS(context.Background(), &args); err != nil {
		t.Fatalf("WaitCS() = %v", err)
	}
	want := []waitAttempt{{InterruptTimeoutUs: 123_456_789, Flags: flags}}
	if diff := cmp.Diff(want, w.seen()); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
}

func TestWaitCSClose(t *testing.T) {
	w := &waitFake{answer: func(n int, args *hl.WaitCSArgs) error {
		time.Sleep(time.Duration(args.In().TimeoutUs()) * time.Microsecond)
		complete(args, hl.HL_WAIT_CS_STATUS_BUSY)
		return nil
	}}
	d := New(fakefile.New(w.ioctl))
	if e := d.Encoding(); e != EncodingDRM {
		t.Fatalf("Encoding() = %v", e)
	}
	time.AfterFunc(30*time.Millisecond, func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background()) // sliced, so Close gets its turn
	defer cancel()
	err := d.WaitCS(ctx, seqWaitArgs(1, 60_000_000))
	if !errors.Is(err, ErrClosed) {
		t.Errorf("WaitCS() = %v, want an error matching ErrClosed", err)
	}
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("WaitCS returned %v after Close, want promptly", elapsed)
	}
}

func TestCeilMicroseconds(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want uint64
	}{
		{-time.Second, 0},
		{0, 0},
		{1, 1},
		{999, 1},
		{1000, 1},
		{1001, 2},
		{time.Second, 1_000_000},
	}
	for _, tt := range tests {
		if got := ceilMicroseconds(tt.in); got != tt.want {
			t.Errorf("ceilMicroseconds(%v) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
