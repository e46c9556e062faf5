package sim

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/gaudi-go/gaudi/internal/strict"
	"golang.org/x/sys/unix"
)

// Strict mode's argument checks (strict.go).
//
// The memory an argument names by address (a CS's chunk arrays, a wait's
// sequence array, INFO's answer buffer: internal/strict.Regions) must stay
// where it is, holding what it held, for the whole call and every retry.
// The simulator serves the call on the caller's goroutine and reads those
// addresses as integers; memory on that goroutine's stack can move under
// them at any function call, the simulator's own included. Every call
// with such addresses is checked:
//
//   - At its start, no region may lie on the calling goroutine's stack in
//     use (internal/strict.StackBounds, a frame pointer walk on amd64 and
//     arm64): such a call fails with a *ViolationError and is recorded as
//     ViolationStackAddress.
//   - The regions the driver only reads must hold, at the end of the call,
//     the bytes they held at its start (ViolationArgumentChanged): a stale
//     address into stack frames that have returned, which the
//     simulator's own calls overwrite, or memory another goroutine rewrote
//     during the call.
//   - For a sample of calls (the first two of each ioctl on each file,
//     then one in 4096), before the call is served, the calling goroutine's
//     stack is moved (internal/strict.MoveStack), the stack memory the
//     runtime freed is taken and filled by other goroutines
//     (internal/strict.Poison), and every region that is read or written
//     must still hold what it held (ViolationArgumentChanged; the call
//     fails): an address into stack memory the goroutine used before.
//     Whether the freed memory is taken is up to the runtime, so this
//     check may miss; the first one does not.
//
// Shared regions (the counter an interrupt wait watches, host memory given
// to MAP) are only checked against the stack, since their bytes may
// change during the call by design.

// stackBounds is strict.StackBounds; a test turns it off to exercise the
// stack-move check alone.
var stackBounds = defaultStackBounds

func defaultStackBounds() (lo, hi uintptr, ok bool) { return strict.StackBounds() }

// moveSample tells whether the n-th call (from 1) of an ioctl on a file
// gets the stack-move check.
func moveSample(n uint32) bool { return n <= 2 || n%4096 == 0 }

// argCheck is what strict mode saw of a call's argument at its start.
type argCheck struct {
	regions []strict.Region
	snaps   [][]byte // per region: its bytes at the start, nil when not kept
	buf     []byte   // holds the snaps
	now     []byte   // a region's bytes read again
}

var argChecks = sync.Pool{New: func() any { return new(argCheck) }}

// readUser reads len(b) bytes of the caller's memory at addr for the
// checks, with process_vm_readv on this process: unlike copyIn it turns
// no integer into a pointer, so the race detector's pointer checks do not
// stop the program on an address into a stack that has moved, which is
// what the checks look for.
func readUser(addr uint64, b []byte) bool {
	if len(b) == 0 {
		return true
	}
	if directCopy.Load() {
		return copyIn(addr, b) == nil
	}
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
	n, err := unix.ProcessVMReadv(selfPID, local, remote, 0)
	return vmResult(n, len(b), err, func() error {
		if readUser(addr, b) {
			return nil
		}
		return unix.EFAULT
	}) == nil
}

// strictDispatch is dispatch in strict mode: the argument checks around
// the call.
func (f *File) strictDispatch(idx int, arg unsafe.Pointer) error {
	c, err := f.strictEnter(idx, arg)
	if err != nil {
		return err
	}
	err = f.serve(idx, arg, nil)
	if c != nil {
		f.strictExit(idx, c)
	}
	return err
}

// strictEnter checks the regions of a call's argument before it is
// served and keeps what the end of the call compares with. It returns nil
// when the argument names no memory.
func (f *File) strictEnter(idx int, arg unsafe.Pointer) (*argCheck, error) {
	c := argChecks.Get().(*argCheck)
	c.regions = strict.AppendRegions(c.regions[:0], uint(idx), arg, readUser)
	if len(c.regions) == 0 {
		argChecks.Put(c)
		return nil, nil
	}
	op := ioctlTable[idx].name
	lo, hi, ok := stackBounds()
	if ok {
		for _, r := range c.regions {
			if strict.OnStack(r.Addr, r.Len, lo, hi) {
				argChecks.Put(c)
				return nil, f.argViolation(Violation{
					Kind: ViolationStackAddress, Op: op, Addr: r.Addr,
					Detail: fmt.Sprintf("%s: %d bytes at %#x lie on the calling goroutine's stack [%#x, %#x), which the runtime may move at any function call; keep such memory where it cannot move (the heap, held through an hl.Pointer, or mmap)",
						r.What, r.Len, r.Addr, lo, hi),
				})
			}
		}
	}
	c.snaps = c.snaps[:0]
	c.buf = c.buf[:0]
	for _, r := range c.regions {
		if r.Use == strict.Shared || r.Len > 1<<20 {
			c.snaps = append(c.snaps, nil)
			continue
		}
		off := len(c.buf)
		c.buf = slices.Grow(c.buf, int(r.Len))[:off+int(r.Len)]
		if !readUser(r.Addr, c.buf[off:]) {
			c.buf = c.buf[:off]
			c.snaps = append(c.snaps, nil) // the call answers EFAULT
			continue
		}
		c.snaps = append(c.snaps, c.buf[off:len(c.buf):len(c.buf)])
	}
	if !moveSample(f.strictCalls[idx].Add(1)) {
		return c, nil
	}
	moved, depth := strict.MoveStack()
	if depth > 256<<10 {
		runtime.GC() // let the stack shrink back
	}
	if !moved {
		return c, nil
	}
	// The poisoners take stack memory up to twice what the goroutine used,
	// or 256 KiB when that is not known.
	used := uintptr(256 << 10)
	if ok {
		used = 16<<10 + 2*(hi-lo)
	}
	release := strict.Poison(4, used)
	defer release()
	for i, r := range c.regions {
		s := c.snaps[i]
		if s == nil {
			continue
		}
		now := c.reread(r)
		if now != nil && bytes.Equal(now, s) {
			continue
		}
		v := Violation{
			Kind: ViolationArgumentChanged, Op: op, Addr: r.Addr,
			Detail: fmt.Sprintf("%s: after the simulator moved the calling goroutine's stack, %d bytes at %#x no longer hold what they held when the call began (an address into stack memory?):\nbefore % x\nafter  % x",
				r.What, r.Len, r.Addr, head(s), head(now)),
		}
		argChecks.Put(c)
		return nil, f.argViolation(v)
	}
	return c, nil
}

// strictExit checks at the end of a call that the regions the driver only
// reads still hold what they held at its start.
func (f *File) strictExit(idx int, c *argCheck) {
	defer argChecks.Put(c)
	for i, r := range c.regions {
		s := c.snaps[i]
		if s == nil || r.Use != strict.In {
			continue
		}
		got := c.reread(r)
		if got != nil && bytes.Equal(got, s) {
			continue
		}
		f.dev.violate(f.serial, Violation{
			Kind: ViolationArgumentChanged, Op: ioctlTable[idx].name, Addr: r.Addr,
			Detail: fmt.Sprintf("%s: %d bytes at %#x changed during the call (a stale address into stack frames that returned, or memory rewritten meanwhile):\nbefore % x\nafter  % x",
				r.What, r.Len, r.Addr, head(s), head(got)),
		})
	}
}

// reread reads a region again into c.now; nil when it cannot be read.
func (c *argCheck) reread(r strict.Region) []byte {
	c.now = slices.Grow(c.now[:0], int(r.Len))[:r.Len]
	if !readUser(r.Addr, c.now) {
		return nil
	}
	return c.now
}

// argViolation records a violation that fails the call, and returns the
// call's error.
func (f *File) argViolation(v Violation) error {
	f.dev.violate(f.serial, v)
	return &ViolationError{Violations: []Violation{v}}
}

func head(b []byte) []byte { return b[:min(len(b), 32)] }
