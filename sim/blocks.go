package sim

import (
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"golang.org/x/sys/unix"
)

// HW blocks users may map (HL_MEM_OP_MAP_BLOCK, then mmap of the block
// handle). Gaudi2 exposes the table gaudi2_user_mapped_blocks_init builds
// (gaudi2/gaudi2.c); first-generation Gaudi exposes none
// (gaudi_get_hw_block_id answers EPERM); Gaudi3 the user-owned PDMA
// channels' CH_A blocks (pqm.go) and 22 sync manager blocks (sm3.go). The
// Gaudi2 addresses are offsets from
// CFG_BASE, from the register map (include/gaudi2/asic_reg).

// mmap offset types (HL_MMAP_TYPE_*, common/habanalabs.h), as byte offsets:
// the type sits in bits 63:59 of the page offset shifted by PAGE_SHIFT.
const (
	mmapTypeShift = 59 - 12 // HL_MMAP_TYPE_SHIFT, in pages
	mmapTypeMask  = 0x1f << mmapTypeShift
	mmapTypeCB    = 0x2 << mmapTypeShift
	mmapTypeBlock = 0x4 << mmapTypeShift
	mmapTypeTS    = 0x10 << mmapTypeShift
	mmapValueMask = 0x1FFFFFFFFFFF >> 12 // HL_MMAP_OFFSET_VALUE_MASK
)

// userBlock is a struct user_mapped_block.
type userBlock struct {
	addr uint32 // offset from CFG_BASE
	size uint32
}

// Register block bases of the Gaudi2 user-mapped blocks.
var (
	// gaudi2_arc_dccm_bases, indexed by the ARC CPU id (CPU_ID_*).
	gaudi2ArcDCCM = [...]uint32{
		0x4e90000, 0x4eb0000, 0x4ed0000, 0x4ef0000, 0x42c0000, 0x46c0000, // scheduler ARCs 0-5
		0x4000000, 0x4010000, 0x4020000, 0x4030000, 0x4040000, 0x4050000, // DCORE0 TPC0-5
		0x4200000, 0x4210000, 0x4220000, 0x4230000, 0x4240000, 0x4250000, // DCORE1 TPC0-5
		0x4400000, 0x4410000, 0x4420000, 0x4430000, 0x4440000, 0x4450000, // DCORE2 TPC0-5
		0x4600000, 0x4610000, 0x4620000, 0x4630000, 0x4640000, 0x4650000, // DCORE3 TPC0-5
		0x4060000,            // DCORE0 TPC6
		0x40c0000, 0x44c0000, // MME QM ARCs of DCORE0 and DCORE2
		0x41c0000, 0x41d0000, 0x43c0000, 0x43d0000, 0x45c0000, 0x45d0000, 0x47c0000, 0x47d0000, // EDMA 0-7
		0x4c80000, 0x4c90000, // PDMA 0-1
		0x4e00000, 0x4e10000, // ROT 0-1
		0x5410000, 0x5430000, 0x5490000, 0x54b0000, 0x5510000, 0x5530000, // NIC 0-2, two QMs each
		0x5590000, 0x55b0000, 0x5610000, 0x5630000, 0x5690000, 0x56b0000, // NIC 3-5
		0x5710000, 0x5730000, 0x5790000, 0x57b0000, 0x5810000, 0x5830000, // NIC 6-8
		0x5890000, 0x58b0000, 0x5910000, 0x5930000, 0x5990000, 0x59b0000, // NIC 9-11
	}
	// The ACP engine blocks of the four farm ARCs and the four MME QM ARCs.
	gaudi2ACP = [...]uint32{
		0x4e8f000, 0x4eaf000, 0x4ecf000, 0x4eef000, 0x40cf000, 0x42cf000, 0x44cf000, 0x46cf000,
	}
	// Decoder command blocks: two per DCORE, then the two PCIe decoders.
	gaudi2Dec = [...]uint32{
		0x41e0000, 0x41f0000, 0x43e0000, 0x43f0000, 0x45e0000, 0x45f0000, 0x47e0000, 0x47f0000,
		0x4f00000, 0x4f10000,
	}
)

const (
	arcDCCMBlockSize = 0x8000    // ARC_DCCM_BLOCK_SIZE
	hlBlockSize      = 0x1000    // HL_BLOCK_SIZE
	nicUMR0Base      = 0x5400000 // mmNIC0_UMR0_0_UNSECURE_DOORBELL0_BASE
	nicOffset        = 0x80000   // NIC_OFFSET: between NIC macros
	nicQMOffset      = 0x20000   // NIC_QM_OFFSET: between the QMs of a macro
	nicUMROffset     = 0x1000    // NIC_UMR_OFFSET
	nicEngines       = 24        // NIC_NUMBER_OF_ENGINES
	nicUMRBlocks     = 15        // NUM_OF_USER_NIC_UMR_BLOCKS
	smObjsBase       = 0x4100000 // mmDCORE0_SYNC_MNGR_OBJS_BASE
	smGlblBase       = 0x411e000 // mmDCORE0_SYNC_MNGR_GLBL_BASE
	smObjsBlockSize  = 0x14000   // SM_OBJS_BLOCK_SIZE
	dcoreOffset      = 0x200000  // DCORE_OFFSET
	gaudi2Dcores     = 4         // NUM_OF_DCORES
)

// gaudi2UserBlocks is the mapped_blocks table: the ARC DCCMs (the four
// farm ARCs have double-size DCCMs), the ACP blocks, 15 UMR doorbell blocks
// per NIC engine, the decoders, then the sync manager objects and global
// blocks of DCOREs 1-3. NUM_USER_MAPPED_BLOCKS entries.
var gaudi2UserBlocks = func() []userBlock {
	var b []userBlock
	for i, a := range gaudi2ArcDCCM {
		size := uint32(arcDCCMBlockSize)
		if i <= 3 { // CPU_ID_SCHED_ARC0..3
			size *= 2
		}
		b = append(b, userBlock{a, size})
	}
	for _, a := range gaudi2ACP {
		b = append(b, userBlock{a, hlBlockSize})
	}
	for i := 0; i < nicEngines*nicUMRBlocks; i++ {
		nic, umr := i/nicUMRBlocks, i%nicUMRBlocks
		a := nicUMR0Base + (nic/2)*nicOffset + (nic%2)*nicQMOffset + umr*nicUMROffset
		b = append(b, userBlock{uint32(a), hlBlockSize})
	}
	for _, a := range gaudi2Dec {
		b = append(b, userBlock{a, hlBlockSize})
	}
	for i := 1; i < gaudi2Dcores; i++ {
		b = append(b,
			userBlock{uint32(smObjsBase + i*dcoreOffset), smObjsBlockSize},
			userBlock{uint32(smGlblBase + i*dcoreOffset), hlBlockSize})
	}
	return b
}()

// blockID is get_hw_block_id: the index and size of the block at addr.
func (p *profile) blockID(addr uint64) (id, size uint32, err error) {
	if p.asic == Gaudi3 {
		// gaudi3_get_hw_block_id (the out-of-tree driver,
		// HabanaAI/drivers.accel.habanalabs.kernel,
		// drivers/accel/habanalabs/gaudi3/gaudi3.c; as issue 28 reports
		// it) takes a user block's exact base address only, for the PDMA
		// channels' CH_A blocks and the sync managers' blocks alike; an
		// address inside a block is EINVAL ("Invalid block address"), as
		// is any other. The PDMA blocks are those of the channels
		// pdma_user_owned_ch_mask gives the user (pqm.go), 4 KiB each, the
		// block id being the channel; the sync managers' exposed blocks
		// follow (sm3.go), their ids from sm3IDBase on.
		if id, size, ok := sm3Block(addr); ok {
			if !sm3BlockBase(addr) {
				return 0, 0, unix.EINVAL
			}
			return id, size, nil
		}
		ch, ok := pqmBlock(addr)
		if !ok || addr != g3.PDMAChannelBlock(ch) {
			return 0, 0, unix.EINVAL
		}
		return uint32(ch), pqmPage, nil
	}
	if !p.dramVirtual {
		return 0, 0, unix.EPERM // gaudi_get_hw_block_id
	}
	for i, b := range gaudi2UserBlocks {
		if addr == gaudi2CFGBase+uint64(b.addr) {
			return uint32(i), b.size, nil
		}
	}
	return 0, 0, unix.EINVAL
}

// mapBlock is map_block: the block's mmap handle and size, both 0 on
// failure.
func (p *profile) mapBlock(addr uint64) (handle uint64, size uint32, err error) {
	id, size, err := p.blockID(addr)
	if err != nil {
		return 0, 0, err
	}
	return (uint64(id) | mmapTypeBlock) << 12, size, nil
}

// mmapBlock is hl_hw_block_mmap with the ASIC's hw_block_mmap checks: the
// page offset holds the block id, and only a whole block maps (the length
// rounded up to pages must be the block's size). The driver marks the
// mapping VM_DONTCOPY and VM_DONTDUMP (with VM_IO and VM_PFNMAP, which
// have no equivalent for ordinary memory); the simulator's zeroed memory
// gets the same two through madvise, so a forked child does not inherit
// it and core dumps leave it out.
func (f *File) mmapBlock(off uint64, length int, prot, flags int) ([]byte, error) {
	p := &f.dev.prof
	if !p.dramVirtual {
		return nil, unix.EPERM // gaudi_block_mmap
	}
	id := (off >> 12) & mmapValueMask
	size := uint64(length+pageSize-1) &^ (pageSize - 1)
	if p.asic == Gaudi3 {
		// gaudi3_block_mmap was not read; the common rule holds: the id
		// names a user block and the whole block maps. The mapping is the
		// channel's registers (pqm.go) or a sync manager's (sm3.go).
		if id >= sm3IDBase {
			r, bsize, ok := sm3RegionOf(id)
			if !ok || size != uint64(bsize) {
				return nil, unix.EINVAL
			}
			return f.dev.hardware().sm.mapBlock3(f, r, length, prot, flags)
		}
		if id >= uint64(len(f.dev.hardware().pqm().chans)) || size != pqmPage {
			return nil, unix.EINVAL
		}
		if _, ok := pqmBlock(g3.PDMAChannelBlock(int(id))); !ok {
			return nil, unix.EINVAL
		}
		return f.dev.hardware().pqm().mapChannel(f, int(id), length, prot, flags)
	}
	if id >= uint64(len(gaudi2UserBlocks)) || size != uint64(gaudi2UserBlocks[id].size) {
		return nil, unix.EINVAL
	}
	// Zeroed memory of a named memfd, so that the pin check (hostpin.go)
	// knows the mapping for the device mapping it is.
	fd, err := unix.MemfdCreate(simBlockMemfd, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return nil, err
	}
	return mmapBlock(fd, 0, length, prot, flags)
}

// simBlockMemfd names the memfd of a Gaudi2 hardware block's mapping.
const simBlockMemfd = "gaudi-sim-block"

// mmapBlock maps length bytes of fd at off as a hardware block's
// registers: like the driver's block mmap (VM_DONTCOPY, VM_DONTDUMP), the
// mapping is neither inherited by a child nor dumped.
func mmapBlock(fd int, off int64, length, prot, flags int) ([]byte, error) {
	mem, err := unix.Mmap(fd, off, length, prot, flags)
	if err != nil {
		return nil, err
	}
	for _, advice := range []int{unix.MADV_DONTFORK, unix.MADV_DONTDUMP} {
		if err := unix.Madvise(mem, advice); err != nil {
			unix.Munmap(mem)
			return nil, err
		}
	}
	return mem, nil
}
