package ioctl_test

import (
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestEINTRRetried(t *testing.T) {
	for _, c := range typedCalls {
		t.Run(c.op, func(t *testing.T) {
			var args [][]byte
			d, r, _ := newDRMDevice(t, func(req uint, arg unsafe.Pointer) error {
				args = append(args, argBytes(req, arg))
				if len(args) <= 2 {
					scribble(req, arg)
					return unix.EINTR
				}
				return nil
			})
			if err := c.call(d); err != nil {
				t.Fatalf("%s = %v, want nil after two EINTR", c.op, err)
			}
			if n := len(r.requests()); n != 3 {
				t.Fatalf("%d ioctls, want 3", n)
			}
			for i := 1; i < len(args); i++ {
				first, retry := args[0], args[i]
				if c.op == "WAIT_CS" {
					// timeout_us (bytes 8-15) shrinks with the time spent; see
					// TestWaitCSRemainingTime.
					first = append(append([]byte(nil), first[:8]...), first[16:]...)
					retry = append(append([]byte(nil), retry[:8]...), retry[16:]...)
				}
				if diff := cmp.Diff(first, retry); diff != "" {
					t.Errorf("attempt %d args differ from the first (-first +retry):\n%s", i+1, diff)
				}
			}
		})
	}
}

func TestEINTRRetriedUntilAnswer(t *testing.T) {
	calls := 0
	d, _, _ := newDRMDevice(t, func(req uint, arg unsafe.Pointer) error {
		calls++
		if calls < 100 {
			return unix.EINTR
		}
		return unix.ENOMEM
	})
	err := callFor(t, "MEMORY").call(d)
	if want := "ioctl MEMORY ALLOC: cannot allocate memory"; err == nil || err.Error() != want {
		t.Errorf("Memory() = %v, want %q", err, want)
	}
	if calls != 100 {
		t.Errorf("%d ioctls, want 100", calls)
	}
}
