package memory

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/uapi/gaudi3"
)

// PageSizes is a set of page sizes, each a power of two, held as the OR of
// the sizes: the form of the driver's supported_pages_mask (and of the
// order bitmask INFO DEV_MEM_ALLOC_PAGE_SIZES answers). The zero set is
// empty.
type PageSizes uint64

// Has reports whether size is in the set.
func (s PageSizes) Has(size uint64) bool {
	return size != 0 && size&(size-1) == 0 && uint64(s)&size != 0
}

// Len returns the number of sizes in the set.
func (s PageSizes) Len() int { return bits.OnesCount64(uint64(s)) }

// Smallest returns the smallest size in the set, or 0 for an empty set.
func (s PageSizes) Smallest() uint64 { return uint64(s) & -uint64(s) }

// Sizes returns the sizes of the set in increasing order.
func (s PageSizes) Sizes() []uint64 {
	var out []uint64
	for v := uint64(s); v != 0; v &= v - 1 {
		out = append(out, v&-v)
	}
	return out
}

// VARange is a half-open range of device virtual addresses [Start, End)
// mapped with pages of PageSize.
type VARange struct {
	Start, End uint64
	PageSize   uint64
}

// Contains reports whether addr is in the range.
func (r VARange) Contains(addr uint64) bool { return addr >= r.Start && addr < r.End }

// Layout is the device-memory map of one chip as its driver sets it up: the
// facts a caller needs to choose DRAM page sizes and to tell device from
// host addresses without asking the device. Addresses the driver finds at
// run time (where the DRAM virtual range starts, how much HBM the user gets)
// come from INFO HW_IP_INFO instead.
type Layout struct {
	// DRAMPhysBase is where HBM starts in the device's physical space.
	DRAMPhysBase uint64
	// DRAMVAEnd ends the device-MMU range for DRAM, which starts at the
	// end of physical HBM (hw_ip_info's dram_base_address).
	DRAMVAEnd uint64
	// HBMPerDie and Dies give the chip's full HBM; the driver bins off at
	// most MaxFaultyHBMs stacks.
	HBMPerDie     uint64
	Dies          int
	MaxFaultyHBMs int

	// DRAMPageSizes are the page sizes the device MMU supports, split into
	// the small and the large ones, since at most MaxSmallPageSizes small
	// and MaxLargePageSizes large sizes can be active at once, and at most
	// MaxActivePageSizes in all.
	DRAMPageSizes      PageSizes
	SmallPageSizes     PageSizes
	LargePageSizes     PageSizes
	MaxActivePageSizes int
	MaxSmallPageSizes  int
	MaxLargePageSizes  int
	// DefaultAllocPageSize is the page size of an allocation that names
	// none (hw_ip_info's device_mem_alloc_default_page_size).
	DefaultAllocPageSize uint64
	// UserPageSize says whether an allocation may choose its page size
	// (hl_mem_in.alloc.page_size).
	UserPageSize bool

	// Host memory mapped for the device: the regular range with base
	// pages and the huge-page range, for a 4 KiB-page kernel and for a
	// 64 KiB-page one.
	Host, HostHuge       VARange
	Host64K, HostHuge64K VARange

	// ReservedVA are ranges inside the DRAM and host ranges the driver
	// keeps for the ARC firmware's use (hints outside them).
	ReservedVA []VARange
}

// gaudi3Layout is the Gaudi3 (and HL-338) memory map of the out-of-tree
// driver: gaudi3_set_fixed_properties in drivers/accel/habanalabs/gaudi3/gaudi3.c
// at 58be96464de01b613d29262449eb6af038b7fff6, its header comment on the
// HBM MMU, gaudi3P.h at f9523baa926245a2995015ec6e98c4674bc2776f and
// include/gaudi3/gaudi3.h at 1d459ad559c20c8a04c99ce48313119a7807e474
// (package uapi/gaudi3 holds the constants).
var gaudi3Layout = Layout{
	DRAMPhysBase:  gaudi3.DRAM_PHYS_BASE,
	DRAMVAEnd:     gaudi3.VA_HBM_SPACE_END,
	HBMPerDie:     gaudi3.NUM_HBM_PER_DIE * gaudi3.SINGLE_HBM_SIZE,
	Dies:          gaudi3.MAX_NUM_OF_DIES,
	MaxFaultyHBMs: gaudi3.MAX_FAULTY_HBMS,

	DRAMPageSizes:        gaudi3.GAUDI3_HMMU_VALID_PAGES_MASK,
	SmallPageSizes:       gaudi3.GAUDI3_HMMU_VALID_SMALL_PAGES_MASK,
	LargePageSizes:       gaudi3.GAUDI3_HMMU_VALID_LARGE_PAGES_MASK,
	MaxActivePageSizes:   gaudi3.HMMU_TLB_MAX_SUPPORTED_PAGE_TYPES,
	MaxSmallPageSizes:    gaudi3.GAUDI3_HMMU_MAX_SMALL_PAGES_NUM,
	MaxLargePageSizes:    gaudi3.GAUDI3_HMMU_MAX_LARGE_PAGES_NUM,
	DefaultAllocPageSize: gaudi3.DefaultAllocPageSize,
	UserPageSize:         true,

	Host:        VARange{gaudi3.VA_HOST_SPACE_PAGE_START, gaudi3.VA_HOST_SPACE_PAGE_END, 4 << 10},
	HostHuge:    VARange{gaudi3.VA_HOST_SPACE_HPAGE_START, gaudi3.VA_HOST_SPACE_HPAGE_END, 2 << 20},
	Host64K:     VARange{gaudi3.VA_HOST_SPACE_PAGE_START, gaudi3.VA_HOST_SPACE_PAGE_END, 64 << 10},
	HostHuge64K: VARange{gaudi3.VA_HOST_SPACE_HPAGE_START, gaudi3.VA_HOST_SPACE_HPAGE_END, 16 << 20},

	ReservedVA: []VARange{
		{gaudi3.RESERVED_VA_RANGE_FOR_ARC_ON_HBM_START, gaudi3.RESERVED_VA_RANGE_FOR_ARC_ON_HBM_END + 1, 0},
		{gaudi3.RESERVED_VA_RANGE_FOR_ARC_ON_HOST_START, gaudi3.RESERVED_VA_RANGE_FOR_ARC_ON_HOST_END + 1, 0},
		{gaudi3.RESERVED_VA_RANGE_FOR_ARC_ON_HOST_HPAGE_START, gaudi3.RESERVED_VA_RANGE_FOR_ARC_ON_HOST_HPAGE_END + 1, 0},
	},
}

// LayoutOf returns the memory map of chip a, a copy the caller owns: the
// Gaudi3 table for Gaudi3 and the HL-338, and false for chips without one
// (Gaudi and Gaudi2 take their DRAM facts from INFO alone).
func LayoutOf(a device.ASIC) (Layout, bool) {
	if a.IsGaudi3() {
		l := gaudi3Layout
		l.ReservedVA = slices.Clone(l.ReservedVA)
		return l, true
	}
	return Layout{}, false
}

// ErrPageSizes reports a set of DRAM page sizes the device MMU cannot have
// active at once, or a page size it does not support.
var ErrPageSizes = errors.New("unsupported DRAM page sizes")

// CheckPageSizes reports whether the device MMU can have the sizes of s
// active at once: all supported, at most MaxActivePageSizes of them, at
// most MaxSmallPageSizes small and MaxLargePageSizes large ones (the
// Gaudi3 MMU has two page-size slots for sizes up to 64 MiB and one for
// larger ones). The error matches ErrPageSizes.
func (l Layout) CheckPageSizes(s PageSizes) error {
	switch {
	case s == 0:
		return fmt.Errorf("no page size: %w", ErrPageSizes)
	case s&^l.DRAMPageSizes != 0:
		return fmt.Errorf("page sizes %v not supported (supported: %v): %w", s&^l.DRAMPageSizes, l.DRAMPageSizes, ErrPageSizes)
	case s.Len() > l.MaxActivePageSizes:
		return fmt.Errorf("%d page sizes %v, at most %d can be active: %w", s.Len(), s, l.MaxActivePageSizes, ErrPageSizes)
	case (s & l.SmallPageSizes).Len() > l.MaxSmallPageSizes:
		return fmt.Errorf("%d small page sizes %v, at most %d: %w", (s & l.SmallPageSizes).Len(), s&l.SmallPageSizes, l.MaxSmallPageSizes, ErrPageSizes)
	case (s & l.LargePageSizes).Len() > l.MaxLargePageSizes:
		return fmt.Errorf("%d large page sizes %v, at most %d: %w", (s & l.LargePageSizes).Len(), s&l.LargePageSizes, l.MaxLargePageSizes, ErrPageSizes)
	}
	return nil
}

// ReservedDRAM returns the HBM the driver keeps below the user's memory
// for a DRAM page size (hw_ip_info's reserved_dram_size): firmware, then the
// device-MMU page tables, then two trace buffers per die, each start
// rounded up to the page, as gaudi3_set_fixed_properties lays them out. It
// is defined for the Gaudi3 layout only and returns 0 for other layouts or a
// page size that is not a power of two.
func (l Layout) ReservedDRAM(pageSize uint64) uint64 {
	if l.DRAMPhysBase != gaudi3.DRAM_PHYS_BASE || pageSize == 0 || pageSize&(pageSize-1) != 0 {
		return 0
	}
	up := func(v uint64) uint64 { return (v + pageSize - 1) &^ (pageSize - 1) }
	off := up(gaudi3.FW_RESERVED_HBM_SIZE) + gaudi3.HMMU_PAGE_TABLES_SIZE
	etr := up(gaudi3.ETR_BUF_SIZE) * gaudi3.ETR_BUF_PER_DIE * uint64(l.Dies)
	return up(off + etr)
}

// String formats the set as sizes, such as "{32M 64M 1G}".
func (s PageSizes) String() string {
	b := []byte{'{'}
	for i, v := range s.Sizes() {
		if i > 0 {
			b = append(b, ' ')
		}
		switch {
		case v >= 1<<30 && v%(1<<30) == 0:
			b = fmt.Appendf(b, "%dG", v>>30)
		case v >= 1<<20 && v%(1<<20) == 0:
			b = fmt.Appendf(b, "%dM", v>>20)
		case v >= 1<<10 && v%(1<<10) == 0:
			b = fmt.Appendf(b, "%dK", v>>10)
		default:
			b = fmt.Appendf(b, "%d", v)
		}
	}
	return string(append(b, '}'))
}
