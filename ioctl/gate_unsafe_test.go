package ioctl

import (
	"errors"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// fioclex is FIOCLEX (include/uapi/asm-generic/ioctls.h), which x/sys
// does not name.
const fioclex = 0x5451

// openDevNull returns a kernelFile on /dev/null, whose FIOCLEX (set
// close-on-exec, already set) is a real, cheap ioctl that succeeds.
func openDevNull(tb testing.TB) *kernelFile {
	f, err := OpenFile("/dev/null")
	if err != nil {
		tb.Fatal(err)
	}
	return f.(*kernelFile)
}

// TestDeviceKernelFileGate: a Device calls its kernel file without the
// file's own gate (ioctlOpen), so its own gate alone must keep Close from
// closing the descriptor while a call uses it. Calls race Close; under
// -race the read of the descriptor in ioctlOpen and its write in Close are
// checked to be ordered, and every call either succeeds or reports the
// Device closed.
func TestDeviceKernelFileGate(t *testing.T) {
	for range 20 {
		kf := openDevNull(t)
		d := New(kf)
		if d.kf != kf {
			t.Fatal("Device over a kernel file does not call it directly")
		}
		var wg sync.WaitGroup
		started := make(chan struct{}, 4)
		for range 4 {
			wg.Go(func() {
				for i := 0; ; i++ {
					err := d.attempt(fioclex, nil)
					if i == 0 {
						started <- struct{}{}
					}
					if errors.Is(err, errDeviceClosed) {
						return
					}
					if err != nil {
						t.Errorf("FIOCLEX during Close = %v, want nil or closed", err)
						return
					}
				}
			})
		}
		for range 4 {
			<-started
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if kf.fd != -1 {
			t.Errorf("descriptor %d after Close, want -1", kf.fd)
		}
	}
}

// BenchmarkKernelFileIoctl measures one real ioctl (FIOCLEX on /dev/null)
// through a Device (one gate), through the kernel file alone (its gate),
// and as a bare unix.Syscall, the reference, in the same run.
//
//	go test ./ioctl -run '^$' -bench KernelFileIoctl -benchmem -count 10
func BenchmarkKernelFileIoctl(b *testing.B) {
	kf := openDevNull(b)
	d := New(kf)
	b.Cleanup(func() { d.Close() })
	for _, c := range []struct {
		name string
		fn   func() error
	}{
		{"device", func() error { return d.attempt(fioclex, nil) }},
		{"file", func() error { return kf.Ioctl(fioclex, nil) }},
		{"syscall", func() error {
			if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(kf.fd), fioclex, 0); errno != 0 {
				return errno
			}
			return nil
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.fn(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
