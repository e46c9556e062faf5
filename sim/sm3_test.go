package sim

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/packet"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// mapSMBlock maps the sync manager block at addr.
func mapSMBlock(t *testing.T, f *File, addr uint64) []byte {
	t.Helper()
	h, size, err := mapBlock(f, addr)
	if err != nil {
		t.Fatalf("MAP_BLOCK %#x: %v", addr, err)
	}
	win, err := f.Mmap(int64(h), int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Munmap(win) })
	return win
}

// cpMsgBases is the program of gaudi3_pdma_config_pqm_cp_msg_base_addr:
// MSG_LONGs setting CP_MSG_BASE_ADDR_0..3 of every PDMA group to HDCORE
// 0's monitors and sync objects (bases 0 and 1) and HDCORE 1's (2 and 3).
func cpMsgBases(b *packet.Builder) {
	bases := [4]uint64{
		g3.SyncMngrObjsBlock(0, 0) + g3.SOB_OBJS_MON_PAY_ADDRL_0,
		g3.SyncMngrObjsBlock(0, 0),
		g3.SyncMngrObjsBlock(1, 0) + g3.SOB_OBJS_MON_PAY_ADDRL_0,
		g3.SyncMngrObjsBlock(1, 0),
	}
	for _, grp := range g3.PDMAGroupBases {
		reg := grp + g3.PDMA_CMN_B_OFFSET + pqmCmnBCPMsgBase0
		for j, a := range bases {
			b.MsgLong(packet.MsgLong{Addr: reg + 8*uint64(j), Value: uint32(a)})
			b.MsgLong(packet.MsgLong{Addr: reg + 8*uint64(j) + 4, Value: uint32(a >> 32)})
		}
	}
}

// sobShort is the MSG_SHORT that updates HDCORE 1's sync object sob
// through base 3.
func sobShort(sob int, val uint32) packet.MsgShort {
	return packet.MsgShort{Base: 3, Offset: uint16(g3.SOBOffset(sob)), Value: val}
}

func TestGaudi3SyncMngrMapBlock(t *testing.T) {
	_, _, f := openSim(t, Gaudi3)
	for _, c := range []struct {
		name string
		addr uint64
		size uint32
	}{
		{"HD0 group 0 (driver's)", g3.SyncMngrObjsBlock(0, 0), 0},
		{"HD0 group 0 SOB 19", g3.SyncMngrObjsBlock(0, 0) + g3.SOBOffset(19), 0},
		{"HD0 GLBL (driver's)", g3.SyncMngrGlblBlock(0), 0},
		{"HD0 group 1", g3.SyncMngrObjsBlock(0, 1), g3.SM_OBJS_BLOCK_SIZE},
		{"HD1 group 0", g3.SyncMngrObjsBlock(1, 0), g3.SM_OBJS_BLOCK_SIZE},
		{"HD1 group 0 SOB 5 (inside the block)", g3.SyncMngrObjsBlock(1, 0) + g3.SOBOffset(5), 0},
		{"HD1 group 0 SM_SEC", g3.SyncMngrObjsBlock(1, 0) + g3.SOB_OBJS_SM_SEC_0_0, 0},
		{"HD1 GLBL", g3.SyncMngrGlblBlock(1), g3.SYNC_MNGR_GLBL_BLOCK_SIZE},
		{"HD7 group 1 (die 1)", g3.SyncMngrObjsBlock(7, 1), g3.SM_OBJS_BLOCK_SIZE},
		{"HD7 GLBL", g3.SyncMngrGlblBlock(7), g3.SYNC_MNGR_GLBL_BLOCK_SIZE},
		{"past HD7", g3.SyncMngrObjsBlock(8, 0), 0},
	} {
		h, size, err := mapBlock(f, c.addr)
		switch {
		case c.size != 0 && (err != nil || size != c.size || (h>>12)&mmapTypeMask != mmapTypeBlock):
			t.Errorf("%s: handle %#x size %#x, %v", c.name, h, size, err)
		case c.size == 0 && err != unix.EINVAL:
			t.Errorf("%s: %v, want EINVAL", c.name, err)
		}
	}
	h, _, err := mapBlock(f, g3.SyncMngrObjsBlock(2, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, length := range []int{pageSize, g3.SM_OBJS_BLOCK_SIZE + pageSize} {
		if _, err := f.Mmap(int64(h), length, unix.PROT_READ, unix.MAP_SHARED); err != unix.EINVAL {
			t.Errorf("mmap of %d bytes: %v, want EINVAL", length, err)
		}
	}
	// The handle of HD0's group 0 (region 0) does not map either.
	if _, err := f.Mmap(int64((sm3IDBase|mmapTypeBlock)<<12), g3.SM_OBJS_BLOCK_SIZE, unix.PROT_READ, unix.MAP_SHARED); err != unix.EINVAL {
		t.Errorf("mmap of HD0 group 0: %v, want EINVAL", err)
	}
	// Two mappings of a block are the same registers.
	a := mapSMBlock(t, f, g3.SyncMngrObjsBlock(2, 1))
	b := mapSMBlock(t, f, g3.SyncMngrObjsBlock(2, 1))
	reg32(a, g3.SOBOffset(7)).Store(0x1234)
	if got := reg32(b, g3.SOBOffset(7)).Load(); got != 0x1234 {
		t.Errorf("second mapping reads %#x", got)
	}
}

// TestGaudi3PreCQ follows Habana's Gaudi3 tests before their completion
// queues exist (gaudi3_pqm_submit_cs_no_cq, gaudi3_wait_for_cs_no_cq):
// the CP_MSG_BASE_ADDR registers programmed through a channel, then jobs
// whose first sets the inactive sync object of HDCORE 1 to 0 and each of
// which adds 1 to the active one, polled through the mapped HD1 OBJS block
// until it reaches the number of jobs. Each job's LIN_PDMA completes to
// HDCORE 0's sync object 8191 as the tests' dummy completion.
func TestGaudi3PreCQ(t *testing.T) {
	_, d, f := openSim(t, Gaudi3)
	objs := mapSMBlock(t, f, g3.SyncMngrObjsBlock(1, 0))
	u := newPQMUser(t, f, 4, 64<<10)
	u.push(pqmPackets(t, func(b *packet.Builder) {
		cpMsgBases(b)
		b.MsgLong(packet.MsgLong{Addr: g3.SyncMngrObjsBlock(1, 0) + g3.SOBOffset(1), Value: 77})
	}))
	u.waitCI()
	if got := reg32(objs, g3.SOBOffset(1)).Load(); got != 77 {
		t.Fatalf("SOB 1 of HD1 reads %d through the mapping, want 77", got)
	}
	const jobs = 5
	dst, dstVA := hostMem(t, f, 4096)
	dummy := g3.SyncMngrObjsBlock(0, 0) + g3.SOBOffset(8191)
	for j := range jobs {
		u.push(pqmPackets(t, func(b *packet.Builder) {
			b.LinPDMA(packet.LinPDMA{Src: uint64(j + 1), Dst: dstVA + 8*uint64(j), Size: 8, Memset: true,
				WriteCompletion: true, CompletionAddr: dummy, CompletionData: g3.SOB_OBJ_INC_BY_ONE})
			if j == 0 {
				b.MsgShort(sobShort(1, 0))
			}
			b.MsgShort(sobShort(0, g3.SOB_OBJ_INC_BY_ONE))
		}))
	}
	deadline := time.Now().Add(10 * time.Second)
	for reg32(objs, g3.SOBOffset(0)).Load() != jobs {
		if time.Now().After(deadline) {
			t.Fatalf("SOB 0 of HD1 reads %d, want %d", reg32(objs, 0).Load(), jobs)
		}
		time.Sleep(100 * time.Microsecond)
	}
	if got := reg32(objs, g3.SOBOffset(1)).Load(); got != 0 {
		t.Errorf("inactive SOB reads %d, want 0", got)
	}
	if got := d.hardware().sm.sob(0, 8191); got != jobs {
		t.Errorf("dummy SOB 8191 of HD0 = %d, want %d", got, jobs)
	}
	for j := range jobs {
		if dst[8*j] != byte(j+1) {
			t.Errorf("job %d did not run", j)
		}
	}
	// Values hold 15 bits: an add past 0x7FFF wraps.
	u.push(pqmPackets(t, func(b *packet.Builder) {
		b.MsgShort(sobShort(2, 0x7FFF))
		b.MsgShort(sobShort(2, g3.SOB_OBJ_INC_MASK|2))
	}))
	u.waitCI()
	if got := reg32(objs, g3.SOBOffset(2)).Load(); got != 1 {
		t.Errorf("SOB 2 after 0x7FFF + 2 = %#x, want 1", got)
	}
	if d.PQMErrors() != 0 {
		t.Errorf("%d channel errors", d.PQMErrors())
	}
	d.mu.Lock()
	razwi := d.errs.razwiAvailable
	d.mu.Unlock()
	if razwi {
		t.Error("an illegal access was recorded")
	}
	// A hard reset clears the sync objects users see.
	d.Reset()
	if got := reg32(objs, g3.SOBOffset(0)).Load(); got != 0 {
		t.Errorf("SOB 0 reads %d after the reset", got)
	}
}

// TestGaudi3CQMode follows Habana's completion database on Gaudi3
// (hltests_completion_db_init, hltests_submit_job, hltests_wait_for_job):
// an HDCORE 1 completion queue configured through MSG_LONGs to its GLBL
// registers (a 64-bit counter in host memory, incremented; its LBW write
// the interrupt id to the MSI-X doorbell), a monitor armed on a sync
// object reaching the job's count with the queue enabled, and WAIT_CS's
// interrupt mode on the counter.
func TestGaudi3CQMode(t *testing.T) {
	_, d, f := openSim(t, Gaudi3)
	glbl := mapSMBlock(t, f, g3.SyncMngrGlblBlock(1))
	u := newPQMUser(t, f, 13, 64<<10) // a die-1 channel
	cnt, cntVA := hostMem(t, f, 4096)
	irq := firstUserIRQ + 5
	const cq, mon, sob = 3, 40, 16
	glblReg := func(start uint64) uint64 { return g3.SyncMngrGlblBlock(1) + start + 4*cq }
	objs := g3.SyncMngrObjsBlock(1, 0)
	monReg := func(start uint64) uint64 { return objs + start + 4*mon }
	msix := uint64(g3.D0_PCIE_MSIX_BASE)
	u.push(pqmPackets(t, func(b *packet.Builder) {
		cpMsgBases(b)
		for _, w := range []struct {
			addr uint64
			val  uint32
		}{
			{glblReg(g3.SOB_GLBL_CQ_BASE_ADDR_L_0), uint32(cntVA)},
			{glblReg(g3.SOB_GLBL_CQ_BASE_ADDR_H_0), uint32(cntVA >> 32)},
			{glblReg(g3.SOB_GLBL_CQ_SIZE_LOG2_0), 3},
			{glblReg(g3.SOB_GLBL_LBW_ADDR_L_0), uint32(msix)},
			{glblReg(g3.SOB_GLBL_LBW_ADDR_H_0), uint32(msix >> 32)},
			{glblReg(g3.SOB_GLBL_LBW_DATA_0), irq},
			{glblReg(g3.SOB_GLBL_CQ_INC_MODE_0), 1},
		} {
			b.MsgLong(packet.MsgLong{Addr: w.addr, Value: w.val})
		}
	}))
	u.waitCI()
	if got := reg32(glbl, g3.SOB_GLBL_LBW_DATA_0+4*cq).Load(); got != irq {
		t.Errorf("LBW_DATA reads %d through the mapping, want %d", got, irq)
	}
	const jobs = 3
	for j := range jobs {
		u.push(pqmPackets(t, func(b *packet.Builder) {
			if j == 0 {
				b.MsgShort(sobShort(sob, 0))
				for _, w := range []struct {
					addr uint64
					val  uint32
				}{
					{monReg(g3.SOB_OBJS_MON_PAY_ADDRL_0), 64 + cq}, // the queue's id
					{monReg(g3.SOB_OBJS_MON_PAY_DATA_0), 1},
					{monReg(g3.SOB_OBJS_MON_CONFIG_0), 1<<4 | 1<<8}, // CQ_EN, LBW_EN
					// SOD jobs, SOP equal, MASK all but sob%8, SID sob/8.
					{monReg(g3.SOB_OBJS_MON_ARM_0), jobs<<17 | 1<<16 | (0xFF&^(1<<(sob%8)))<<8 | sob/8},
				} {
					b.MsgLong(packet.MsgLong{Addr: w.addr, Value: w.val})
				}
			}
			b.LinPDMA(packet.LinPDMA{Src: 0x55, Dst: cntVA + 64, Size: 8, Memset: true})
			b.MsgShort(sobShort(sob, g3.SOB_OBJ_INC_BY_ONE))
		}))
	}
	out, err := interruptWait(f, irq, 0, addrOf(cnt), 1, 10_000_000)
	if err != nil || out.Status != hl.HL_WAIT_CS_STATUS_COMPLETED {
		t.Fatalf("interrupt wait: %+v, %v", out, err)
	}
	if got := binary.LittleEndian.Uint64(cnt); got != 1 {
		t.Errorf("counter %d, want 1 (one monitor fired)", got)
	}
	u.waitCI()
	if got := d.hardware().sm.sob(2, sob); got != jobs {
		t.Errorf("SOB %d = %d, want %d", sob, got, jobs)
	}
	if d.PQMErrors() != 0 {
		t.Errorf("%d channel errors", d.PQMErrors())
	}
}

// TestGaudi3SyncMngrClose: System.Close releases the sync managers'
// register memfd, and a mapping made before keeps its memory readable.
func TestGaudi3SyncMngrClose(t *testing.T) {
	s := newTestSystem(t, Default(Gaudi3, 1))
	f, err := s.Device(0).Open()
	if err != nil {
		t.Fatal(err)
	}
	h, size, err := mapBlock(f, g3.SyncMngrObjsBlock(3, 0))
	if err != nil {
		t.Fatal(err)
	}
	before := countFDs(t)
	win, err := f.Mmap(int64(h), int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	if n := countFDs(t); n != before+1 {
		t.Errorf("descriptors %d after the first mapping, want %d", n, before+1)
	}
	sm := s.Device(0).hardware().sm
	sm.mu.Lock()
	fd := sm.mem.fd
	sm.mu.Unlock()
	f.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != unix.EBADF {
		t.Errorf("register memfd %d still open after Close: %v", fd, err)
	}
	_ = reg32(win, 0).Load()
	if err := unix.Munmap(win); err != nil {
		t.Error(err)
	}
}
