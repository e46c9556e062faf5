package device

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/gaudi-go/gaudi/internal/devio/hook"
	"github.com/gaudi-go/gaudi/internal/leak"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// Device is an open Gaudi: a compute node (which owns the device's single
// compute context) or a control node (INFO only, any number of them). It
// learns the chip and its fixed properties at open.
//
// A Device is safe for concurrent use. Close is idempotent.
type Device struct {
	io      *ioctl.Device
	file    ioctl.File // what io issues its calls on
	path    string
	control bool

	hw   HWIPInfo
	asic ASIC

	drvMu sync.Mutex
	drv   *DriverInfo // once the driver is known (driver.go)

	depMu   sync.Mutex
	deps    map[uint64]dependent // open dependents by attach order (dependents.go)
	nextDep uint64
	closing bool // Close began: no new dependents

	closeOnce sync.Once
	closeErr  error
	leak      runtime.Cleanup // reports a Device dropped without Close
}

func init() {
	hook.Ioctl = func(d any) *ioctl.Device { return d.(*Device).io }
	hook.File = func(d any) ioctl.File { return d.(*Device).file }
	hook.Attach = func(d any, name string, close func() error) (func(), error) {
		return d.(*Device).attach(name, close)
	}
}

// newDevice wraps an open File and reads its identity; on error f is
// closed.
func newDevice(f ioctl.File, path string, control bool) (*Device, error) {
	d := &Device{io: ioctl.New(f), file: f, path: path, control: control}
	hw, err := d.readHWIPInfo()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open %s: %w", path, err), d.io.Close())
	}
	d.hw = hw
	d.asic = ASICFromPCI(hw.DeviceID, hw.Revision)
	d.leak = leak.Track(d, leak.Info{Type: "*device.Device", Device: path, FD: -1}, 1)
	return d, nil
}

// Path returns the node the device was opened from: a /dev path,
// "sim:accelN" for a simulated device, or what FileOptions.Path (by
// default the File's Name) said for FromFile.
func (d *Device) Path() string { return d.path }

// IsControl reports whether this is a control node (INFO only).
func (d *Device) IsControl() bool { return d.control }

// Simulated reports whether the device is the software Gaudi: whether the
// File it was opened over has a method Simulated() bool that returns true,
// as the simulator's files (sim.File) do. A File that wraps another one
// answers for itself; see FromFile. Package simdevice returns the
// simulated device itself.
func (d *Device) Simulated() bool {
	s, ok := d.file.(interface{ Simulated() bool })
	return ok && s.Simulated()
}

// ASIC returns the chip, from the PCI device id and revision.
func (d *Device) ASIC() ASIC { return d.asic }

// HWIPInfo returns the fixed properties read at open.
func (d *Device) HWIPInfo() HWIPInfo { return d.hw }

// Encoding returns the ioctl encoding the kernel speaks for this node.
func (d *Device) Encoding() ioctl.Encoding { return d.io.Encoding() }

// Close closes the node; for a compute node this releases the device's
// compute context.
//
// What was built on the Device and is still open (a dma.Engine, a
// memory.Manager) is closed first, newest first, so an
// Engine closes before the Manager it moves memory of, and the Manager
// frees its buffers and mappings before the context goes: Close returns
// their errors, joined and naming each, with the node's own. Their later
// Close calls return nil, as for any second Close. Closing them yourself
// first, in reverse order of creation, is the same and lets you see each
// error where it happens. Hardware blocks (control.Block) are mappings,
// which the kernel keeps valid after the file is closed; close them
// yourself.
//
// Calls on a closed Device fail with an error matching ioctl.ErrClosed,
// which is os.ErrClosed, and so does building anything new on it. Close is
// idempotent: a later or concurrent call waits for the first and returns
// its error. A Device dropped without Close is reported when the garbage
// collector finds it (see SetLeakReporter), and its node stays open until
// the process exits.
func (d *Device) Close() error {
	d.closeOnce.Do(func() {
		d.leak.Stop()
		d.closeErr = errors.Join(d.closeDependents(), d.io.Close())
	})
	return d.closeErr
}

// String describes the device, e.g. "GAUDI2 module 0 (sim:accel0)".
func (d *Device) String() string {
	return fmt.Sprintf("%s module %d (%s)", d.asic, d.hw.ModuleID, d.path)
}

// HWIPInfo is what INFO HW_IP_INFO reports, in Go units.
type HWIPInfo struct {
	DeviceID        uint32 // PCI device id
	Revision        uint8  // PCI revision
	ModuleID        uint32 // the card's location in the server
	CardName        string
	CPUCPVersion    string // firmware (CPU-CP) version
	CPLDVersion     uint32
	SecurityEnabled bool
	ServerType      uint16 // hl.HL_SERVER_*

	SRAMBase uint64 // first SRAM address users get
	SRAMSize uint64 // SRAM available to users, bytes

	DRAMEnabled bool
	// DRAMBase is the first DRAM address users get: a device virtual
	// address on Gaudi2 (DRAM is mapped through the device MMU), a
	// physical one on Gaudi.
	DRAMBase             uint64
	DRAMSize             uint64 // DRAM available to users, bytes, a multiple of DRAMPageSize
	DRAMPageSize         uint64
	DRAMReserved         uint64 // DRAM the driver keeps for itself
	DefaultAllocPageSize uint64

	NumEvents          uint32
	FirstUserInterrupt uint16
	UserInterrupts     uint16
	TPCInterruptID     uint16
	TPCMask            uint64
	DecoderMask        uint32
	EDMAMask           uint32
	RotatorMask        uint32
	MMEMasterSlave     bool
	EngineCoreIRQAddr  uint64
	PSOCPCIPLL         [4]uint32 // nr, nf, od, div factor

	// The bytes the out-of-tree driver names in HW_IP_INFO; the kernel's
	// driver reserves them, so they are 0 there (see DriverInfo).
	MMEMask              uint32 // mme_enabled_mask
	SchedArcMask         uint32 // sched_arc_enabled_mask
	NICPortsMask         uint64 // nic_ports_mask: the enabled NIC ports
	NICPortsExternalMask uint64 // nic_ports_external_mask: those used for scale-out
	PDMAUserChannelMask  uint64 // pdma_user_owned_ch_mask: Gaudi3 PDMA channels users drive
	ODPSupported         bool   // odp_supported: MAP with HL_MEM_ODP is served
	InterposerVersion    uint8
	SubstrateVersion     uint8
}

func (d *Device) readHWIPInfo() (HWIPInfo, error) {
	r, err := infoStruct[hl.InfoHWIPInfo](d, hl.HL_INFO_HW_IP_INFO, nil)
	if err != nil {
		return HWIPInfo{}, err
	}
	return HWIPInfo{
		DeviceID:             r.DeviceID,
		Revision:             r.RevisionID,
		ModuleID:             r.ModuleID,
		CardName:             cString(r.CardName[:]),
		CPUCPVersion:         cString(r.CPUCPVersion[:]),
		CPLDVersion:          r.CpldVersion,
		SecurityEnabled:      r.SecurityEnabled != 0,
		ServerType:           r.ServerType,
		SRAMBase:             r.SRAMBaseAddress,
		SRAMSize:             uint64(r.SRAMSize),
		DRAMEnabled:          r.DRAMEnabled != 0,
		DRAMBase:             r.DRAMBaseAddress,
		DRAMSize:             r.DRAMSize,
		DRAMPageSize:         r.DRAMPageSize,
		DRAMReserved:         r.ReservedDRAMSize,
		DefaultAllocPageSize: r.DeviceMemAllocDefaultPageSize,
		NumEvents:            r.NumOfEvents,
		FirstUserInterrupt:   r.FirstAvailableInterruptID,
		UserInterrupts:       r.NumberOfUserInterrupts,
		TPCInterruptID:       r.TPCInterruptID,
		TPCMask:              r.TPCEnabledMaskExt,
		DecoderMask:          r.DecoderEnabledMask,
		EDMAMask:             r.EDMAEnabledMask,
		RotatorMask:          r.RotatorEnabledMask,
		MMEMasterSlave:       r.MMEMasterSlaveMode != 0,
		EngineCoreIRQAddr:    r.EngineCoreInterruptRegAddr,
		PSOCPCIPLL:           [4]uint32{r.PsocPCIPLLNr, r.PsocPCIPLLNf, r.PsocPCIPLLOd, r.PsocPCIPLLDivFactor},
		MMEMask:              r.MMEEnabledMask(),
		SchedArcMask:         r.SchedArcEnabledMask(),
		NICPortsMask:         r.NICPortsMask(),
		NICPortsExternalMask: r.NICPortsExternalMask(),
		PDMAUserChannelMask:  r.PDMAUserOwnedChMask(),
		ODPSupported:         r.ODPSupported(),
		InterposerVersion:    r.InterposerVersion(),
		SubstrateVersion:     r.SubstrateVersion(),
	}, nil
}

// cString returns the text of a NUL-terminated byte array.
func cString(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// FileOptions adjust FromFile. The zero value makes a compute Device
// named after the File.
type FileOptions struct {
	// Control makes a control Device: INFO only, as OpenControl opens.
	// Packages that need the compute context (memory, dma, stream,
	// control) refuse it.
	Control bool
	// Path is what Device.Path reports; empty means f.Name().
	Path string
}

// FromFile returns a Device over f, an open device file that the Device
// now owns and closes: a kernel file opened by the caller
// (ioctl.OpenFile), or a File that records, traces or injects faults
// around one or around the simulator. It reads the device's identity
// with INFO HW_IP_INFO, as Open does; on error f is closed.
//
// f is used as it is: it must be safe for concurrent use, and every call
// of the packages above goes through it. Simulated and PCIAddress ask f
// itself (see the package documentation), so a wrapper around a
// simulated File that should count as simulated forwards
// Simulated() bool, PCIAddress() string, DriverVersion() string (which
// DriverInfo reports) and, for package simdevice, Device() *sim.Device.
func FromFile(f ioctl.File, opts FileOptions) (*Device, error) {
	path := opts.Path
	if path == "" {
		path = f.Name()
	}
	return newDevice(f, path, opts.Control)
}
