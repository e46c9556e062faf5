package sim

// profile holds the fixed properties of an ASIC as the 6.12 driver sets
// them (gaudi/gaudi.c and gaudi2/gaudi2.c, *_set_fixed_properties), which
// INFO reports and MEMORY enforces.
type profile struct {
	deviceID uint32 // PCI device id

	sramBase     uint64 // SRAM physical base
	sramUserBase uint64 // first SRAM byte users get
	sramSize     uint64 // total SRAM

	dramBase     uint64 // DRAM physical base
	dramUserBase uint64 // first DRAM byte users get (the rest is the driver's)
	dramSize     uint64 // default total DRAM
	dramPageSize uint64 // the unit DRAM is allocated and mapped in
	dramVirtual  bool   // DRAM reached through the device MMU (Gaudi2)
	dmmuStart    uint64 // DRAM VA base when dramVirtual

	defaultAllocPageSize uint64 // device_mem_alloc_default_page_size
	numEvents            uint32
	cpucpVersion         string
	cardName             string
	cpldVersion          uint32
	serverType           uint16

	firstUserInterrupt uint16
	userInterrupts     uint16
	tpcInterruptID     uint16
	decoderMask        uint32
	edmaMask           uint32
	tpcMask            uint64
	rotatorMask        uint64
	mmeMasterSlave     uint8
	securityEnabled    uint8
	engineCoreIRQAddr  uint64

	psocPCIPLL [4]uint32 // nr, nf, od, div factor

	maxClockMHz uint32
	curClockMHz uint32

	// Sync manager resources per dcore: first available sync object,
	// monitor and completion queue (INFO SYNC_MANAGER).
	firstSOB, firstMon, firstCQ [8]uint32
	numPLLs                     uint32 // valid pll_index values are 0..numPLLs-1
}

const (
	sz1M  = 1 << 20
	sz1G  = 1 << 30
	sz16G = 16 << 30
)

// gaudi2Profile: 6 HBM stacks of 16 GiB; the DRAM page is
// 16 * (number of HBMs * 8 MiB) = 768 MiB; the driver keeps the first page.
var gaudi2Profile = profile{
	deviceID:             0x1020,
	sramBase:             0x1000FFFFFD000000,
	sramUserBase:         0x1000FFFFFD000000,
	sramSize:             48 * sz1M,
	dramBase:             0x1000000000000000,
	dramUserBase:         0x1000000000000000 + 768*sz1M,
	dramSize:             6 * sz16G,
	dramPageSize:         768 * sz1M,
	dramVirtual:          true,
	dmmuStart:            0x1001001800000000,
	defaultAllocPageSize: 768 * sz1M,
	numEvents:            1153,
	cpucpVersion:         "sim-1.0.0",
	cardName:             "HL-225",
	serverType:           0,
	firstUserInterrupt:   257,
	userInterrupts:       255,
	decoderMask:          0x3FF,
	edmaMask:             0xFF,
	tpcMask:              0xFFFFFF,
	maxClockMHz:          1650,
	curClockMHz:          1650,
	numPLLs:              19,
}

// gaudiProfile: 32 GiB of HBM addressed physically from 0x20000000.
var gaudiProfile = profile{
	deviceID:             0x1000,
	sramBase:             0x7FF0000000,
	sramUserBase:         0x7FF0000080,
	sramSize:             20 * sz1M,
	dramBase:             0x0,
	dramUserBase:         0x20000000,
	dramSize:             32 * sz1G,
	dramPageSize:         2 * sz1M,
	defaultAllocPageSize: 2 * sz1M,
	numEvents:            1,
	cpucpVersion:         "sim-1.0.0",
	cardName:             "HL-205",
	firstUserInterrupt:   0xFFFF,
	tpcMask:              0xFF,
	maxClockMHz:          2200,
	curClockMHz:          2200,
	numPLLs:              11,
}

func profileOf(a ASIC) profile {
	if a == Gaudi {
		return gaudiProfile
	}
	return gaudi2Profile
}
