// Package sim is a software Gaudi: it behaves like the habanalabs kernel
// driver and the chip behind it, so the library, its tools and its tests run
// on machines without hardware.
//
// A System holds simulated devices (Gaudi2 by default, or first-generation
// Gaudi). Each Device opens compute and control files that implement the
// ioctl layer's File seam: the same ioctls, the same validation and the same
// errno values as the 6.12 driver, read from its source
// (drivers/accel/habanalabs). Device memory is sparse: a 96 GB device holds
// only the pages that were written.
//
// # Rules it keeps
//
//   - One compute context per device, across goroutines and processes: the
//     compute open takes a lock file that other processes see, and a second
//     open gets EBUSY. Control opens are unlimited and accept only INFO.
//   - A device state machine (operational, in reset, needs reset) with fault
//     injection for tests: Reset, FailNext.
//   - User pointers inside ioctl arguments are read and written with
//     process_vm_readv/writev on the calling process, so a bad pointer gives
//     EFAULT as on the kernel instead of crashing.
//   - Every INFO op of the 6.12 driver, with its validation, its errno
//     values and the split between ops served in any state and ops that
//     need an operational device (EBUSY otherwise). HW_IP_INFO and
//     SYNC_MANAGER report the driver's fixed properties of each ASIC.
//   - Errors are captured as the driver captures them: Device.RecordRazwi,
//     RecordPageFault, RecordHWError, RecordFWError, RecordEngineError,
//     RecordUndefinedOpcode and RecordCSTimeout keep the first error of each
//     kind until the next compute open, raise the notifier bit that
//     GET_EVENTS reads and signal registered eventfds.
//
// # Differences from the kernel
//
// The simulator runs inside the calling process; ioctls are method calls, not
// system calls, so tracers that watch syscalls (hltrace) do not see them.
//
// Where the driver asks the device's firmware (cpucp version, card name,
// clocks, PLLs, power, energy, PCIe counters, HBM rows) the simulated
// firmware answers with fixed values of an idle, healthy card; it does not
// implement the security module, so SECURED_ATTESTATION, DEV_SIGNED and
// FW_GENERIC_REQ end in EIO after the driver's own checks, as on a device
// whose firmware refuses those packets. The engines are always idle.
//
// A Device is safe for concurrent use, and so are the files it opens.
package sim
