package memory_test

import (
	"errors"
	"testing"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/google/go-cmp/cmp"
)

const (
	mib = uint64(1) << 20
	gib = uint64(1) << 30
)

func TestGaudi3Layout(t *testing.T) {
	l, ok := memory.LayoutOf(device.Gaudi3HL338)
	if !ok {
		t.Fatal("no layout for the HL-338")
	}
	if _, ok := memory.LayoutOf(device.Gaudi2B); ok {
		t.Error("a layout for Gaudi2")
	}
	l.ReservedVA[0].Start = 0
	if again, _ := memory.LayoutOf(device.Gaudi3); again.ReservedVA[0].Start == 0 {
		t.Error("LayoutOf shares its ReservedVA")
	}
	l, _ = memory.LayoutOf(device.Gaudi3)
	// Every power of two from 32 MiB to 2 GiB but 128 MiB; 32 MiB default.
	want := []uint64{32 * mib, 64 * mib, 256 * mib, 512 * mib, gib, 2 * gib}
	if d := cmp.Diff(want, l.DRAMPageSizes.Sizes()); d != "" {
		t.Errorf("page sizes (-want +got):\n%s", d)
	}
	if l.DRAMPageSizes.String() != "{32M 64M 256M 512M 1G 2G}" || l.DRAMPageSizes.Smallest() != 32*mib {
		t.Errorf("page sizes %v, smallest %d", l.DRAMPageSizes, l.DRAMPageSizes.Smallest())
	}
	if l.DefaultAllocPageSize != 32*mib || !l.DRAMPageSizes.Has(l.DefaultAllocPageSize) || l.DRAMPageSizes.Has(128*mib) || !l.UserPageSize {
		t.Errorf("default %d, 128 MiB %v", l.DefaultAllocPageSize, l.DRAMPageSizes.Has(128*mib))
	}
	if l.SmallPageSizes|l.LargePageSizes != l.DRAMPageSizes || l.SmallPageSizes&l.LargePageSizes != 0 {
		t.Errorf("small %v and large %v do not split %v", l.SmallPageSizes, l.LargePageSizes, l.DRAMPageSizes)
	}
	if total := l.HBMPerDie * uint64(l.Dies); total != 128*gib || l.MaxFaultyHBMs != 1 {
		t.Errorf("HBM %d GiB, %d faulty", total/gib, l.MaxFaultyHBMs)
	}
	if l.DRAMPhysBase != 0x0201000000000000 || l.DRAMVAEnd != 0x0202000000000000 {
		t.Errorf("DRAM %#x-%#x", l.DRAMPhysBase, l.DRAMVAEnd)
	}
	// Host ranges: the huge one is the regular one with bit 55 set.
	for _, r := range []memory.VARange{l.HostHuge, l.HostHuge64K} {
		if r.Start != l.Host.Start|1<<55 || r.End != l.Host.End|1<<55 {
			t.Errorf("huge range %#x-%#x", r.Start, r.End)
		}
	}
	if l.Host.PageSize != 4<<10 || l.HostHuge.PageSize != 2*mib || l.Host64K.PageSize != 64<<10 || l.HostHuge64K.PageSize != 16*mib {
		t.Errorf("host page sizes %d %d %d %d", l.Host.PageSize, l.HostHuge.PageSize, l.Host64K.PageSize, l.HostHuge64K.PageSize)
	}
	if !l.Host.Contains(0xFF70000000001000) || l.Host.Contains(0xFF70800000000000) || l.Host.Contains(l.DRAMPhysBase) {
		t.Error("Host.Contains")
	}
	in := func(a uint64) bool {
		return a >= l.DRAMPhysBase && a < l.DRAMVAEnd || l.Host.Contains(a) || l.HostHuge.Contains(a)
	}
	for _, r := range l.ReservedVA {
		if !in(r.Start) || !in(r.End-1) || r.End <= r.Start {
			t.Errorf("reserved range %#x-%#x outside the device ranges", r.Start, r.End)
		}
	}
}

func TestCheckPageSizes(t *testing.T) {
	l, _ := memory.LayoutOf(device.Gaudi3)
	set := func(sizes ...uint64) memory.PageSizes {
		var s memory.PageSizes
		for _, v := range sizes {
			s |= memory.PageSizes(v)
		}
		return s
	}
	for _, tt := range []struct {
		s  memory.PageSizes
		ok bool
	}{
		{set(32 * mib), true},
		{set(32*mib, 64*mib, gib), true},
		{set(64*mib, 2*gib), true},
		{set(256 * mib), true},
		{set(), false},
		{set(128 * mib), false},
		{set(4 << 10), false},
		{set(4 * gib), false},
		{set(32*mib, 64*mib, 256*mib, gib), false},
		{set(256*mib, gib), false},
		{set(32*mib, 256*mib, 512*mib), false},
	} {
		err := l.CheckPageSizes(tt.s)
		if (err == nil) != tt.ok || err != nil && !errors.Is(err, memory.ErrPageSizes) {
			t.Errorf("CheckPageSizes(%v) = %v, want ok %v", tt.s, err, tt.ok)
		}
	}
}

func TestReservedDRAM(t *testing.T) {
	l, _ := memory.LayoutOf(device.Gaudi3)
	// Firmware 32 MiB, page tables 5 MiB, 4 trace buffers of 32 MiB, each
	// start rounded up to the page (gaudi3_set_fixed_properties).
	for page, want := range map[uint64]uint64{
		32 * mib:  192 * mib,
		64 * mib:  384 * mib,
		256 * mib: 1536 * mib,
		2 * gib:   12 * gib,
		0:         0,
		48 * mib:  0,
	} {
		if got := l.ReservedDRAM(page); got != want {
			t.Errorf("ReservedDRAM(%d MiB) = %d MiB, want %d", page/mib, got/mib, want/mib)
		}
	}
	if got := (memory.Layout{}).ReservedDRAM(32 * mib); got != 0 {
		t.Errorf("ReservedDRAM of an empty layout = %d", got)
	}
}
