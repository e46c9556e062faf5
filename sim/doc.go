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
//
// # Differences from the kernel
//
// The simulator runs inside the calling process; ioctls are method calls, not
// system calls, so tracers that watch syscalls (hltrace) do not see them.
//
// A Device is safe for concurrent use, and so are the files it opens.
package sim
