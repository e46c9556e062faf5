package sim

import (
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"golang.org/x/sys/unix"
)

// Gaudi3's sync managers, one per HDCORE (eight, four per die), each with
// two identical groups of 8192 sync objects and 1024 monitors in its OBJS
// block and 64 completion queues in its GLBL block (uapi/gaudi3,
// pqm_regs.go, with the sources). The model is syncmgr.go's, with the
// Gaudi3 register layout: MON_CONFIG's WR_NUM in bits 27:24, the GLBL
// registers of sob_glbl_regs.h, the completion queues of an HDCORE shared
// by its two groups.
//
// Users map the groups and GLBL blocks the driver exposes (MAP_BLOCK,
// then mmap of the handle): both groups and the GLBL block of every
// HDCORE but HDCORE 0, whose group 0 and GLBL block hold the driver's
// reserved objects; only HDCORE 0's group 1 is exposed. The registers live
// in memory users map, so a load through a mapping reads the live value
// of a sync object (Habana's tests poll one so before completion queues
// exist); register writes by the device (PQM messages, LIN_PDMA
// completions, monitor payloads) are mirrored there. A user's store
// through a mapping lands in that memory without passing through the
// sync manager (the simulator cannot trap it): a plain value (bits 14:0,
// no INC) sets the sync object as the register write would, but no
// monitor sees the change, and an INC store is not applied as an
// increment.
//
// The registers are in one memory region per mappable block kind: for
// each HDCORE, group 0, group 1 and the GLBL block, sm3Region bytes each.
// They start in the simulator's memory, move to a memfd when a block is
// first mapped, and, for a served file (OpenFor), into its memory file at
// the block handles' offsets, where its client maps them.

const (
	sm3Region   = g3.SYNC_MNGR_OBJS_GRP_OFFSET // bytes of one region
	sm3PerHD    = 3                            // group 0, group 1, GLBL
	sm3Regions  = g3.NUM_OF_HDCORES * sm3PerHD
	sm3GlblOff  = 2 * sm3Region // block3's offset of a GLBL register
	sm3IDBase   = 32            // block id of region 0, past the PDMA channels'
	sm3IDStride = sm3Region / pageSize
)

// gaudi3SMLayout is a Gaudi3 sync manager group's register layout.
var gaudi3SMLayout = smLayout{g3.HDCORE_NUM_OF_SOB_PER_GRP, g3.HDCORE_NUM_OF_MON_PER_GRP,
	g3.SOB_OBJS_MON_PAY_ADDRL_0, g3.SOB_OBJS_MON_PAY_ADDRH_0, g3.SOB_OBJS_MON_PAY_DATA_0,
	g3.SOB_OBJS_MON_ARM_0, g3.SOB_OBJS_MON_CONFIG_0, g3.SOB_OBJS_MON_STATUS_0}

// sm3Mem is where the Gaudi3 registers live.
type sm3Mem struct {
	b      []byte // sm3Regions regions
	fd     int    // the memfd b maps, -1 while b is the simulator's memory
	off    int64  // where b starts in fd
	bound  *File  // the served file whose memory file fd is, or nil
	mapped bool   // a user mapped the simulator's own memfd
}

// newGaudi3 makes the sixteen groups, block 2*hd+grp.
func (s *syncMgr) newGaudi3() {
	s.mem = sm3Mem{b: make([]byte, sm3Regions*sm3Region), fd: -1}
	for hd := range g3.NUM_OF_HDCORES {
		cqs := new([smCQs]smCQ)
		for grp := range 2 {
			s.blocks = append(s.blocks, &smBlock{base: g3.SyncMngrObjsBlock(hd, grp), g3: true, cqs: cqs})
		}
	}
	s.repointLocked()
}

// repointLocked points the groups at the register memory.
func (s *syncMgr) repointLocked() {
	for i, b := range s.blocks {
		hd, grp := i/2, i%2
		r := hd*sm3PerHD + grp
		b.regs = words(s.mem.b[r*sm3Region : (r+1)*sm3Region])
		b.sobs = b.regs[:s.lay.sobs:s.lay.sobs]
		g := hd*sm3PerHD + 2
		b.glbl = words(s.mem.b[g*sm3Region : (g+1)*sm3Region])
	}
}

// placeLocked moves the registers to mem, with their values.
func (s *syncMgr) placeLocked(mem []byte) {
	copy(mem, s.mem.b)
	s.mem.b = mem
	s.repointLocked()
}

// block3 is block on Gaudi3: the group holding addr and the offset in it,
// or for a GLBL register the HDCORE's group 0 and sm3GlblOff plus the
// register's offset.
func (s *syncMgr) block3(addr uint64) (*smBlock, uint64) {
	rel := addr - g3.HD0_SYNC_MNGR_OBJS_BASE
	if addr < g3.HD0_SYNC_MNGR_OBJS_BASE || rel >= g3.NUM_OF_HDCORES*g3.HDCORE_OFFSET {
		return nil, 0
	}
	hd, off := rel/g3.HDCORE_OFFSET, rel%g3.HDCORE_OFFSET
	switch {
	case off < 2*g3.SYNC_MNGR_OBJS_GRP_OFFSET:
		return s.blocks[2*hd+off/g3.SYNC_MNGR_OBJS_GRP_OFFSET], off % g3.SYNC_MNGR_OBJS_GRP_OFFSET
	case off-sm3GlblOff < g3.SYNC_MNGR_GLBL_BLOCK_SIZE:
		return s.blocks[2*hd], off
	}
	return nil, 0
}

// writeGlbl3 writes GLBL register off of group b's HDCORE.
func (s *syncMgr) writeGlbl3(b *smBlock, off uint64, val uint32) {
	if off%4 != 0 || off >= g3.SYNC_MNGR_GLBL_BLOCK_SIZE {
		return
	}
	b.glbl[off/4] = val
	for _, r := range []struct {
		start uint64
		field func(*smCQ) *uint32
	}{
		{g3.SOB_GLBL_CQ_BASE_ADDR_L_0, func(c *smCQ) *uint32 { return &c.baseL }},
		{g3.SOB_GLBL_CQ_BASE_ADDR_H_0, func(c *smCQ) *uint32 { return &c.baseH }},
		{g3.SOB_GLBL_CQ_SIZE_LOG2_0, func(c *smCQ) *uint32 { return &c.log2 }},
		{g3.SOB_GLBL_CQ_PI_0, func(c *smCQ) *uint32 { return &c.pi }},
		{g3.SOB_GLBL_LBW_ADDR_L_0, func(c *smCQ) *uint32 { return &c.lbwL }},
		{g3.SOB_GLBL_LBW_ADDR_H_0, func(c *smCQ) *uint32 { return &c.lbwH }},
		{g3.SOB_GLBL_LBW_DATA_0, func(c *smCQ) *uint32 { return &c.lbwData }},
		{g3.SOB_GLBL_CQ_INC_MODE_0, func(c *smCQ) *uint32 { return &c.inc }},
	} {
		if off >= r.start && off < r.start+smCQs*4 {
			*r.field(&b.cqs[(off-r.start)/4]) = val
			return
		}
	}
}

// sm3Block returns the region holding addr among those users may map,
// with its block id and size (MAP_BLOCK: like the PDMA channels, any
// address inside the block).
func sm3Block(addr uint64) (id, size uint32, ok bool) {
	for r := range sm3Regions {
		base, size, user := sm3RegionBlock(r)
		if user && addr >= base && addr-base < uint64(size) {
			return uint32(sm3IDBase + r*sm3IDStride), size, true
		}
	}
	return 0, 0, false
}

// sm3BlockBase reports whether addr is the base address of a user sync
// manager block (gaudi3_get_hw_block_id takes no other address).
func sm3BlockBase(addr uint64) bool {
	for r := range sm3Regions {
		if base, _, user := sm3RegionBlock(r); user && addr == base {
			return true
		}
	}
	return false
}

// sm3RegionBlock returns region r's block address and size, and whether
// users may map it.
func sm3RegionBlock(r int) (addr uint64, size uint32, user bool) {
	hd, k := r/sm3PerHD, r%sm3PerHD
	if k == 2 {
		addr = g3.SyncMngrGlblBlock(hd)
	} else {
		addr = g3.SyncMngrObjsBlock(hd, k)
	}
	size, user = g3.SyncMngrUserBlock(addr)
	return addr, size, user
}

// sm3RegionOf returns the region of block id and its size, or false.
func sm3RegionOf(id uint64) (r int, size uint32, ok bool) {
	if id < sm3IDBase || (id-sm3IDBase)%sm3IDStride != 0 || (id-sm3IDBase)/sm3IDStride >= sm3Regions {
		return 0, 0, false
	}
	r = int((id - sm3IDBase) / sm3IDStride)
	_, size, ok = sm3RegionBlock(r)
	return r, size, ok
}

// mapBlock3 maps region r of the registers for a user (the mmap of a
// sync manager block).
func (s *syncMgr) mapBlock3(f *File, r, length, prot, flags int) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.rem != nil {
		if err := s.bindLocked(f); err != nil {
			return nil, err
		}
	} else if s.mem.fd < 0 {
		fd, err := unix.MemfdCreate("gaudi-sim-sync-mngr", unix.MFD_CLOEXEC)
		if err != nil {
			return nil, err
		}
		if err := unix.Ftruncate(fd, sm3Regions*sm3Region); err != nil {
			unix.Close(fd)
			return nil, err
		}
		mem, err := unix.Mmap(fd, 0, sm3Regions*sm3Region, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			unix.Close(fd)
			return nil, err
		}
		s.placeLocked(mem)
		s.mem.fd, s.mem.off = fd, 0
	}
	if s.mem.bound == nil {
		s.mem.mapped = true
	}
	return mmapBlock(s.mem.fd, s.mem.off+int64(r*sm3Region), length, prot, flags)
}

// sm3FileBase is where a served file's memory file holds region 0: the
// mmap offset of its block handle.
const sm3FileBase = (sm3IDBase | mmapTypeBlock) << 12

// bindLocked moves the registers into served file f's memory file, where
// its client maps the blocks through the served node. A user of the
// simulator's own memfd keeps the registers there (EBUSY), as does
// another served file.
func (s *syncMgr) bindLocked(f *File) error {
	if s.mem.bound == f {
		return nil
	}
	if s.mem.bound != nil || s.mem.mapped {
		return unix.EBUSY
	}
	fd := f.MmapFile()
	if fd < 0 {
		return unix.EINVAL
	}
	mem, err := unix.Mmap(fd, sm3FileBase, sm3Regions*sm3Region, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	s.dropMemLocked(mem)
	s.mem.fd, s.mem.off, s.mem.bound = fd, sm3FileBase, f
	return nil
}

// dropMemLocked moves the registers to mem and releases the memory they
// were in.
func (s *syncMgr) dropMemLocked(mem []byte) {
	old := s.mem
	s.placeLocked(mem)
	if old.fd >= 0 {
		unix.Munmap(old.b)
		if old.bound == nil {
			unix.Close(old.fd)
		}
	}
	s.mem.fd, s.mem.off, s.mem.bound, s.mem.mapped = -1, 0, nil, false
}

// serveBlock3 is MAP_BLOCK of a sync manager block by served file f: the
// registers move into its memory file.
func (s *syncMgr) serveBlock3(f *File) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bindLocked(f)
}

// unbind3 takes the registers back from served file f, released: they
// keep their values in the simulator's memory.
func (s *syncMgr) unbind3(f *File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mem.bound == f && f != nil {
		s.dropMemLocked(make([]byte, sm3Regions*sm3Region))
	}
}

// close3 releases the register memfd (System.Close).
func (s *syncMgr) close3() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mem.fd >= 0 {
		s.dropMemLocked(make([]byte, sm3Regions*sm3Region))
	}
}
