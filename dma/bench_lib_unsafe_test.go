package dma

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// instantFile is a simulated device whose CSs complete the moment they are
// submitted, without running: CS answers the next sequence number and
// WAIT_CS answers COMPLETED; everything else (INFO, MEMORY, CB, mmap) is
// the simulator's. A benchmark on it measures the library's cost of a
// copy: validation, holds, encoding, the CS and the wait.
//
// On a Gaudi3 the PDMA channels' register blocks (MEMORY MAP_BLOCK, which
// it answers itself, then mmap of the handle) are plain anonymous memory,
// which no simulated channel reads, and a WAIT_CS on a value in user memory (the channel's
// completion counter) first stores the target there, as the channel would
// once the job is done, then answers COMPLETED: what remains is the
// library's cost of a job, the ring and register writes and the wait.
type instantFile struct {
	ioctl.File
	seq atomic.Uint64
	// syscall makes every CS and WAIT_CS first issue one real cheap system
	// call (getppid) through the runtime's ordinary entry, as a kernel
	// ioctl would, for BenchmarkPreparedRunVsC.
	syscall bool
	// rawCS issues CS's system call through the raw entry
	// (unix.RawSyscall, no scheduler hand-off); WAIT_CS keeps the
	// ordinary one.
	rawCS bool

	mu     sync.Mutex
	blocks map[int64]bool // the mmap offsets of register blocks (Gaudi3)
	anon   map[*byte]bool // the register blocks mapped
}

func (f *instantFile) Ioctl(req uint, arg unsafe.Pointer) error {
	if f.syscall && (req == uint(hl.DRM_IOCTL_HL_CS) || req == uint(hl.DRM_IOCTL_HL_WAIT_CS)) {
		if f.rawCS && req == uint(hl.DRM_IOCTL_HL_CS) {
			unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
		} else {
			unix.Syscall(unix.SYS_GETPPID, 0, 0, 0)
		}
	}
	switch req {
	case uint(hl.DRM_IOCTL_HL_CS):
		a := (*hl.CSArgs)(arg)
		*a = hl.CSArgs{}
		a.Out().SetSeq(f.seq.Add(1))
		return nil
	case uint(hl.DRM_IOCTL_HL_WAIT_CS):
		a := (*hl.WaitCSArgs)(arg)
		if a.In().Flags&hl.HL_WAIT_CS_FLAGS_INTERRUPT != 0 {
			ia := (*hl.WaitCSInterruptArgs)(arg)
			// ia.Addr holds the counter's address as a Go pointer.
			counter := *(**uint64)(unsafe.Pointer(&ia.Addr))
			atomic.StoreUint64(counter, ia.Target)
		}
		*a = hl.WaitCSArgs{}
		a.Out().Status = hl.HL_WAIT_CS_STATUS_COMPLETED
		return nil
	case uint(hl.DRM_IOCTL_HL_MEMORY):
		a := (*hl.MemArgs)(arg)
		if a.In().Op != hl.HL_MEM_OP_MAP_BLOCK {
			break
		}
		// Answered here, so that the simulator starts no channel: the
		// block's address is its handle, which only Mmap here sees.
		addr := a.In().MapBlock().BlockAddr
		f.mu.Lock()
		if f.blocks == nil {
			f.blocks = map[int64]bool{}
		}
		f.blocks[int64(addr)] = true
		f.mu.Unlock()
		*a = hl.MemArgs{}
		a.Out().SetBlockHandle(addr)
		a.Out().SetBlockSize(g3.PDMA_CH_A_BLOCK_SIZE)
		return nil
	}
	return f.File.Ioctl(req, arg)
}

// Mmap maps a register block as anonymous memory, everything else through
// the simulator.
func (f *instantFile) Mmap(offset int64, length int, prot, flags int) ([]byte, error) {
	f.mu.Lock()
	block := f.blocks[offset]
	f.mu.Unlock()
	if !block {
		return f.File.Mmap(offset, length, prot, flags)
	}
	mem, err := unix.Mmap(-1, 0, length, prot, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	if f.anon == nil {
		f.anon = map[*byte]bool{}
	}
	f.anon[unsafe.SliceData(mem)] = true
	f.mu.Unlock()
	return mem, nil
}

// Munmap unmaps a register block Mmap mapped, everything else through the
// simulator.
func (f *instantFile) Munmap(b []byte) error {
	f.mu.Lock()
	anon := f.anon[unsafe.SliceData(b)]
	delete(f.anon, unsafe.SliceData(b))
	f.mu.Unlock()
	if anon {
		return unix.Munmap(b)
	}
	return f.File.Munmap(b)
}

// instantRig returns an Engine over an instantFile of a simulated Gaudi2.
func instantRig(b *testing.B) (*memory.Manager, *Engine) {
	return instantRigOn(b, &instantFile{}, sim.Gaudi2)
}

// instantRigOn is instantRig over f, whose File it sets to the simulator's
// of a device of asic.
func instantRigOn(b *testing.B, f *instantFile, asic sim.ASIC) (*memory.Manager, *Engine) {
	cfg := sim.Default(asic, 1)
	cfg.LockDir = b.TempDir()
	cfg.Strict = sim.StrictOff // what programs run
	s, err := sim.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	sf, err := s.Device(0).Open()
	if err != nil {
		b.Fatal(err)
	}
	f.File = sf
	d, err := device.FromFile(f, device.FileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		b.Fatal(err)
	}
	e, err := New(m, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		e.Close()
		m.Close()
		d.Close()
		s.Close()
	})
	return m, e
}

// BenchmarkCopy4KiBLibrary is a 4 KiB host-to-device copy between typed
// ranges on a device whose CSs complete at once: the library's cost and
// allocations per copy, without the simulator's execution.
func BenchmarkCopy4KiBLibrary(b *testing.B) {
	m, e := instantRig(b)
	dst, src := copyRanges(b, m)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := e.CopyToDevice(ctx, dst, src); err != nil {
			b.Fatal(err)
		}
	}
}

// copyRanges allocates 4 KiB of device memory and 4 KiB of host memory and
// returns them as the ranges of a copy.
func copyRanges(b *testing.B, m *memory.Manager) (memory.DeviceRange, memory.HostRange) {
	h, err := m.AllocHost(4096, memory.HostOptions{})
	if err != nil {
		b.Fatal(err)
	}
	buf, err := m.Alloc(4096, memory.AllocOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return buf.Range(0, 4096), h.Range(0, 4096)
}
