package sim

import (
	"testing"

	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Issue 28 item 1: rules where the simulator answered otherwise than the
// driver. Each test names the driver function it follows.

// openOOT opens a compute file of a simulated asic that behaves as the
// out-of-tree driver.
func openOOT(t *testing.T, asic ASIC) (*Device, *File) {
	t.Helper()
	cfg := Default(asic, 1)
	cfg.Driver = DriverOutOfTree
	_, d, f := openComputeConfig(t, cfg)
	return d, f
}

// TestOOTDebugOutsideDebugMode follows the out-of-tree driver's
// hl_debug_ioctl (HabanaAI/drivers.accel.habanalabs.kernel,
// drivers/accel/habanalabs/common/habanalabs_ioctl.c, with
// hl_debug_op_requires_debug): a CoreSight operation outside debug mode is
// EPERM, and HL_DEBUG_ENABLE_ERR_INFO_CAPTURE (1033) succeeds; upstream
// (6.12, hl_debug_ioctl) keeps EFAULT and EINVAL.
func TestOOTDebugOutsideDebugMode(t *testing.T) {
	_, f := openOOT(t, Gaudi2)
	for _, op := range []uint32{hl.HL_DEBUG_OP_ETR, hl.HL_DEBUG_OP_ETF, hl.HL_DEBUG_OP_STM, hl.HL_DEBUG_OP_FUNNEL,
		hl.HL_DEBUG_OP_BMON, hl.HL_DEBUG_OP_SPMU, hl.HL_DEBUG_OP_TIMESTAMP} {
		if err := debugCall(f, op, 0, false, nil, nil); err != unix.EPERM {
			t.Errorf("op %d outside debug mode: %v, want EPERM", op, err)
		}
	}
	if err := debugCall(f, hl.HL_DEBUG_ENABLE_ERR_INFO_CAPTURE, 0, false, nil, nil); err != nil {
		t.Errorf("ENABLE_ERR_INFO_CAPTURE: %v, want success", err)
	}
	// In debug mode the operation runs as before.
	if err := setMode(f, true); err != nil {
		t.Fatal(err)
	}
	if err := debugCall(f, hl.HL_DEBUG_OP_FUNNEL, 0, true, nil, nil); err != nil {
		t.Errorf("funnel in debug mode: %v", err)
	}

	_, _, up := openSim(t, Gaudi2)
	if err := debugCall(up, hl.HL_DEBUG_OP_ETF, 0, false, nil, nil); err != unix.EFAULT {
		t.Errorf("upstream: etf outside debug mode: %v, want EFAULT", err)
	}
	if err := debugCall(up, hl.HL_DEBUG_ENABLE_ERR_INFO_CAPTURE, 0, false, nil, nil); err != unix.EINVAL {
		t.Errorf("upstream: op 1033: %v, want EINVAL", err)
	}
}

// TestOOTTSAllocZero follows the out-of-tree driver's
// allocate_timestamps_buffers (HabanaAI/drivers.accel.habanalabs.kernel,
// drivers/accel/habanalabs/common/memory.c): 0 elements is EINVAL; the
// upstream driver (6.12) answers ENOMEM (TestMemoryTSAlloc).
func TestOOTTSAllocZero(t *testing.T) {
	_, f := openOOT(t, Gaudi2)
	var a hl.MemArgs
	a.In().Op = hl.HL_MEM_OP_TS_ALLOC
	if err := memIoctl(f, &a); err != unix.EINVAL {
		t.Errorf("TS_ALLOC of 0 elements: %v, want EINVAL", err)
	}
	a = hl.MemArgs{}
	a.In().Op = hl.HL_MEM_OP_TS_ALLOC
	a.In().NumOfElements = 1
	if err := memIoctl(f, &a); err != nil {
		t.Errorf("TS_ALLOC of 1 element: %v", err)
	}
}

// TestGaudi3MapBlockExactBase follows gaudi3_get_hw_block_id (the
// out-of-tree driver, HabanaAI/drivers.accel.habanalabs.kernel,
// drivers/accel/habanalabs/gaudi3/gaudi3.c, as issue 28 reports it):
// MAP_BLOCK takes a user block's exact base address only, for PDMA
// channel blocks and sync manager blocks alike.
func TestGaudi3MapBlockExactBase(t *testing.T) {
	_, _, f := openSim(t, Gaudi3)
	for _, base := range []uint64{g3.PDMAChannelBlock(1), g3.SyncMngrObjsBlock(1, 0), g3.SyncMngrGlblBlock(1)} {
		if _, _, err := mapBlock(f, base); err != nil {
			t.Errorf("base %#x: %v", base, err)
		}
		for _, off := range []uint64{4, 0x100, 0xffc} {
			if _, _, err := mapBlock(f, base+off); err != unix.EINVAL {
				t.Errorf("%#x inside the block at %#x: %v, want EINVAL", base+off, base, err)
			}
		}
	}
}

// TestUserptrOfDeviceMapping: MAP of host memory (HL_MEM_USERPTR) over a
// CB's mmap or a hardware block's mmap fails with EFAULT, as the driver's
// pin does (hl_pin_host_memory -> get_user_memory ->
// pin_user_pages_fast, refused by check_vma_flags in mm/gup.c for the
// VM_IO|VM_PFNMAP mappings gaudi2_mmap and gaudi2_block_mmap make;
// Debian linux-source-6.12, drivers/accel/habanalabs/common/memory.c and
// gaudi2/gaudi2.c). A timestamp buffer's mapping (hl_ts_mmap, vmalloc
// pages) still pins.
func TestUserptrOfDeviceMapping(t *testing.T) {
	t.Run("Gaudi2", func(t *testing.T) {
		_, _, f := openSim(t, Gaudi2)
		h, err := cbCreate(f, 4096, hl.HL_CB_FLAGS_MAP)
		if err != nil {
			t.Fatal(err)
		}
		cb, err := f.Mmap(int64(h), 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Munmap(cb)
		if _, err := memMapHost(f, addrOf(cb), 4096, 0, 0); err != unix.EFAULT {
			t.Errorf("USERPTR of a CB mapping: %v, want EFAULT", err)
		}
		bh, size, err := mapBlock(f, 0x1000007FF8000000+0x4e90000) // SCHED_ARC0 DCCM
		if err != nil {
			t.Fatal(err)
		}
		blk, err := f.Mmap(int64(bh), int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Munmap(blk)
		if _, err := memMapHost(f, addrOf(blk), 4096, 0, 0); err != unix.EFAULT {
			t.Errorf("USERPTR of a block mapping: %v, want EFAULT", err)
		}
		// Ordinary memory still maps.
		host := anon(t, 4096, 4096, unix.PROT_READ|unix.PROT_WRITE)
		if _, err := memMapHost(f, addrOf(host), 4096, 0, 0); err != nil {
			t.Errorf("USERPTR of anonymous memory: %v", err)
		}
	})
	t.Run("Gaudi3", func(t *testing.T) {
		_, _, f := openSim(t, Gaudi3)
		for _, addr := range []uint64{g3.PDMAChannelBlock(1), g3.SyncMngrObjsBlock(1, 0)} {
			bh, size, err := mapBlock(f, addr)
			if err != nil {
				t.Fatal(err)
			}
			blk, err := f.Mmap(int64(bh), int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := memMapHost(f, addrOf(blk), 4096, 0, 0); err != unix.EFAULT {
				t.Errorf("USERPTR of the block at %#x: %v, want EFAULT", addr, err)
			}
			f.Munmap(blk)
		}
	})
}
