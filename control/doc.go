// Package control drives the parts of a Gaudi that are not command
// submission or memory: the engine cores and engines (run, halt, stall,
// resume), the flush of posted PCIe writes, the mapping of hardware
// register blocks into the process, and the CoreSight debug and profiling
// hardware behind the DEBUG ioctl.
//
// Each function replaces an hl-thunk call and says which. They take an open
// compute *device.Device and work the same on hardware and on the
// simulator (sim), which applies the 6.12 driver's rules and keeps the
// state the calls leave.
//
// Engines and engine cores are device.Engine and device.EngineCore values,
// found by the driver's names (Device.Engine("DCORE0_TPC_0"),
// Device.EngineCore("SCHED_ARC0")) or made from its enums
// (device.Gaudi2Engine(hl.GAUDI2_DCORE0_ENGINE_ID_MME)). One of another
// ASIC than the device's is refused with a *device.WrongASICError, before
// any request goes out.
//
// The calls here do not take a context: each is one ioctl (or, for
// DebugFS, one file read or write) that the driver completes within the
// call. It may poll the hardware briefly, as a core halt waits for the
// core to stop, but nothing there can be cancelled, and nothing in Go
// retries or sleeps.
//
// # Errors
//
// Errors keep the driver's errno (errors.Is(err, unix.EINVAL)) and match
// the sentinels of package ioctl by its rule (see ioctl.Error). Where the
// ASIC does not have the feature (engine modes and hardware blocks on
// first-generation Gaudi, which the driver refuses with EPERM), the error
// matches ErrNotSupported; a device in reset gives ioctl.ErrNotOperational,
// also from the debugfs files, which then transfer nothing.
//
// Functions in this package are safe for concurrent use to the extent the
// driver is: the debug mode is one per device, so concurrent debug
// configuration from several goroutines is the caller's to order.
package control
