package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gaudi-go/gaudi/tools/internal/devstat"
)

// field is one column of -query-device.
type field struct {
	name string
	// unit goes in the header, as "memory.used [MiB]".
	unit string
	help string
	// hlsmi says the name is one of hl-smi -Q's.
	hlsmi bool
	// get returns the value, or false when it is not known.
	get func(s *devstat.Snapshot, d *devstat.Device) (string, bool)
}

// notAvailable is printed for a value the device does not give, as hl-smi
// prints it.
const notAvailable = "N/A"

// fields are what -query-device offers. The hl-smi names and their units
// are those of hl-smi -Q (Intel Gaudi documentation, "System Management
// Interface Tool (hl-smi)", docs.habana.ai, Management and Monitoring):
// timestamp, name, bus_id, driver_version, temperature.aip, module_id,
// utilization.aip, memory.total, memory.free, memory.used, index, serial,
// uuid, power.draw. hl-smi's ecc.* and stats.violation.* fields have no
// source in the kernel's driver and are not offered. The other names follow
// nvidia-smi --query-gpu's where it has the value (clocks.*, pcie.link.*,
// power.limit).
var fields = []field{
	{"timestamp", "", "time of the report (RFC 3339)", true, func(s *devstat.Snapshot, _ *devstat.Device) (string, bool) {
		return s.Timestamp.Format(time.RFC3339), true
	}},
	{"index", "", "device index (N of accelN, or sim:accelN)", true, func(_ *devstat.Snapshot, d *devstat.Device) (string, bool) {
		return strconv.Itoa(d.Index), true
	}},
	{"name", "", "card name the firmware reports", true, str(func(d *devstat.Device) *string { return d.CardName })},
	{"bus_id", "", "PCI address", true, func(_ *devstat.Snapshot, d *devstat.Device) (string, bool) { return d.PCIAddress, d.PCIAddress != "" }},
	{"driver_version", "", "habanalabs module version, or \"linux\" and the kernel release for the kernel's driver", true, func(s *devstat.Snapshot, _ *devstat.Device) (string, bool) {
		if s.DriverVersion == nil {
			return "", false
		}
		return *s.DriverVersion, true
	}},
	{"driver", "", "the habanalabs driver: upstream (the kernel's) or out-of-tree (Intel's)", false, str(func(d *devstat.Device) *string { return d.Driver })},
	{"temperature.aip", "C", "hottest hwmon temperature sensor of the device", true, func(_ *devstat.Snapshot, d *devstat.Device) (string, bool) {
		if len(d.Temperatures) == 0 {
			return "", false
		}
		m := d.Temperatures[0].Celsius
		for _, t := range d.Temperatures[1:] {
			m = max(m, t.Celsius)
		}
		return strconv.FormatFloat(m, 'f', -1, 64), true
	}},
	{"module_id", "", "module id (OAM slot)", true, integer(func(d *devstat.Device) *int { return d.ModuleID })},
	{"utilization.aip", "%", "utilization (INFO DEVICE_UTILIZATION)", true, integer(func(d *devstat.Device) *int { return d.UtilizationPercent })},
	{"memory.total", "MiB", "device memory available to users", true, mib(func(d *devstat.Device) *uint64 { return d.MemoryTotalBytes })},
	{"memory.free", "MiB", "device memory not allocated", true, mib(func(d *devstat.Device) *uint64 { return d.MemoryFreeBytes })},
	{"memory.used", "MiB", "device memory allocated", true, mib(func(d *devstat.Device) *uint64 { return d.MemoryUsedBytes })},
	{"serial", "", "serial number (sysfs serial_number, where the driver has it)", true, str(func(d *devstat.Device) *string { return d.Serial })},
	{"uuid", "", "UUID (sysfs uuid, where the driver has it)", true, str(func(d *devstat.Device) *string { return d.UUID })},
	{"power.draw", "W", "input power (INFO POWER)", true, milli(func(d *devstat.Device) *uint64 { return d.PowerMW })},
	{"power.limit", "W", "power limit (sysfs max_power)", false, milli(func(d *devstat.Device) *uint64 { return d.PowerMaxMW })},
	{"energy.total", "mJ", "energy since the firmware started (INFO TOTAL_ENERGY)", false, unsigned(func(d *devstat.Device) *uint64 { return d.EnergyMJ })},
	{"asic", "", "chip, such as GAUDI2", false, func(_ *devstat.Snapshot, d *devstat.Device) (string, bool) { return d.ASIC, d.ASIC != "" }},
	{"status", "", "driver state, such as operational", false, func(_ *devstat.Snapshot, d *devstat.Device) (string, bool) { return d.Status, d.Status != "" }},
	{"clocks.current.soc", "MHz", "current clock (INFO CLK_RATE)", false, u32(func(d *devstat.Device) *uint32 { return d.ClockMHz })},
	{"clocks.max.soc", "MHz", "maximum clock (INFO CLK_RATE)", false, u32(func(d *devstat.Device) *uint32 { return d.ClockMaxMHz })},
	{"pcie.link.speed.current", "GT/s", "negotiated PCIe link speed", false, float(func(d *devstat.Device) *float64 { return d.PCIe.LinkSpeedGTs })},
	{"pcie.link.width.current", "", "negotiated PCIe link width (lanes)", false, integer(func(d *devstat.Device) *int { return d.PCIe.LinkWidth })},
	{"pcie.link.speed.max", "GT/s", "maximum PCIe link speed", false, float(func(d *devstat.Device) *float64 { return d.PCIe.MaxLinkSpeedGTs })},
	{"pcie.link.width.max", "", "maximum PCIe link width (lanes)", false, integer(func(d *devstat.Device) *int { return d.PCIe.MaxLinkWidth })},
	{"pcie.rx", "KB/s", "PCIe receive throughput (INFO PCI_COUNTERS)", false, unsigned(func(d *devstat.Device) *uint64 { return d.PCIe.RXKBps })},
	{"pcie.tx", "KB/s", "PCIe transmit throughput (INFO PCI_COUNTERS)", false, unsigned(func(d *devstat.Device) *uint64 { return d.PCIe.TXKBps })},
	{"pcie.replay_count", "", "PCIe replays (INFO PCI_COUNTERS)", false, unsigned(func(d *devstat.Device) *uint64 { return d.PCIe.Replays })},
	{"reset.hard", "", "hard resets since the driver loaded", false, func(_ *devstat.Snapshot, d *devstat.Device) (string, bool) {
		if d.Resets == nil {
			return "", false
		}
		return strconv.FormatUint(uint64(d.Resets.Hard), 10), true
	}},
	{"reset.soft", "", "soft resets since the driver loaded", false, func(_ *devstat.Snapshot, d *devstat.Device) (string, bool) {
		if d.Resets == nil {
			return "", false
		}
		return strconv.FormatUint(uint64(d.Resets.Soft), 10), true
	}},
	{"processes", "", "number of processes that hold the device open", false, func(_ *devstat.Snapshot, d *devstat.Device) (string, bool) {
		return strconv.Itoa(len(d.Processes)), true
	}},
}

func str(f func(*devstat.Device) *string) func(*devstat.Snapshot, *devstat.Device) (string, bool) {
	return func(_ *devstat.Snapshot, d *devstat.Device) (string, bool) {
		if p := f(d); p != nil {
			return *p, true
		}
		return "", false
	}
}

func integer(f func(*devstat.Device) *int) func(*devstat.Snapshot, *devstat.Device) (string, bool) {
	return func(_ *devstat.Snapshot, d *devstat.Device) (string, bool) {
		if p := f(d); p != nil {
			return strconv.Itoa(*p), true
		}
		return "", false
	}
}

func unsigned(f func(*devstat.Device) *uint64) func(*devstat.Snapshot, *devstat.Device) (string, bool) {
	return func(_ *devstat.Snapshot, d *devstat.Device) (string, bool) {
		if p := f(d); p != nil {
			return strconv.FormatUint(*p, 10), true
		}
		return "", false
	}
}

func u32(f func(*devstat.Device) *uint32) func(*devstat.Snapshot, *devstat.Device) (string, bool) {
	return func(_ *devstat.Snapshot, d *devstat.Device) (string, bool) {
		if p := f(d); p != nil {
			return strconv.FormatUint(uint64(*p), 10), true
		}
		return "", false
	}
}

func float(f func(*devstat.Device) *float64) func(*devstat.Snapshot, *devstat.Device) (string, bool) {
	return func(_ *devstat.Snapshot, d *devstat.Device) (string, bool) {
		if p := f(d); p != nil {
			return strconv.FormatFloat(*p, 'f', -1, 64), true
		}
		return "", false
	}
}

// mib prints bytes as whole MiB (rounded down), hl-smi's unit.
func mib(f func(*devstat.Device) *uint64) func(*devstat.Snapshot, *devstat.Device) (string, bool) {
	return func(_ *devstat.Snapshot, d *devstat.Device) (string, bool) {
		if p := f(d); p != nil {
			return strconv.FormatUint(*p>>20, 10), true
		}
		return "", false
	}
}

// milli prints thousandths (mW) as units (W), exactly.
func milli(f func(*devstat.Device) *uint64) func(*devstat.Snapshot, *devstat.Device) (string, bool) {
	return func(_ *devstat.Snapshot, d *devstat.Device) (string, bool) {
		p := f(d)
		if p == nil {
			return "", false
		}
		s := strconv.FormatUint(*p/1000, 10)
		if frac := *p % 1000; frac != 0 {
			s += strings.TrimRight(fmt.Sprintf(".%03d", frac), "0")
		}
		return s, true
	}
}

// parseFields reads -query-device's list.
func parseFields(list string) ([]field, error) {
	var out []field
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		i := fieldIndex(name)
		if i < 0 {
			return nil, fmt.Errorf("-query-device: unknown field %q; fields:\n%s", name, fieldHelp())
		}
		out = append(out, fields[i])
	}
	return out, nil
}

func fieldIndex(name string) int {
	for i, f := range fields {
		if f.name == name {
			return i
		}
	}
	return -1
}

// fieldHelp lists the fields with their units and meaning.
func fieldHelp() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, f := range fields {
		unit, from := "", ""
		if f.unit != "" {
			unit = "[" + f.unit + "]"
		}
		if f.hlsmi {
			from = " (hl-smi)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s%s\n", f.name, unit, f.help, from)
	}
	tw.Flush()
	return strings.TrimRight(b.String(), "\n")
}

// writeCSV prints one row per device, after a header when header is set,
// whose names carry their unit ("power.draw [W]") when units is set; the
// values never do (hl-smi's nounits removes the units from the header, as
// our values are bare numbers already).
func writeCSV(w io.Writer, s *devstat.Snapshot, fs []field, header, units bool) error {
	cw := csv.NewWriter(w)
	if header {
		var h []string
		for _, f := range fs {
			if f.unit != "" && units {
				h = append(h, f.name+" ["+f.unit+"]")
			} else {
				h = append(h, f.name)
			}
		}
		if err := cw.Write(h); err != nil {
			return err
		}
	}
	for i := range s.Devices {
		row := make([]string, len(fs))
		for j, f := range fs {
			v, ok := f.get(s, &s.Devices[i])
			if !ok {
				v = notAvailable
			}
			row[j] = v
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
