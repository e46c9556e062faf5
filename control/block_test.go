package control_test

import (
	"errors"
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
		if len(b.Bytes()) != tc.size || b.Addr() != tc.addr {
			t.Errorf("%#x: %d bytes at %#x, want %d", tc.addr, len(b.Bytes()), b.Addr(), tc.size)
		}
		b.Bytes()[0] = 1 // mapped read and write
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

func TestMapBlockGaudi(t *testing.T) {
	d := open(t, sim.Gaudi)
	_, err := control.MapBlock(d, sched0DCCM)
	if !errors.Is(err, control.ErrNotSupported) || !errors.Is(err, unix.EPERM) {
		t.Fatalf("Gaudi: %v", err)
	}
}
