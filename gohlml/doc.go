// Package gohlml is Habana's HLML management API (the Go package
// github.com/HabanaAI/gohlml) without C: the same exported names,
// signatures, constants and error values, read straight from the
// habanalabs driver through package device, so a program that monitors
// Gaudis (the Kubernetes device plugin, feature discovery, metric
// exporters) builds with CGO_ENABLED=0 into a static binary and needs no
// libhlml.so matched to the driver.
//
// # Name and place
//
// The package is named gohlml, as Habana's is, so that a program that
// imports github.com/HabanaAI/gohlml without an alias compiles unchanged
// against it; it lives at the module root (gohlml/) beside device and the
// other public packages because it is one: a library for programs, not a
// tool. Its import path differs from Habana's, so programs switch with one
// replace directive to the shim module in gohlml/compat, whose module path
// is github.com/HabanaAI/gohlml and which re-exports this package (see
// the README, "Switching a gohlml program over").
//
// # Where each value comes from
//
// Every value names its source in its doc comment: an INFO query of the
// device's control node, a sysfs attribute of the driver or of the PCI
// function, or an hwmon channel. Control nodes serve INFO while another
// process owns the device, so nothing here takes a device from a
// workload. A value the driver does not give is ErrNotSupported, never a
// made-up 0: the kernel's driver has no serial number, UUID, PCB version
// or board id (the card's EEPROM holds them, in a layout no driver
// documents), labels no temperature sensor, and serves the out-of-tree
// driver's queries (ECC mode, NIC ports and links) with EINVAL, which
// package device reports as not supported.
//
// # gohlml's behaviours kept
//
//   - A lookup that fails returns the zero Device (or a nil *Device from
//     DeviceHandleBySerial); the zero Device's methods answer
//     ErrInvalidArgument.
//   - RegisterEventForDevice finds the device by serial number, and an
//     Event's Serial is that serial, so that callers can look the device
//     up again with DeviceHandleBySerial.
//   - WaitForEvent reports a timeout as a nil error and an Event whose
//     Etype is 0; callers skip events that are not HlmlCriticalError.
//   - NumaNode returns nil, nil when the kernel knows no NUMA node.
//   - PCIID is HLML's pci_device_id, the device id and the vendor id in
//     one number (0x10201da3 for Gaudi2), not the device id alone.
//   - GetDeviceTypeName names the family by PCI device id as gohlml does
//     ("goya", "gaudi" for every Gaudi generation, "greco").
//   - The device plugin's event loop (watchXIDs) looks the event's device
//     up by its Serial and then compares the device's UUID with the
//     serials it registered: it marks that one device unhealthy only
//     where UUID and serial number are the same string, as this package
//     does not make them (on served devices they differ, so the plugin
//     logs the event and marks no device).
//   - FWVersion, SystemDriverVersion and GetDeviceTypeName read sysfs and
//     need no Initialize.
//
// # The devices it sees
//
// Initialize discovers devices as package device does: sysfs of the
// machine, or of the tree GAUDI_ROOT names (the simulated devices of
// "hlsim serve -dir DIR"). InitWithDevices takes devices the caller
// opened instead, such as the in-process simulator's control nodes, and
// NewDevice reads one device a program opened itself, without the
// library's global state: a tool that reports the same values (hlinfo,
// hlexporter) reads them through it, so each value has one
// implementation.
// Critical events are described at PollInterval.
//
// # Concurrency
//
// Every function and method is safe for concurrent use. Shutdown waits for
// the calls in flight on each node, then closes it; handles and event sets
// of before fail with ErrNotIntialized afterwards.
package gohlml
