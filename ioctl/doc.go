// Package ioctl issues the habanalabs driver's ioctls and maps its files.
//
// It is the only package of the module that makes ioctl, mmap and munmap
// system calls on a Gaudi device file. Higher layers (device, memory, dma)
// build on the typed calls of Device and never see request numbers.
//
// # Files
//
// A File is an open device: OpenFile returns one backed by a kernel file
// descriptor, and the software Gaudi in package sim implements the same
// interface, so the code above runs unchanged on both. Tests fake a File
// with a single function that answers ioctls.
//
// # Opening a device yourself
//
// The package is public, in the manner of golang.org/x/sys, for programs
// that issue ioctls the packages above do not: Open (or OpenFile and New)
// gives a Device of their own. Package device does not hand out the
// Device its device.Device issues calls on, because memory, dma, stream
// and control keep state about that context (buffers, mappings, command
// buffers) that a stray MEMORY FREE or CB DESTROY would make wrong. What
// is safe next to a device.Device:
//
//   - a control node (/dev/accel/accel_controlDN) opened here: it serves
//     INFO only, and any number can be open at once;
//   - a compute node opened here is a context of its own, but the driver
//     lets only one file hold it: while a device.Device (of this process
//     or another) has the node open, the open fails with ErrDeviceBusy.
//
// A File of one's own (one that records or injects faults) can also be
// given to device.FromFile, which then owns it.
//
// # Encodings
//
// Kernels from 6.6 on serve Gaudi as an accel (DRM) device, /dev/accel/accelN,
// and number the ioctls _IOWR('d', 0x40+nr, args). Older kernels served
// /dev/hlN and numbered them _IOWR('H', nr+1, args). A Device probes once,
// with INFO HW_IP_INFO, which encoding the file accepts, and uses it for
// every later call; see Device.Encoding.
//
// # Errors
//
// Failures are *Error values that keep the errno and name the operation, as
// in "ioctl MEMORY ALLOC: cannot allocate memory". Test them with errors.Is,
// against an errno (unix.ENOMEM) or one of the sentinels; never compare with
// ==. The sentinels, and the policy the packages above follow too:
//
//   - ErrDeviceBusy: opening found the device owned by another process
//     (EBUSY on OPEN only).
//   - ErrInReset: opening found the device resetting or still being
//     released (EAGAIN on OPEN); try again later.
//   - ErrNotOperational: the device is in reset, malfunctioning or needs a
//     reset (EBUSY from any of the driver's ioctls, EPERM on OPEN).
//   - ErrNotSupported: the driver or the ASIC does not do this (ENOTTY,
//     EOPNOTSUPP, and the EPERMs of features an ASIC lacks).
//   - ErrTimeout: the driver or the device timed out (ETIMEDOUT).
//   - ErrClosed: the Device was closed. It is os.ErrClosed; every closed
//     object of the module answers an error matching it. A kernel EBADF
//     (a bad descriptor in the arguments) does not.
//
// See Error for the exact mapping from errno and operation to sentinel.
//
// The packages above keep two more rules. Every Close returns the errors of
// what it releases (UNMAP, FREE, CB DESTROY, munmap, close), joined with
// errors.Join, rather than dropping them or keeping the first; a release
// that a Close had to defer (memory held by a transfer) returns its error
// from the call that finishes it, and one that no call can return is kept
// for the owner's Close. And their errors keep the *Error of this package
// in the chain, so the sentinels above work at every layer.
//
// # Interrupted calls
//
// The Go runtime signals its own threads to preempt goroutines, so an ioctl
// that sleeps in the driver is interrupted often. Every call is retried on EINTR with its arguments
// restored; WAIT_CS is retried with the time that remains, never the whole
// timeout again.
//
// # Lifetimes and concurrency
//
// A Device and the Files of this package are safe for concurrent use. Close
// waits for calls in flight, then closes the file; later calls fail with an
// error matching ErrClosed, and closing again returns nil. No call can reach
// a descriptor number after it has been closed, when the kernel may have
// handed it to another open file. Mappings outlive Close and are released
// with Munmap.
//
// Addresses inside ioctl arguments are hl.Pointer values, which the garbage
// collector sees: what they point at is allocated where it cannot move and
// stays alive with the arguments, across every retry and wait slice. Calls
// that pass user memory take the argument views that hold it (CSChunks,
// WaitMultiCS, WaitInterrupt, MapHost, Info, Debug, Engines); memory the
// driver keeps using after the call (a host buffer mapped with MapHost) is
// the caller's to keep until UNMAP.
//
// # System call entry
//
// Every ioctl goes through the runtime's ordinary entry (unix.Syscall),
// which hands the thread's P to other goroutines if the call sleeps. The
// raw entry (unix.RawSyscall) would save about 40 ns per call
// (BenchmarkPreparedRunVsC/syscall-rawcs in package dma) but holds the P,
// and a stop-the-world, for as long as the call sleeps; it is only safe
// for a call that cannot sleep for long. Per request, in the 6.12 driver
// (drivers/accel/habanalabs/common):
//
//	WAIT_CS   sleeps for the timeout given (command_submission.c,
//	          _hl_cs_wait_ioctl: wait_for_completion_interruptible_timeout)
//	CS        may sleep for the device timeout, 30 s by default
//	          (habanalabs_drv.c, HL_DEFAULT_TIMEOUT_LOCKED): the first CS
//	          of a context (and HL_CS_FLAGS_FORCE_RESTORE) waits for its
//	          restore CS (hl_cs_ctx_switch: _hl_cs_wait_ioctl), and CSs of
//	          other threads meanwhile poll for it with 100 us sleeps
//	          (hl_poll_timeout_memory); it also takes mutexes and allocates
//	          with GFP_KERNEL (cs_ioctl_default)
//	INFO      ops that ask the firmware wait for its answer for up to
//	          seconds (habanalabs_ioctl.c: get_clk_rate, PLL_FREQUENCY,
//	          POWER, TOTAL_ENERGY, PCI_COUNTERS through hl_fw_cpucp_*;
//	          HL_CPUCP_INFO_TIMEOUT_USEC is 10 s); others take mutexes
//	          (notifier_event.lock, clk_throttling.lock)
//	MEMORY    takes mutexes (memory.c: va_range->lock, mmu_lock,
//	          mem_hash_lock) and pins and allocates pages
//	CB        takes mmu_lock and allocates with GFP_KERNEL (command_buffer.c)
//	DEBUG     allocates with GFP_KERNEL and copies user memory, which may
//	          fault (habanalabs_ioctl.c, debug_coresight)
//
// No request is bounded short in every case, so none takes the raw entry.
// TestBlockedWaitLetsOthersRun holds a WAIT_CS in the kernel (a served
// node whose server is stopped) with GOMAXPROCS=1 and fails unless another
// goroutine runs meanwhile, which the raw entry would prevent.
package ioctl
