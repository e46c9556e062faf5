// Package device finds Intel Gaudi devices, opens them and reads what they
// are: identity, INFO queries and events.
//
// A Device is one open node of the habanalabs driver. A compute node
// (/dev/accel/accelN, or /dev/hlN on kernels before 6.6) owns the device's
// single compute context: one process at a time, and the packages that
// allocate memory and submit work (memory, dma, stream, control) need it.
// A control node (/dev/accel/accel_controlDN, /dev/hl_controlDN) serves
// INFO only; any number can be open, also while another process owns the
// device. Open learns the chip (ASIC) and its fixed properties (HWIPInfo)
// at once.
//
// Discovery (Nodes, SysFS, Count) reads sysfs only and never opens a node,
// so it works while other processes own the devices.
//
// # Which driver
//
// Most Gaudi servers run Intel's out-of-tree habanalabs driver, not the
// kernel's: the six core ioctls are the same, and it adds INFO ops, a NIC
// ioctl and the import of dma-bufs. DriverInfo tells which driver a device
// runs on and its version, by asking the driver (an INFO only the
// out-of-tree driver serves) and sysfs; the out-of-tree queries
// (ModuleParams, TimeSyncDie, ReportMemoryConsumption, LinkState,
// NICAppParams) fail with an error matching ioctl.ErrNotSupported on the
// kernel's driver. Discovery also finds the devices of the "accel" class
// the out-of-tree driver makes itself on kernels without CONFIG_DRM_ACCEL
// (Node.OwnAccelClass). The library always sends DEVICE_STATUS's
// soft_reset_stall word, which that driver reads, zeroed.
//
// # Choosing a device
//
// Open and OpenControl take a selector, in the grammar GAUDI_DEVICE uses
// for the tools and examples (see ParseSelector):
//
//	""                  the first free device
//	"3"                 device 3: accel3, or hl3 on old kernels
//	"0000:19:00.0"      by PCI address; "19:00.0" in domain 0000
//	"module:2"          by module id, the OAM slot sysfs reports
//	"/dev/accel/accel0" by node path
//	"gaudi2"            the first free device of a chip
//
// The empty selector and a chip name skip devices that another process
// owns, that are resetting or that are not operational; the others open
// the one device they name and report why it cannot be had.
//
// # Another root
//
// GAUDI_ROOT=DIR (RootEnv) makes discovery read DIR/sys instead of /sys
// and open the nodes it finds under DIR (DIR/dev/accel/accel0), so a
// program finds devices served under a directory of the user's choice,
// such as the simulated ones of "hlsim serve -dir DIR", without code
// changes. A selector that is a node path is opened as written.
//
// # The simulator
//
// This package opens hardware only and does not import the software
// Gaudi, so a program that uses it alone does not link the simulator.
// Package simdevice adds "sim" and "sim:N" to the selector grammar and
// OpenDefault, the hardware-else-simulator choice of the tools and
// examples; tests open simulated devices with simdevice.OpenSim and reach
// the simulated device behind a Device with simdevice.Sim.
//
// A Device knows it is simulated only through its File: Simulated reports
// whether the File has a method Simulated() bool that returns true, and
// PCIAddress uses the File's method PCIAddress() string when it has one
// (DriverInfo likewise DriverVersion() string). sim.File has them (and Device() *sim.Device, which simdevice.Sim uses);
// a kernel file has neither.
//
// # Devices over other Files
//
// FromFile builds a Device over any ioctl.File: a kernel file the caller
// opened with ioctl.OpenFile, or a File that records, traces or injects
// faults around a kernel file or a simulated one. The Device owns the File
// and closes it. A wrapper that should still count as simulated forwards
// the methods above.
//
// # Raw ioctls
//
// A Device does not hand out its *ioctl.Device. The packages built on it
// keep their own view of the context (a memory.Manager lists every buffer
// and mapping, a dma.Engine its command buffers), and a MEMORY FREE or CB
// DESTROY issued behind their back would leave that view wrong; the
// module's own packages reach the ioctl layer through an internal package.
// Code that wants raw ioctls opens its own node with package ioctl:
//
//   - a control node can always be opened that way, next to any Device;
//   - a compute node is a separate context only if the driver lets it be
//     opened, and it does not while a Device (of this or another process)
//     has it open: the open fails with ioctl.ErrDeviceBusy (EBUSY).
//
// # Concurrency and lifetime
//
// A Device is safe for concurrent use. Close waits for calls in flight,
// then closes the node; for a compute node that gives up the compute
// context (the driver keeps it until exported dma-bufs are closed too).
// Close is idempotent. Close the objects built on a Device (DMA engines,
// memory managers, streams) first.
// Calls on a closed Device fail with an error matching ioctl.ErrClosed,
// which is os.ErrClosed.
//
// Nothing is released when a Device, or a memory object built on it, is
// garbage-collected without Close: the collection only reports it to the
// function SetLeakReporter sets (stderr by default), as a safety net that
// points at the missing Close.
//
// # Errors
//
// Failures of the driver keep their *ioctl.Error, so errors.Is works with
// errnos (unix.EBUSY) and the ioctl sentinels: ioctl.ErrDeviceBusy (an open
// of a device another process owns), ioctl.ErrInReset, and
// ioctl.ErrNotOperational. A selector that does not parse gives an error
// matching ErrBadSelector; one that matches no device (or, for "" and a
// chip name, no free one) gives ErrNoDevice. Sysfs lookups (SysFS's
// NodeBy methods) report ErrNotFound, and unreadable required sysfs files
// an *AttrError.
package device
