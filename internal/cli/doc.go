// Package cli holds what every command of this module (tools/* and
// examples/*) shares on its command line, so that they agree:
//
//   - ParseSize, FormatSize and Size: one strict size grammar ("4K" is
//     4096, "4KB" is 4000, "1.5M" is 1572864; junk, signs, fractions of
//     a byte and overflow are errors), and a flag.Value for it.
//   - Command: a flag set with -h (a synopsis, the flags, the
//     environment variables and Sections such as exit statuses and
//     examples, on stdout, exit 0), -version (Version) and
//     -device, and the exit codes (Exit: 0 for -h and -version, 2 for a
//     usage error, 1 for a failure).
//   - DeviceFlag and Selection: the -device flag, in the selector grammar
//     of GAUDI_DEVICE (simdevice.ParseSelector); the flag overrides the
//     variable. Selection.Open opens one compute device, and
//     Selection.Devices lists every device a selection names, for tools
//     that work on several. The same text selects the same device in
//     every command: a hardware selector (an index, a PCI address,
//     module:N, a path, a chip name) never falls back to the simulator,
//     and on a machine without a Gaudi it is an error that names the
//     simulator's selectors.
//   - DriverVersion: the habanalabs driver's version from sysfs, "sim"
//     for a simulated device.
//
// A minimal command:
//
//	cmd := cli.New("example", "example [-device SEL] [-size SIZE]", "Example copies bytes.")
//	size := cli.Size(64 << 20)
//	cmd.Flags.Var(&size, "size", "bytes to copy")
//	cmd.ParseOrExit(os.Args[1:])
//	d, err := cmd.OpenDevice() // says on stderr which device and why
package cli
