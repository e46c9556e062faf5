package sim

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/packet"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// mapBlock is MEMORY MAP_BLOCK.
func mapBlock(f *File, addr uint64) (handle uint64, size uint32, err error) {
	var a hl.MemArgs
	a.In().Op = hl.HL_MEM_OP_MAP_BLOCK
	a.In().MapBlock().BlockAddr = addr
	err = memIoctl(f, &a)
	return a.Out().BlockHandle(), a.Out().BlockSize(), err
}

// pqmUser drives one PDMA channel as Habana's tests do: the block mapped,
// the channel reset, a ring in host memory mapped to the device.
type pqmUser struct {
	t      *testing.T
	f      *File
	ch     int
	win    []byte
	ring   []byte
	ringVA uint64
	pi     uint32
}

// firstUserIRQ is GAUDI3_IRQ_NUM_USER_FIRST.
var firstUserIRQ = uint32(g3.DefaultHWIPInfo.FirstAvailableInterruptID)

func newPQMUser(t *testing.T, f *File, ch int, ringSize uint64) *pqmUser {
	t.Helper()
	h, size, err := mapBlock(f, g3.PDMAChannelBlock(ch))
	if err != nil {
		t.Fatalf("MAP_BLOCK channel %d: %v", ch, err)
	}
	win, err := f.Mmap(int64(h), int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Munmap(win) })
	ring, va := hostMem(t, f, ringSize)
	u := &pqmUser{t: t, f: f, ch: ch, win: win, ring: ring, ringVA: va}
	u.reset(ringSize)
	return u
}

func (u *pqmUser) reg(off uint64) uint32       { return reg32(u.win, off).Load() }
func (u *pqmUser) setReg(off uint64, v uint32) { reg32(u.win, off).Store(v) }
func (u *pqmUser) ci() uint32                  { return u.reg(g3.PDMA_CH_A_PQM_CH_MSQ_CI) }
func (u *pqmUser) reset(ringSize uint64) {
	u.setReg(g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG, g3.PQM_DESC_SUBMIT_MODE_PI_CI_IN_MEM)
	u.setReg(g3.PDMA_CH_A_PQM_CH_MSQ_SIZE, uint32(ringSize-1))
	u.setReg(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_L, uint32(u.ringVA))
	u.setReg(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_H, uint32(u.ringVA>>32))
	u.pi = 0
}

// push copies packets into the ring at the producer count (wrapping) and
// rings MSQ_PI.
func (u *pqmUser) push(b []byte) {
	n := uint32(len(u.ring))
	for i, c := range b {
		u.ring[(u.pi+uint32(i))%n] = c
	}
	u.pi += uint32(len(b))
	u.setReg(g3.PDMA_CH_A_PQM_CH_MSQ_PI, u.pi)
}

// waitCI waits until MSQ_CI reaches the producer count.
func (u *pqmUser) waitCI() {
	u.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for u.ci() != u.pi {
		if time.Now().After(deadline) {
			u.t.Fatalf("channel %d: MSQ_CI %d, MSQ_PI %d", u.ch, u.ci(), u.pi)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// setCQ programs the channel's completion queue as SCAL's initChannelCQ
// does: a 64-bit counter at va, the interrupt irq through the MSI-X
// doorbell, then the configuration cfg.
func (u *pqmUser) setCQ(va uint64, irq, cfg uint32) {
	u.setReg(g3.PDMA_CH_A_ECMPLTN_Q_BASE_LO, uint32(va))
	u.setReg(g3.PDMA_CH_A_ECMPLTN_Q_BASE_HI, uint32(va>>32))
	u.setReg(g3.PDMA_CH_A_ECMPLTN_Q_BASE_SIZE, g3.PQM_ECMPLTN_Q_COUNTER_SIZE)
	u.setReg(g3.PDMA_CH_A_ECMPLTN_Q_LBW_ADDR_L, uint32(gaudi3MSIXDoorbell&0xFFFFFFFF))
	u.setReg(g3.PDMA_CH_A_ECMPLTN_Q_LBW_ADDR_H, uint32(gaudi3MSIXDoorbell>>32))
	u.setReg(g3.PDMA_CH_A_ECMPLTN_Q_LBW_PAYLD, irq)
	u.setReg(g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG, cfg)
}

// cqOn is the configuration SCAL writes for a stream with an interrupt.
const cqOn = g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG_ENABLE | g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG_COMPLTN_MODE | g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG_LBW_WR_EN

// pqmPackets builds PQM packets.
func pqmPackets(t *testing.T, fn func(b *packet.Builder)) []byte {
	t.Helper()
	return build(t, packet.Gaudi3PQM, fn)
}

// doorbell is the MSG_LONG that raises user interrupt irq.
func doorbell(irq uint32) packet.MsgLong {
	return packet.MsgLong{Addr: gaudi3MSIXDoorbell, Value: irq}
}

func TestGaudi3Driver(t *testing.T) {
	if _, err := New(Config{Devices: Default(Gaudi3, 1).Devices, Driver: DriverUpstream, LockDir: t.TempDir()}); err == nil {
		t.Error("New accepted Gaudi3 on the upstream driver")
	}
	if _, err := New(Config{Devices: Default(Gaudi3, 1).Devices, Legacy: true, LockDir: t.TempDir()}); err == nil {
		t.Error("New accepted Gaudi3 with the legacy encoding")
	}
	t.Setenv("GAUDI_SIM_DRIVER", "upstream")
	s, err := New(Config{Devices: Default(Gaudi3, 2).Devices, LockDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Driver() != DriverOutOfTree {
		t.Errorf("Gaudi3 system runs %v", s.Driver())
	}
	for _, spec := range []string{"gaudi3:8", "GAUDI3:2", "gaudi3::oot"} {
		t.Setenv("GAUDI_SIM", spec)
		c, err := FromEnv()
		if err != nil || c.Devices[0].ASIC != Gaudi3 {
			t.Errorf("FromEnv(%q) = %v, %v", spec, c.Devices, err)
		}
	}
	if a, err := ParseASIC("gaudi3"); err != nil || a != Gaudi3 || a.String() != "GAUDI3" {
		t.Errorf("ParseASIC(gaudi3) = %v, %v", a, err)
	}
}

// TestGaudi3HWIPInfo checks HW_IP_INFO against the out-of-tree driver's
// Gaudi3 facts (package uapi/gaudi3 and gaudi3_set_fixed_properties).
func TestGaudi3HWIPInfo(t *testing.T) {
	_, _, f := openSim(t, Gaudi3)
	var r hl.InfoHWIPInfo
	if err := infoInto(t, f, hl.HL_INFO_HW_IP_INFO, &r); err != nil {
		t.Fatal(err)
	}
	const page = 32 << 20
	reserved := uint64(192 << 20) // 32 MiB firmware, 5 MiB tables at 32 MiB, 4 x 32 MiB ETR at 64 MiB
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"device_id", uint64(r.DeviceID), 0x1060},
		{"dram_base_address", r.DRAMBaseAddress, g3.DRAM_PHYS_BASE + 128<<30},
		{"dram_size", r.DRAMSize, 128<<30 - reserved},
		{"dram_page_size", r.DRAMPageSize, page},
		{"device_mem_alloc_default_page_size", r.DeviceMemAllocDefaultPageSize, page},
		{"reserved_dram_size", r.ReservedDRAMSize, reserved},
		{"dram_enabled", uint64(r.DRAMEnabled), 1},
		{"sram_size", uint64(r.SRAMSize), 0},
		{"first_available_interrupt_id", uint64(r.FirstAvailableInterruptID), 71},
		{"number_of_user_interrupts", uint64(r.NumberOfUserInterrupts), 256},
		{"tpc_interrupt_id", uint64(r.TPCInterruptID), 0xFFFF},
		{"pdma_user_owned_ch_mask", r.Reserved3, 0x7FFFFF},
		{"mme_enabled_mask", uint64(r.Reserved6), 0xFF},
		{"odp_supported", uint64(r.Reserved7), 1},
		{"sched_arc_enabled_mask", uint64(r.Reserved9), 0xFFFF},
		{"edma_enabled_mask", uint64(r.EDMAEnabledMask), 0xFF},
		{"rotator_enabled_mask", uint64(r.RotatorEnabledMask), 0x77},
		{"decoder_enabled_mask", uint64(r.DecoderEnabledMask), 0x7F7F},
		{"security_enabled", uint64(r.SecurityEnabled), 0},
		{"server_type", uint64(r.ServerType), uint64(hl.HL_SERVER_GAUDI3_HLS3_FULLSCALE_IN)},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
	var u hl.InfoDRAMUsage
	if err := infoInto(t, f, hl.HL_INFO_DRAM_USAGE, &u); err != nil {
		t.Fatal(err)
	}
	if u.DRAMFreeMem != 128<<30-reserved || u.CtxDRAMMem != 0 {
		t.Errorf("DRAM_USAGE = %+v", u)
	}
	// A DRAM allocation is mapped from the DRAM VA range, which starts at
	// the end of the physical HBM.
	h, err := memAllocFlags(f, 3*page, 0)
	if err != nil {
		t.Fatal(err)
	}
	va, err := memMapDevice(f, h, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if va < g3.DRAM_PHYS_BASE+128<<30 || va >= g3.VA_HBM_SPACE_END || va%page != 0 {
		t.Errorf("DRAM VA %#x outside [%#x, %#x)", va, uint64(g3.DRAM_PHYS_BASE+128<<30), uint64(g3.VA_HBM_SPACE_END))
	}
	memUnmap(f, va)
	memFree(f, h)
	mem := anon(t, 4096, 4096, unix.PROT_READ|unix.PROT_WRITE)
	hva, err := memMapHost(f, addrOf(mem), 4096, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if hva < g3.VA_HOST_SPACE_PAGE_START || hva >= g3.VA_HOST_SPACE_PAGE_END {
		t.Errorf("host VA %#x outside the host range", hva)
	}
	memUnmap(f, hva)
}

// TestGaudi3DRAMSize checks the configurable HBM size.
func TestGaudi3DRAMSize(t *testing.T) {
	for _, c := range []struct {
		size uint64
		ok   bool
	}{{0, true}, {112 << 30, true}, {1 << 30, true}, {192 << 20, false}, {1<<30 + 4096, false}} {
		_, err := newProfile(Gaudi3, c.size)
		if (err == nil) != c.ok {
			t.Errorf("DRAM size %#x: %v", c.size, err)
		}
	}
}

// TestGaudi3CSRefused: the only queue is the driver's CPU queue
// (validate_queue_index answers EINVAL for it and past it), and sync
// stream CSs are refused.
func TestGaudi3CSRefused(t *testing.T) {
	_, _, f := openSim(t, Gaudi3)
	h, err := cbCreate(f, 4096, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []uint32{0, 1, 8, 260} {
		chs := chunksOf([]chunk{{queue: q, handle: h, size: 8}})
		if _, _, err := submit(f, chs, 0, 0); err != unix.EINVAL {
			t.Errorf("CS on queue %d: %v, want EINVAL", q, err)
		}
	}
	for _, fl := range []uint32{hl.HL_CS_FLAGS_SIGNAL, hl.HL_CS_FLAGS_WAIT, hl.HL_CS_FLAGS_COLLECTIVE_WAIT} {
		chs := chunksOf([]chunk{{queue: 0, handle: h, size: 8}})
		if _, _, err := submit(f, chs, fl, 0); err != unix.EINVAL {
			t.Errorf("CS flags %#x: %v, want EINVAL", fl, err)
		}
	}
	c := csDropCounters(t, f)
	if c.CtxValidationDropCnt == 0 {
		t.Errorf("no validation drops counted: %+v", c)
	}
}

// TestGaudi3MapBlock checks which blocks map and how.
func TestGaudi3MapBlock(t *testing.T) {
	_, _, f := openSim(t, Gaudi3)
	for _, c := range []struct {
		name string
		addr uint64
		ok   bool
	}{
		{"channel 0", g3.PDMAChannelBlock(0), true},
		{"channel 0 MSQ_PI (inside the block)", g3.PDMAChannelBlock(0) + g3.PDMA_CH_A_PQM_CH_MSQ_PI, false},
		{"channel 12 (die 1)", g3.PDMAChannelBlock(12), true},
		{"channel 22", g3.PDMAChannelBlock(22), true},
		{"KDMA channel 23", g3.PDMAChannelBlock(g3.KDMA_CH_ID), false},
		{"group 0 CH_B", g3.D0_SPDMA0_CH0_A_PQM_CH_BASE + g3.PDMA_CH_B_OFFSET, false},
		{"group 0 CMN_B", g3.D0_SPDMA0_CH0_A_PQM_CH_BASE + g3.PDMA_CMN_B_OFFSET, false},
		{"zero", 0, false},
	} {
		h, size, err := mapBlock(f, c.addr)
		switch {
		case c.ok && (err != nil || size != g3.PDMA_CH_A_BLOCK_SIZE || (h>>12)&mmapTypeMask != mmapTypeBlock):
			t.Errorf("%s: handle %#x size %#x, %v", c.name, h, size, err)
		case !c.ok && err != unix.EINVAL:
			t.Errorf("%s: %v, want EINVAL", c.name, err)
		}
	}
	h, _, err := mapBlock(f, g3.PDMAChannelBlock(3))
	if err != nil {
		t.Fatal(err)
	}
	for _, length := range []int{8192, 2 * pageSize} {
		if _, err := f.Mmap(int64(h), length, unix.PROT_READ, unix.MAP_SHARED); err != unix.EINVAL {
			t.Errorf("mmap of %d bytes: %v, want EINVAL", length, err)
		}
	}
	kdma := int64((uint64(g3.KDMA_CH_ID) | mmapTypeBlock) << 12)
	if _, err := f.Mmap(kdma, pageSize, unix.PROT_READ, unix.MAP_SHARED); err != unix.EINVAL {
		t.Errorf("mmap of the KDMA channel: %v, want EINVAL", err)
	}
	// Two mappings of a block are the same registers.
	a, err := f.Mmap(int64(h), pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Munmap(a)
	b, err := f.Mmap(int64(h), pageSize-100, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Munmap(b)
	reg32(a, g3.PDMA_CH_A_PQM_CH_MSQ_SIZE).Store(0xFFF)
	if got := reg32(b, g3.PDMA_CH_A_PQM_CH_MSQ_SIZE).Load(); got != 0xFFF {
		t.Errorf("second mapping reads MSQ_SIZE %#x", got)
	}
	// The control node has no MEMORY.
	ctl, err := f.dev.OpenControl()
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	if _, _, err := mapBlock(ctl, g3.PDMAChannelBlock(0)); err == nil {
		t.Error("MAP_BLOCK on the control node succeeded")
	}
}

// TestPQMEndToEnd runs one channel as Habana's tests do: a copy from host
// memory to DRAM and back, each LIN_PDMA writing a completion value to a
// host counter, then a doorbell message raising the user interrupt that
// WAIT_CS waits for.
func TestPQMEndToEnd(t *testing.T) {
	_, d, f := openSim(t, Gaudi3)
	u := newPQMUser(t, f, 5, 4096)
	const n = 64 << 10
	src, srcVA := hostMem(t, f, n)
	dst, dstVA := hostMem(t, f, n)
	cnt, cntVA := hostMem(t, f, 4096)
	for i := range src {
		src[i] = byte(i*7 + 3)
	}
	h, err := memAllocFlags(f, 32<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	dram, err := memMapDevice(f, h, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	irq := firstUserIRQ + 3
	u.push(pqmPackets(t, func(b *packet.Builder) {
		b.LinPDMA(packet.LinPDMA{Src: srcVA, Dst: dram, Size: n, HostToDevice: true,
			WriteCompletion: true, CompletionAddr: cntVA, CompletionData: 1})
		b.LinPDMA(packet.LinPDMA{Src: dram, Dst: dstVA, Size: n,
			WriteCompletion: true, CompletionAddr: cntVA, CompletionData: 2})
		b.MsgLong(doorbell(irq))
	}))
	out, err := interruptWait(f, irq, 0, addrOf(cnt), 2, 10_000_000)
	if err != nil || out.Status != hl.HL_WAIT_CS_STATUS_COMPLETED {
		t.Fatalf("interrupt wait: %+v, %v", out, err)
	}
	if !bytes.Equal(src, dst) {
		t.Error("bytes differ after the round trip through DRAM")
	}
	if got := binary.LittleEndian.Uint32(cnt); got != 2 {
		t.Errorf("completion counter %d, want 2", got)
	}
	u.waitCI()
	if d.PQMErrors() != 0 {
		t.Errorf("%d channel errors", d.PQMErrors())
	}
	memUnmap(f, dram)
	memFree(f, h)
}

// TestPQMCompletionQueue completes through the channel's completion
// queue as Habana's runtime does in direct mode: LIN_PDMAs with
// advcnt_hbw_complq count in a 64-bit counter in host memory, and the
// queue's LBW message to the MSI-X doorbell raises the interrupt that
// WAIT_CS waits for with the counter as its target.
func TestPQMCompletionQueue(t *testing.T) {
	_, d, f := openSim(t, Gaudi3)
	u := newPQMUser(t, f, 7, 4096)
	const n = 64 << 10
	src, srcVA := hostMem(t, f, n)
	dst, dstVA := hostMem(t, f, n)
	cnt, cntVA := hostMem(t, f, 4096)
	for i := range src {
		src[i] = byte(i*5 + 1)
	}
	counter := func() uint64 { return binary.LittleEndian.Uint64(cnt) }
	irq := firstUserIRQ + 9
	u.setCQ(cntVA, irq, cqOn)
	u.push(pqmPackets(t, func(b *packet.Builder) {
		b.LinPDMA(packet.LinPDMA{Src: srcVA, Dst: dstVA, Size: n / 2})
		b.LinPDMA(packet.LinPDMA{Src: srcVA + n/2, Dst: dstVA + n/2, Size: n / 2, AdvanceCompletionQueue: true})
		// A LIN_PDMA of no bytes completes too (SCAL's tests' barrier).
		b.LinPDMA(packet.LinPDMA{AdvanceCompletionQueue: true})
	}))
	out, err := interruptWait(f, irq, 0, addrOf(cnt), 2, 10_000_000)
	if err != nil || out.Status != hl.HL_WAIT_CS_STATUS_COMPLETED {
		t.Fatalf("interrupt wait: %+v, %v", out, err)
	}
	if !bytes.Equal(src, dst) {
		t.Error("bytes differ after the copy")
	}
	if got := counter(); got != 2 {
		t.Errorf("counter %d, want 2", got)
	}
	if got := u.reg(g3.PDMA_CH_A_ECMPLTN_Q_BASE_PI); got != 2 {
		t.Errorf("ECMPLTN_Q_BASE_PI %d, want 2", got)
	}
	u.waitCI()

	// Without LBW_WR_EN the counter still counts; disabled, nothing does.
	u.setReg(g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG, g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG_ENABLE|g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG_COMPLTN_MODE)
	u.push(pqmPackets(t, func(b *packet.Builder) { b.LinPDMA(packet.LinPDMA{AdvanceCompletionQueue: true}) }))
	u.waitCI()
	if got := counter(); got != 3 {
		t.Errorf("counter %d without the interrupt, want 3", got)
	}
	u.setReg(g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG, 0)
	u.push(pqmPackets(t, func(b *packet.Builder) { b.LinPDMA(packet.LinPDMA{AdvanceCompletionQueue: true}) }))
	u.waitCI()
	if got, pi := counter(), u.reg(g3.PDMA_CH_A_ECMPLTN_Q_BASE_PI); got != 3 || pi != 3 {
		t.Errorf("disabled queue moved: counter %d, PI %d", got, pi)
	}
	// The count is the register's: seeded, the counter continues from it.
	u.setReg(g3.PDMA_CH_A_ECMPLTN_Q_BASE_PI, 100)
	u.setCQ(cntVA, irq, cqOn)
	u.push(pqmPackets(t, func(b *packet.Builder) { b.LinPDMA(packet.LinPDMA{AdvanceCompletionQueue: true}) }))
	if out, err := interruptWait(f, irq, 0, addrOf(cnt), 101, 10_000_000); err != nil || out.Status != hl.HL_WAIT_CS_STATUS_COMPLETED || counter() != 101 {
		t.Errorf("seeded queue: %+v, %v, counter %d", out, err, counter())
	}
	u.waitCI()
	if d.PQMErrors() != 0 {
		t.Fatalf("%d channel errors", d.PQMErrors())
	}
	// A queue that is not one 64-bit counter is an error that halts the
	// channel.
	u.setReg(g3.PDMA_CH_A_ECMPLTN_Q_BASE_SIZE, 16)
	u.push(pqmPackets(t, func(b *packet.Builder) { b.LinPDMA(packet.LinPDMA{AdvanceCompletionQueue: true}) }))
	waitFor(t, func() bool { return d.PQMErrors() == 1 })
	if got := counter(); got != 101 {
		t.Errorf("counter %d after a bad queue, want 101", got)
	}
	// A hard reset clears the queue's registers with the rest.
	d.Reset()
	for off := uint64(g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG); off < g3.PDMA_CH_A_ECMPLTN_Q_REGS_END; off += 4 {
		if v := u.reg(off); v != 0 {
			t.Errorf("register %#x = %#x after the reset", off, v)
		}
	}
}

// TestPQMStrictCounterUnmapped: the completion queue's counter unmapped
// while the LIN_PDMA that advances it waits in the ring is a strict mode
// violation and a page fault that halts the channel.
func TestPQMStrictCounterUnmapped(t *testing.T) {
	_, d, f := openSimMode(t, Gaudi3, StrictOn)
	u := newPQMUser(t, f, 8, 4096)
	cnt := anon(t, 4096, 4096, unix.PROT_READ|unix.PROT_WRITE)
	cntVA, err := memMapHost(f, addrOf(cnt), 4096, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	dst, dstVA := hostMem(t, f, 4096)
	irq := firstUserIRQ + 10
	u.setCQ(cntVA, irq, cqOn)
	u.push(pqmPackets(t, func(b *packet.Builder) {
		b.Gaudi3Fence(packet.Gaudi3Fence{ID: 0, Target: 1, Dec: 1})
		b.LinPDMA(packet.LinPDMA{Src: 0x44, Dst: dstVA, Size: 64, Memset: true, AdvanceCompletionQueue: true})
	}))
	time.Sleep(time.Millisecond)
	if err := memUnmap(f, cntVA); err != nil {
		t.Fatal(err)
	}
	u.setReg(g3.PDMA_CH_A_PQM_CH_FENCE_INC_0, 1) // releases the fence
	waitFor(t, func() bool { return d.PQMErrors() == 1 })
	if dst[0] != 0x44 {
		t.Error("the transfer before the completion did not run")
	}
	if binary.LittleEndian.Uint64(cnt) != 0 {
		t.Error("the unmapped counter was written")
	}
	takeViolations(t, d, ViolationPageFault)
}

// TestPQMMemsetAndWrap fills memory with LIN_PDMA memsets through a small
// ring many times over, so that packets wrap around its end.
func TestPQMMemsetAndWrap(t *testing.T) {
	_, _, f := openSim(t, Gaudi3)
	u := newPQMUser(t, f, 12, 128) // die 1; three 40-byte packets per lap
	const n = 4096
	dst, dstVA := hostMem(t, f, n)
	for round := 0; round < 20; round++ {
		pat := uint64(0x0102030405060708) * uint64(round+1)
		off := uint64(round*64) % n
		u.push(pqmPackets(t, func(b *packet.Builder) {
			b.LinPDMA(packet.LinPDMA{Src: pat, Dst: dstVA + off, Size: 100, Memset: true})
		}))
		u.waitCI()
		var p [8]byte
		binary.LittleEndian.PutUint64(p[:], pat)
		for i := uint64(0); i < 100 && off+i < n; i++ {
			if dst[off+i] != p[i%8] {
				t.Fatalf("round %d: byte %d = %#x, want %#x", round, i, dst[off+i], p[i%8])
			}
		}
	}
	if u.pi <= 128 {
		t.Fatalf("the ring never wrapped (%d bytes)", u.pi)
	}
}

// TestPQMFence: a LIN_PDMA's completion written to the channel's own
// FENCE_INC_0 releases a FENCE, as the tests' engine barrier does.
func TestPQMFence(t *testing.T) {
	_, _, f := openSim(t, Gaudi3)
	u := newPQMUser(t, f, 0, 4096)
	dst, dstVA := hostMem(t, f, 4096)
	u.push(pqmPackets(t, func(b *packet.Builder) {
		b.LinPDMA(packet.LinPDMA{Src: 0x11, Dst: dstVA, Size: 8, Memset: true, WriteCompletion: true,
			CompletionAddr: g3.PDMAChannelBlock(0) + g3.PDMA_CH_A_PQM_CH_FENCE_INC_0, CompletionData: 1})
		b.Gaudi3Fence(packet.Gaudi3Fence{ID: 0, Target: 1, Dec: 1})
		b.LinPDMA(packet.LinPDMA{Src: 0x22, Dst: dstVA + 8, Size: 8, Memset: true})
	}))
	u.waitCI()
	if dst[0] != 0x11 || dst[8] != 0x22 {
		t.Errorf("dst %x", dst[:16])
	}
	if c := u.reg(g3.PDMA_CH_A_PQM_CH_FENCE_CNT_0); c != 0 {
		t.Errorf("FENCE_CNT_0 = %d after the fence took it", c)
	}
}

// registerEventfd registers a new eventfd on f (INFO REGISTER_EVENTFD),
// closed when the test ends.
func registerEventfd(t *testing.T, f *File) {
	t.Helper()
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(efd) })
	a := hl.InfoArgs{Op: hl.HL_INFO_REGISTER_EVENTFD}
	a.SetEventfd(uint32(efd))
	if err := f.Ioctl(hl.DRM_IOCTL_HL_INFO, unsafe.Pointer(&a)); err != nil {
		t.Fatal(err)
	}
}

// TestPQMErrors: a bad packet and an unmapped address halt the channel
// with the error recorded; writing DESC_SUBMIT_FIFO_CFG again revives it.
// The bad packet raises the PDMA SEI event: the engine error is captured
// and, as an eventfd is registered, the reset it asks for waits for the
// release watchdog (seiError), so the channel serves its owner meanwhile.
func TestPQMErrors(t *testing.T) {
	_, d, f := openSimMode(t, Gaudi3, StrictOff)
	registerEventfd(t, f)
	u := newPQMUser(t, f, 1, 4096)
	bad := make([]byte, 8)
	binary.LittleEndian.PutUint32(bad[4:], 0x1F<<24) // no such opcode
	u.push(bad)
	waitFor(t, func() bool { return d.PQMErrors() == 1 })
	if u.ci() != 0 {
		t.Errorf("MSQ_CI %d past a bad packet", u.ci())
	}
	var uo hl.InfoUndefinedOpcodeEvent
	if err := infoInto(t, f, hl.HL_INFO_UNDEFINED_OPCODE_EVENT, &uo); err != nil {
		t.Fatal(err)
	}
	if uo.EngineID != uint32(g3.PDMAChannelEngine(1)) || uo.CQAddr != u.ringVA {
		t.Errorf("undefined opcode event %+v", uo)
	}
	var ee hl.InfoEngineErrEvent
	if err := infoInto(t, f, hl.HL_INFO_USER_ENGINE_ERR_EVENT, &ee); err != nil {
		t.Fatal(err)
	}
	if ee.EngineID != uint16(g3.PDMAChannelEngine(1)) || ee.ErrorCount != 1 {
		t.Errorf("engine error event %+v, want engine %d, 1 error", ee, g3.PDMAChannelEngine(1))
	}
	// The postponed reset: its DEVICE_RESET comes once the watchdog runs
	// (GET_EVENTS reads and clears: the bits are gathered).
	const want = hl.HL_NOTIFIER_EVENT_UNDEFINED_OPCODE | hl.HL_NOTIFIER_EVENT_USER_ENGINE_ERR | hl.HL_NOTIFIER_EVENT_DEVICE_RESET
	var ev uint64
	waitFor(t, func() bool { ev |= getEvents(t, f); return ev&want == want })
	if !d.WatchdogActive() {
		t.Error("no release watchdog runs after a channel error with an eventfd registered")
	}
	if f.Killed() {
		t.Error("a channel error killed the file of an owner with an eventfd")
	}
	// Reset the channel: it runs again.
	u.reset(4096)
	dst, dstVA := hostMem(t, f, 4096)
	u.push(pqmPackets(t, func(b *packet.Builder) {
		b.LinPDMA(packet.LinPDMA{Src: 0x5A, Dst: dstVA, Size: 16, Memset: true})
	}))
	u.waitCI()
	if dst[0] != 0x5A || dst[8] != 0x5A || dst[1] != 0 {
		t.Error("the reset channel did not run")
	}
	// A LIN_PDMA to an unmapped address: a page fault.
	u.push(pqmPackets(t, func(b *packet.Builder) {
		b.LinPDMA(packet.LinPDMA{Src: 0x5A, Dst: g3.VA_HOST_SPACE_PAGE_START + 1<<40, Size: 16, Memset: true})
	}))
	waitFor(t, func() bool { return d.PQMErrors() == 2 })
	var pf hl.PageFaultInfo
	if err := infoInto(t, f, hl.HL_INFO_PAGE_FAULT_EVENT, &pf); err != nil {
		t.Fatal(err)
	}
	if pf.Addr != g3.VA_HOST_SPACE_PAGE_START+1<<40 {
		t.Errorf("page fault at %#x", pf.Addr)
	}
	// A ring that is not mapped: the fetch faults.
	u.reset(4096)
	u.setReg(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_H, uint32((g3.VA_HOST_SPACE_PAGE_START+2<<40)>>32))
	u.setReg(g3.PDMA_CH_A_PQM_CH_MSQ_PI, 8)
	waitFor(t, func() bool { return d.PQMErrors() == 3 })
	// A producer index that is not a multiple of 8.
	u.reset(4096)
	u.setReg(g3.PDMA_CH_A_PQM_CH_MSQ_PI, 4)
	waitFor(t, func() bool { return d.PQMErrors() == 4 })
	// STOP halts the channel too.
	u.reset(4096)
	u.push(pqmPackets(t, func(b *packet.Builder) { b.Stop(packet.Stop{}) }))
	waitFor(t, func() bool { return d.PQMErrors() == 5 })
}

// TestPQMErrorResets: without a registered eventfd the reset a channel
// error asks for comes at once, a hard reset (hl_device_cond_reset):
// the file's holder is killed, the channel's registers are cleared, and
// once the file is closed a new owner's channel runs.
func TestPQMErrorResets(t *testing.T) {
	s, d, f := openSimMode(t, Gaudi3, StrictOff)
	u := newPQMUser(t, f, 1, 4096)
	bad := make([]byte, 8)
	binary.LittleEndian.PutUint32(bad[4:], 0x1F<<24) // no such opcode
	before := d.resetEpoch() >> 32
	u.push(bad)
	waitFor(t, f.Killed)
	// The hard reset: counted at its start, operational at its end.
	waitFor(t, func() bool { return d.resetEpoch()>>32 != before && d.State() == Operational })
	if d.PQMErrors() != 1 {
		t.Errorf("%d channel errors, want 1", d.PQMErrors())
	}
	if v := u.reg(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_L); v != 0 {
		t.Errorf("MSQ_BASE_L %#x after the reset, want it cleared", v)
	}
	f.Munmap(u.win)
	closeSim(f)
	f2, err := s.Device(0).Open()
	if err != nil {
		t.Fatalf("open after the reset: %v", err)
	}
	defer f2.Close()
	u2 := newPQMUser(t, f2, 1, 4096)
	dst, dstVA := hostMem(t, f2, 4096)
	u2.push(pqmPackets(t, func(b *packet.Builder) {
		b.LinPDMA(packet.LinPDMA{Src: 0x5A, Dst: dstVA, Size: 16, Memset: true})
	}))
	u2.waitCI()
	if dst[0] != 0x5A || dst[8] != 0x5A {
		t.Error("a new owner's channel did not run after the reset")
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// TestPQMResetInFlight: a hard reset stops a channel blocked on a fence
// and clears its registers; Close with channels running leaves no
// goroutine behind (TestMain's leak check).
func TestPQMResetInFlight(t *testing.T) {
	_, d, f := openSim(t, Gaudi3)
	u := newPQMUser(t, f, 2, 4096)
	u.push(pqmPackets(t, func(b *packet.Builder) {
		b.Gaudi3Fence(packet.Gaudi3Fence{ID: 1, Target: 5, Dec: 5}) // never released
	}))
	time.Sleep(2 * time.Millisecond)
	if u.ci() != 0 {
		t.Fatalf("MSQ_CI %d past an unreleased fence", u.ci())
	}
	d.Reset()
	if v := u.reg(g3.PDMA_CH_A_PQM_CH_MSQ_PI); v != 0 {
		t.Errorf("MSQ_PI %d after the reset", v)
	}
	// Mapped again, the channel runs.
	u2 := newPQMUser(t, f, 2, 4096)
	dst, dstVA := hostMem(t, f, 4096)
	u2.push(pqmPackets(t, func(b *packet.Builder) {
		b.LinPDMA(packet.LinPDMA{Src: 0x77, Dst: dstVA, Size: 8, Memset: true})
	}))
	u2.waitCI()
	if dst[0] != 0x77 {
		t.Error("channel did not run after the reset")
	}
	// Leave another channel blocked for Close to stop.
	u3 := newPQMUser(t, f, 3, 4096)
	u3.push(pqmPackets(t, func(b *packet.Builder) {
		b.Gaudi3Fence(packet.Gaudi3Fence{ID: 2, Target: 1, Dec: 1})
	}))
}

// pqmBench runs LIN_PDMAs of size bytes, host to DRAM, ring to completion
// through the channel's completion queue and its interrupt.
func pqmBench(b *testing.B, size uint64) {
	s, err := New(Config{Devices: Default(Gaudi3, 1).Devices, LockDir: b.TempDir(), Strict: StrictOff})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	f, err := s.Device(0).Open()
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	mapHostB := func(n uint64) ([]byte, uint64) {
		m, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { unix.Munmap(m) })
		va, err := memMapHost(f, addrOf(m), n, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		return m, va
	}
	src, srcVA := mapHostB(size)
	for i := range src {
		src[i] = byte(i)
	}
	cnt, cntVA := mapHostB(4096)
	ring, ringVA := mapHostB(1 << 16)
	h, sz, err := mapBlock(f, g3.PDMAChannelBlock(0))
	if err != nil {
		b.Fatal(err)
	}
	win, err := f.Mmap(int64(h), int(sz), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Munmap(win)
	dh, err := memAllocFlags(f, (size+32<<20-1)/(32<<20)*(32<<20), 0)
	if err != nil {
		b.Fatal(err)
	}
	dram, err := memMapDevice(f, dh, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	reg32(win, g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG).Store(1)
	reg32(win, g3.PDMA_CH_A_PQM_CH_MSQ_SIZE).Store(1<<16 - 1)
	reg32(win, g3.PDMA_CH_A_PQM_CH_MSQ_BASE_L).Store(uint32(ringVA))
	reg32(win, g3.PDMA_CH_A_PQM_CH_MSQ_BASE_H).Store(uint32(ringVA >> 32))
	irq := firstUserIRQ
	reg32(win, g3.PDMA_CH_A_ECMPLTN_Q_BASE_LO).Store(uint32(cntVA))
	reg32(win, g3.PDMA_CH_A_ECMPLTN_Q_BASE_HI).Store(uint32(cntVA >> 32))
	reg32(win, g3.PDMA_CH_A_ECMPLTN_Q_BASE_SIZE).Store(g3.PQM_ECMPLTN_Q_COUNTER_SIZE)
	reg32(win, g3.PDMA_CH_A_ECMPLTN_Q_LBW_ADDR_L).Store(uint32(gaudi3MSIXDoorbell & 0xFFFFFFFF))
	reg32(win, g3.PDMA_CH_A_ECMPLTN_Q_LBW_ADDR_H).Store(uint32(gaudi3MSIXDoorbell >> 32))
	reg32(win, g3.PDMA_CH_A_ECMPLTN_Q_LBW_PAYLD).Store(irq)
	reg32(win, g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG).Store(cqOn)
	var pi uint32
	pkt := make([]byte, 0, 64)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		seq := uint32(i + 1)
		pkt = pkt[:0]
		pkt, _ = packet.LinPDMA{Src: srcVA, Dst: dram, Size: uint32(size), HostToDevice: true,
			AdvanceCompletionQueue: true}.Append(packet.Gaudi3PQM, pkt)
		for k, c := range pkt {
			ring[(pi+uint32(k))%(1<<16)] = c
		}
		pi += uint32(len(pkt))
		reg32(win, g3.PDMA_CH_A_PQM_CH_MSQ_PI).Store(pi)
		out, err := interruptWait(f, irq, 0, addrOf(cnt), uint64(seq), 10_000_000)
		if err != nil || out.Status != hl.HL_WAIT_CS_STATUS_COMPLETED {
			b.Fatalf("wait: %+v %v", out, err)
		}
	}
	b.StopTimer()
	memUnmap(f, dram)
	memFree(f, dh)
}

func BenchmarkPQMLinPDMA4K(b *testing.B)  { pqmBench(b, 4<<10) }
func BenchmarkPQMLinPDMA64M(b *testing.B) { pqmBench(b, 64<<20) }

// TestGaudi3AllocPageSize: Gaudi3 takes the user's DRAM page size
// (supports_user_set_page_size) among the HMMU's enabled sizes.
func TestGaudi3AllocPageSize(t *testing.T) {
	_, _, f := openSim(t, Gaudi3)
	alloc := func(size, page uint64) (uint64, error) {
		var a hl.MemArgs
		a.In().Op = hl.HL_MEM_OP_ALLOC
		a.In().Alloc().MemSize = size
		a.In().Alloc().PageSize = page
		err := memIoctl(f, &a)
		return a.Out().Handle(), err
	}
	for _, c := range []struct {
		page uint64
		want error
	}{{0, nil}, {32 << 20, nil}, {1 << 30, nil}, {48 << 20, unix.EINVAL}, {64 << 20, unix.EINVAL}, {4096, unix.EINVAL}} {
		h, err := alloc(40<<20, c.page)
		if err != c.want {
			t.Errorf("page %#x: %v, want %v", c.page, err, c.want)
			continue
		}
		if err != nil {
			continue
		}
		_, ctx := dramUsage(t, f)
		page := max(c.page, 32<<20)
		if want := (40<<20 + page - 1) / page * page; ctx != want {
			t.Errorf("page %#x: %d bytes taken, want %d", c.page, ctx, want)
		}
		va, err := memMapDevice(f, h, 0, 0)
		if err != nil || va%page != 0 {
			t.Errorf("page %#x: mapped at %#x, %v", c.page, va, err)
		}
		memUnmap(f, va)
		if err := memFree(f, h); err != nil {
			t.Fatal(err)
		}
		if _, ctx := dramUsage(t, f); ctx != 0 {
			t.Errorf("page %#x: %d bytes left after FREE", c.page, ctx)
		}
	}
}

// TestPQMStrictUnmapInFlight: a buffer unmapped while a LIN_PDMA that
// reaches it waits in the ring is a strict mode violation (and a page
// fault that halts the channel).
func TestPQMStrictUnmapInFlight(t *testing.T) {
	_, d, f := openSimMode(t, Gaudi3, StrictOn)
	u := newPQMUser(t, f, 4, 4096)
	buf := anon(t, 4096, 4096, unix.PROT_READ|unix.PROT_WRITE)
	va, err := memMapHost(f, addrOf(buf), 4096, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	u.push(pqmPackets(t, func(b *packet.Builder) {
		b.Gaudi3Fence(packet.Gaudi3Fence{ID: 0, Target: 1, Dec: 1})
		b.LinPDMA(packet.LinPDMA{Src: 0x33, Dst: va, Size: 64, Memset: true})
	}))
	time.Sleep(time.Millisecond)
	if err := memUnmap(f, va); err != nil {
		t.Fatal(err)
	}
	u.setReg(g3.PDMA_CH_A_PQM_CH_FENCE_INC_0, 1) // releases the fence
	waitFor(t, func() bool { return d.PQMErrors() == 1 })
	if buf[0] != 0 {
		t.Error("the unmapped buffer was written")
	}
	takeViolations(t, d, ViolationPageFault)
}

// TestGaudi3TimeSyncPerDie: the out-of-tree driver's TIME_SYNC_PER_DIE
// answers for both dies of a Gaudi3 and refuses a third.
func TestGaudi3TimeSyncPerDie(t *testing.T) {
	_, _, f := openSim(t, Gaudi3)
	for die, want := range []error{nil, nil, unix.EINVAL} {
		r := hl.InfoTimeSyncPerDie{DieIndex: uint32(die)}
		err := infoInto(t, f, hl.HL_INFO_TIME_SYNC_PER_DIE, &r)
		if err != want {
			t.Errorf("die %d: %v, want %v", die, err, want)
		}
		if err == nil && (r.DieIndex != uint32(die) || r.HostTime == 0) {
			t.Errorf("die %d: %+v", die, r)
		}
	}
}

// TestPQMNewOwnerAfterModeWrite: an owner resets its channel's ring (a
// mode write, as Pool.Close does) and unmaps; the next owner maps the
// block, sets the ring up and rings the same MSQ_PI the channel last
// read (a job of the same size). The job runs: the channel took the old
// owner's mode write before the new owner's (the mapping waits for it),
// rather than taking the new MSQ_PI for the stale one and zeroing it.
func TestPQMNewOwnerAfterModeWrite(t *testing.T) {
	_, _, f := openSim(t, Gaudi3)
	const ch = 2
	u := newPQMUser(t, f, ch, 4096)
	dst, dstVA := hostMem(t, f, 4096)
	job := func(v byte) []byte {
		return pqmPackets(t, func(b *packet.Builder) {
			b.LinPDMA(packet.LinPDMA{Src: uint64(v), Dst: dstVA, Size: 8, Memset: true})
		})
	}
	u.push(job(1))
	u.waitCI()
	for round := range 20 {
		v := byte(round + 2)
		// The old owner's last write, then the new owner's mapping.
		u.setReg(g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG, g3.PQM_DESC_SUBMIT_MODE_PI_CI_IN_MEM)
		h, size, err := mapBlock(f, g3.PDMAChannelBlock(ch))
		if err != nil {
			t.Fatal(err)
		}
		win, err := f.Mmap(int64(h), int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Munmap(win) })
		u.win = win
		u.reset(4096)
		u.setReg(g3.PDMA_CH_A_PQM_CH_MSQ_PI, 0)
		u.push(job(v))
		u.waitCI()
		if dst[0] != v {
			t.Fatalf("round %d: dst[0] = %d, want %d", round, dst[0], v)
		}
	}
}
