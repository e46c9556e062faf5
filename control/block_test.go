package control_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/gaudi-go/gaudi/control"
	"github.com/gaudi-go/gaudi/internal/devio"
	"github.com/gaudi-go/gaudi/sim"
	"golang.org/x/sys/unix"
)

// Gaudi2's configuration space base and two user-mappable blocks: the DCCM
// of scheduler ARC 0 (double size) and the sync manager objects of dcore 1.
const (
	cfgBase     = 0x1000007FF8000000
	sched0DCCM  = cfgBase + 0x4e90000
	dcore1SMObj = cfgBase + 0x4100000 + 0x200000
)

func TestMapBlock(t *testing.T) {
	d := open(t, sim.Gaudi2)
	for _, tc := range []struct {
		addr uint64
		size int
	}{
		{sched0DCCM, 0x10000},
		{dcore1SMObj, 0x14000},
	} {
		b, err := control.MapBlock(d, tc.addr)
		if err != nil {
			t.Fatalf("%#x: %v", tc.addr, err)
		}
		if b.Size() != tc.size || b.Addr() != tc.addr {
			t.Errorf("%#x: %d bytes at %#x, want %d", tc.addr, b.Size(), b.Addr(), tc.size)
		}
		if err := b.Write32(0, 1); err != nil { // mapped read and write
			t.Fatal(err)
		}
		h, size, err := control.BlockInfo(d, tc.addr)
		if err != nil || h != b.Handle() || int(size) != tc.size {
			t.Errorf("BlockInfo %#x: %#x %d %v, mapped %#x", tc.addr, h, size, err, b.Handle())
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	}
	// The driver maps whole blocks only: a handle mapped with another
	// size is refused.
	h, _, err := control.BlockInfo(d, sched0DCCM)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := devio.Of(d).Mmap(int64(h), 4096, unix.PROT_READ, unix.MAP_SHARED); !errors.Is(err, unix.EINVAL) {
		t.Errorf("partial block mmap: %v", err)
	}
	if _, err := control.MapBlock(d, cfgBase+0x123000); !errors.Is(err, unix.EINVAL) {
		t.Errorf("unknown block: %v", err)
	}
}

// TestBlockRegisters: a block's registers are reached 32 bits at a time
// at aligned offsets inside the block, and a bad offset or an access after
// Close is a typed error, never a panic or a fault (issue 22 item 6: the
// block's MMIO was handed out as a []byte).
func TestBlockRegisters(t *testing.T) {
	d := open(t, sim.Gaudi2)
	b, err := control.MapBlock(d, sched0DCCM)
	if err != nil {
		t.Fatal(err)
	}
	last := b.Size() - 4
	for _, off := range []int{0, 4, last} {
		if err := b.Write32(off, 0xa5a50000|uint32(off)); err != nil {
			t.Fatalf("Write32(%#x): %v", off, err)
		}
	}
	for _, off := range []int{0, 4, last} {
		v, err := b.Read32(off)
		if err != nil || v != 0xa5a50000|uint32(off) {
			t.Errorf("Read32(%#x) = %#x, %v; want %#x", off, v, err, 0xa5a50000|uint32(off))
		}
	}
	for _, off := range []int{-4, 1, 2, 3, last + 1, last + 4, b.Size(), 1 << 40} {
		_, rerr := b.Read32(off)
		werr := b.Write32(off, 1)
		for _, err := range []error{rerr, werr} {
			var re *control.RegisterError
			if !errors.Is(err, control.ErrRegisterOffset) || !errors.Is(err, unix.EINVAL) || !errors.As(err, &re) || re.Offset != off || re.Size != b.Size() {
				t.Errorf("offset %#x: %v, want a *RegisterError matching ErrRegisterOffset and EINVAL", off, err)
			}
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Read32(0); !errors.Is(err, control.ErrBlockClosed) {
		t.Errorf("Read32 after Close: %v, want ErrBlockClosed", err)
	}
	if err := b.Write32(0, 1); !errors.Is(err, control.ErrBlockClosed) {
		t.Errorf("Write32 after Close: %v, want ErrBlockClosed", err)
	}
}

// TestBlockCloseRacesAccess: Close while other goroutines read and write
// registers waits for them; none touches the unmapped block (run with
// -race; an access after munmap would fault).
func TestBlockCloseRacesAccess(t *testing.T) {
	d := open(t, sim.Gaudi2)
	for round := 0; round < 20; round++ {
		b, err := control.MapBlock(d, sched0DCCM)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		started := make(chan struct{}, 4)
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				started <- struct{}{}
				for i := 0; ; i++ {
					err := b.Write32(4*g, uint32(i))
					if err == nil {
						_, err = b.Read32(4 * g)
					}
					if errors.Is(err, control.ErrBlockClosed) {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
				}
			}(g)
		}
		for g := 0; g < 4; g++ {
			<-started
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	}
}

func TestMapBlockGaudi(t *testing.T) {
	d := open(t, sim.Gaudi)
	_, err := control.MapBlock(d, sched0DCCM)
	if !errors.Is(err, control.ErrNotSupported) || !errors.Is(err, unix.EPERM) {
		t.Fatalf("Gaudi: %v", err)
	}
}
