package sim

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Regressions for inputs that crashed the simulator or raced when it was
// driven at the raw ioctl level. Each input is kept as a test and, where
// the input is small, as a fuzz seed.

// TestWaitSeqZero: a new context starts at sequence 1 (hl_ctx_init sets
// cs_sequence = 1), so sequence 0 names a fence slot no CS took.
// hl_ctx_get_fence_locked reads cs_pending[0], which is NULL, and
// _hl_cs_wait_ioctl reports the NULL fence as a CS that is gone
// (hl_wait_for_fence: CS_WAIT_STATUS_GONE). The simulator dereferenced
// the empty slot and killed the process.
func TestWaitSeqZero(t *testing.T) {
	for _, asic := range []ASIC{Gaudi2, Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			_, _, f := openSim(t, asic)
			for _, us := range []uint64{0, 1000} {
				out, err := waitCS(f, 0, us)
				if err != nil || out.Status != hl.HL_WAIT_CS_STATUS_COMPLETED || out.Flags&hl.HL_WAIT_CS_STATUS_FLAG_GONE == 0 {
					t.Errorf("WAIT_CS seq 0, %d us: %v, status %d, flags %#x; want COMPLETED with GONE", us, err, out.Status, out.Flags)
				}
			}
		})
	}
}

// TestWaitSignalSeqZero: a wait CS whose signal sequence array holds 0
// reaches hl_ctx_get_fence through cs_ioctl_signal_wait; the NULL fence
// means "signal CS already finished": the ioctl succeeds (rc 0) without a
// CS, and out.seq keeps ULLONG_MAX.
func TestWaitSignalSeqZero(t *testing.T) {
	for _, asic := range []ASIC{Gaudi2, Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			_, _, f := openSim(t, asic)
			a, err := waitSignalCS(f, 0, []uint64{0}, 0)
			if err != nil {
				t.Fatalf("wait CS on signal seq 0: %v, want success (signal CS gone)", err)
			}
			if got := a.Out().Seq(); got != ^uint64(0) {
				t.Errorf("out.seq = %#x, want ULLONG_MAX (no CS was made)", got)
			}
		})
	}
}

// FuzzWaitCS issues WAIT_CS on a new context with any sequence number,
// timeout and flags except the interrupt wait (which takes user
// addresses). The seed with sequence 0 crashed the simulator.
func FuzzWaitCS(f *testing.F) {
	f.Add(uint64(0), uint64(0), uint32(0))
	f.Add(uint64(0), uint64(10), uint32(0))
	f.Add(uint64(1), uint64(0), uint32(0))
	f.Add(^uint64(0), uint64(0), uint32(0))
	f.Fuzz(func(t *testing.T, seq, us uint64, flags uint32) {
		if us > 1000 {
			us %= 1000
		}
		flags &^= hl.HL_WAIT_CS_FLAGS_INTERRUPT | hl.HL_WAIT_CS_FLAGS_MULTI_CS
		_, _, fl := openSim(t, Gaudi2)
		var a hl.WaitCSArgs
		a.In().SetSeq(seq)
		a.In().SetTimeoutUs(us)
		a.In().Flags = flags
		_ = fl.Ioctl(hl.DRM_IOCTL_HL_WAIT_CS, unsafe.Pointer(&a))
	})
}

// TestResetBesideFirstCall: Device.Reset walks the open files and aborts
// their CSs (File.abort) while a new file's first CB, CS or WAIT call
// builds its submission state; the abort read that state without a lock
// while the first call wrote it, a data race -race reported every time.
// The driver's hard reset (hl_device_reset) likewise runs beside ioctls
// of a context that just opened.
func TestResetBesideFirstCall(t *testing.T) {
	_, d, f := openCompute(t, Gaudi2)
	f.Close()
	for range 200 {
		f, err := d.Open()
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			cbInfo(f, 0, 0) // the file's first CB call
		}()
		d.Reset()
		<-done
		f.Close()
	}
}

// TestMmapFlags: MAP_SHARED|MAP_FIXED with a CB handle as offset mapped
// page 0 as root and crashed inside x/sys (a slice of a nil pointer). The
// driver's handlers (__hl_mmap, hl_mem_mgr_mmap, hl_hw_block_mmap) check
// the handle, that the length is ALIGN(mappable_size, PAGE_SIZE) (the whole
// buffer) and access_ok, and leave the flags to the mmap system call; the
// simulator refuses what it cannot honour (checkMmapFlags) and keeps
// MAP_PRIVATE, which the driver allows.
func TestMmapFlags(t *testing.T) {
	_, _, f := openSim(t, Gaudi2)
	cb, err := cbCreate(f, 4096, 0)
	if err != nil {
		t.Fatal(err)
	}
	var a hl.MemArgs
	a.In().Op = hl.HL_MEM_OP_MAP_BLOCK
	a.In().MapBlock().BlockAddr = gaudi2CFGBase + uint64(gaudi2UserBlocks[0].addr)
	if err := f.Ioctl(hl.DRM_IOCTL_HL_MEMORY, unsafe.Pointer(&a)); err != nil {
		t.Fatal(err)
	}
	blk, blkSize := a.Out().BlockHandle(), int(a.Out().BlockSize())
	rw := unix.PROT_READ | unix.PROT_WRITE
	for _, tc := range []struct {
		name   string
		off    uint64
		length int
		flags  int
		want   error
	}{
		{"CB shared fixed", cb, 4096, unix.MAP_SHARED | unix.MAP_FIXED, unix.EPERM},
		{"CB fixed noreplace", cb, 4096, unix.MAP_SHARED | unix.MAP_FIXED_NOREPLACE, unix.EPERM},
		{"CB private fixed", cb, 4096, unix.MAP_PRIVATE | unix.MAP_FIXED, unix.EPERM},
		{"block fixed", blk, blkSize, unix.MAP_SHARED | unix.MAP_FIXED, unix.EPERM},
		{"CB anonymous", cb, 4096, unix.MAP_SHARED | unix.MAP_ANONYMOUS, unix.EINVAL},
		{"CB hugetlb", cb, 4096, unix.MAP_SHARED | unix.MAP_HUGETLB, unix.EINVAL},
		{"CB no type", cb, 4096, 0, unix.EINVAL},
		{"CB type 4", cb, 4096, 4, unix.EINVAL},
		{"CB sync", cb, 4096, unix.MAP_SHARED_VALIDATE | unix.MAP_SYNC, unix.EOPNOTSUPP},
		{"CB huge length", cb, 1 << 50, unix.MAP_SHARED, unix.ENOMEM},
		{"CB short", cb, 2048, unix.MAP_SHARED, nil}, // rounds up to the page
		{"CB two pages", cb, 8192, unix.MAP_SHARED, unix.EINVAL},
		{"CB private", cb, 4096, unix.MAP_PRIVATE, nil},
		{"CB shared populate", cb, 4096, unix.MAP_SHARED | unix.MAP_POPULATE, nil},
		{"CB shared validate", cb, 4096, unix.MAP_SHARED_VALIDATE, nil},
		{"block private", blk, blkSize, unix.MAP_PRIVATE, nil},
	} {
		m, err := f.Mmap(int64(tc.off), tc.length, rw, tc.flags)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: mmap = %v, want %v", tc.name, err, tc.want)
		}
		if err == nil {
			if err := f.Munmap(m); err != nil {
				t.Errorf("%s: munmap: %v", tc.name, err)
			}
		}
	}
}

// FuzzMmap maps a CB, a timestamp buffer or a HW block handle (or a
// made-up offset) with any length, protection and flags. The seed with
// MAP_SHARED|MAP_FIXED crashed the simulator.
func FuzzMmap(f *testing.F) {
	f.Add(uint8(0), uint64(0), 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_FIXED)
	f.Add(uint8(0), uint64(0), 4096, unix.PROT_READ, unix.MAP_SHARED)
	f.Add(uint8(1), uint64(0), 4096, unix.PROT_READ, unix.MAP_PRIVATE)
	f.Add(uint8(2), uint64(0), 8192, unix.PROT_READ, unix.MAP_SHARED)
	f.Add(uint8(3), uint64(0x1000), 4096, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_FIXED_NOREPLACE)
	f.Fuzz(func(t *testing.T, which uint8, off uint64, length, prot, flags int) {
		_, _, fl := openSim(t, Gaudi2)
		switch which % 4 {
		case 0:
			h, err := cbCreate(fl, 4096, 0)
			if err != nil {
				t.Fatal(err)
			}
			off += h
		case 1:
			var a hl.MemArgs
			a.In().Op = hl.HL_MEM_OP_TS_ALLOC
			a.In().NumOfElements = 512
			if err := fl.Ioctl(hl.DRM_IOCTL_HL_MEMORY, unsafe.Pointer(&a)); err != nil {
				t.Fatal(err)
			}
			off += a.Out().Handle()
		case 2:
			var a hl.MemArgs
			a.In().Op = hl.HL_MEM_OP_MAP_BLOCK
			a.In().MapBlock().BlockAddr = gaudi2CFGBase + uint64(gaudi2UserBlocks[0].addr)
			if err := fl.Ioctl(hl.DRM_IOCTL_HL_MEMORY, unsafe.Pointer(&a)); err != nil {
				t.Fatal(err)
			}
			off += a.Out().BlockHandle()
		}
		m, err := fl.Mmap(int64(off), length, prot, flags)
		if err == nil {
			if len(m) == 0 || unsafe.SliceData(m) == nil {
				t.Fatalf("mmap gave an empty mapping")
			}
			fl.Munmap(m)
		}
	})
}

// TestDMAToUnmappedHost: the caller maps host memory into the device (MAP
// with HL_MEM_USERPTR), then unmaps part of it and runs DMA through it.
// The driver pinned the pages (hl_pin_host_memory), so the device reads
// and writes the orphaned pages and nothing is reported; the simulator
// crashed the process with an unrecoverable fault. Now it survives:
// pages that are gone are not touched (they read as zeros and writes to
// them are dropped), are counted in Device.HostFaults, and the CS
// completes.
func TestDMAToUnmappedHost(t *testing.T) {
	for _, asic := range []ASIC{Gaudi2, Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			_, d, f := openSim(t, asic)
			fm := packet.Gaudi2
			q := uint32(0)
			if asic == Gaudi {
				fm, q = packet.Gaudi, 2
			}
			const n = 3 * pageSize
			host, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
			if err != nil {
				t.Fatal(err)
			}
			for i := range host {
				host[i] = byte(i%251) + 1
			}
			va, err := memMapHost(f, addrOf(host), n, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			dram := deviceBuf(t, f, 1<<21)
			dramPut(t, f, dram, bytes.Repeat([]byte{0xee}, n))
			// The command buffers are made first: any mmap after the
			// munmap below could land in the hole, and the simulator,
			// unlike the device, would then reach the new mapping.
			read := chunkFor(t, f, q, build(t, fm, func(b *packet.Builder) {
				b.LinDMA(packet.LinDMA{Src: va, Dst: dram, Size: n, Header: packet.Header{EngineBarrier: true}})
			}))
			write := chunkFor(t, f, q, build(t, fm, func(b *packet.Builder) {
				b.LinDMA(packet.LinDMA{Src: dram, Dst: va, Size: n, Header: packet.Header{EngineBarrier: true}})
				b.LinDMA(packet.LinDMA{Src: 0x0101010101010101 * 0x77, Dst: va + 2*pageSize - 8, Size: 16, Memset: true, Header: packet.Header{EngineBarrier: true}})
				b.MsgLong(packet.MsgLong{Addr: va + pageSize + 64, Value: 7})
			}))
			// The middle page goes away; the others stay.
			if err := unix.MunmapPtr(unsafe.Pointer(&host[pageSize]), pageSize); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				closeSim(f)
				unix.MunmapPtr(unsafe.Pointer(&host[0]), pageSize)
				unix.MunmapPtr(unsafe.Pointer(&host[2*pageSize]), pageSize)
			})
			// Host to DRAM: the gone page reads as zeros.
			seq, _, err := submit(f, chunksOf([]chunk{read}), 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			mustComplete(t, f, seq)
			got := dramAt(t, f, dram, n)
			for i, c := range got {
				want := byte(i%251) + 1
				if i >= pageSize && i < 2*pageSize {
					want = 0
				}
				if c != want {
					t.Fatalf("DRAM byte %d = %#x, want %#x; %+v", i, c, want, d.HostFaults())
				}
			}
			hf := d.HostFaults()
			if hf.Count != 1 || hf.Bytes != pageSize || hf.Addr != va+pageSize {
				t.Errorf("after reading: %+v, want one page at %#x", hf, va+pageSize)
			}
			// DRAM to host, a memset across the end of the gone page and
			// a MSG_LONG into it: dropped there, counted, the rest
			// written.
			dramPut(t, f, dram, bytes.Repeat([]byte{0x5a}, n))
			seq, _, err = submit(f, chunksOf([]chunk{write}), 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			mustComplete(t, f, seq)
			if bytes.Count(host[:pageSize], []byte{0x5a}) != pageSize {
				t.Error("the first page was not written")
			}
			if want := append(bytes.Repeat([]byte{0x77}, 8), bytes.Repeat([]byte{0x5a}, pageSize-8)...); !bytes.Equal(host[2*pageSize:], want) {
				t.Error("the third page does not hold the DMA and the memset")
			}
			if hf := d.HostFaults(); hf.Count != 4 || hf.Bytes != 2*pageSize+8+4 {
				t.Errorf("after writing: %+v, want 4 accesses, %d bytes", hf, 2*pageSize+8+4)
			}
			if st := d.State(); st != Operational {
				t.Errorf("device %v", st)
			}
			// Strict mode reports each CS once.
			for i, v := range takeViolations(t, d, ViolationHostReplaced, ViolationHostReplaced) {
				if v.Seq != uint64(i+1) || !strings.Contains(v.Detail, "unmapped") {
					t.Errorf("violation %d: %v (CS %d)", i, v, v.Seq)
				}
			}
		})
	}
}

// chunkFor makes the chunk of a CB on queue q (a kernel CB on Gaudi's
// external queues, a user CB otherwise) without submitting it.
func chunkFor(t *testing.T, f *File, q uint32, cb []byte) chunk {
	t.Helper()
	if !f.dev.prof.dramVirtual && q < 8 {
		h := kernelCB(t, f, uint32(len(cb)), cb)
		return chunk{queue: q, handle: h, size: uint32(len(cb))}
	}
	return userCB(t, f, q, cb)
}
