package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/tools/internal/devstat"
)

// document is hlinfo's JSON output: the snapshot (its fields at the top
// level), the tool, and the RDMA NICs.
type document struct {
	*devstat.Snapshot
	Tool        string      `json:"tool"`
	ToolVersion string      `json:"tool_version"`
	NICs        []nicReport `json:"rdma_devices"`
}

// writeJSON prints one JSON document: indented, or on one line for a
// stream of reports (-l).
func writeJSON(w io.Writer, s *devstat.Snapshot, nics []nicReport, oneLine bool) error {
	enc := json.NewEncoder(w)
	if !oneLine {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(document{Snapshot: s, Tool: "hlinfo", ToolVersion: cli.Version(), NICs: nics})
}

// tableStatus shortens the driver's states so that the table fits 80
// columns; -v and -json print them whole.
var tableStatus = map[string]string{
	"in reset after device release": "releasing",
	"in device creation":            "creating",
}

// writeText prints the table, the processes, the NICs and, with -v or
// -engines, a section per device.
func writeText(w io.Writer, s *devstat.Snapshot, nics []nicReport, c *config) error {
	head := fmt.Sprintf("%d device(s), %s", len(s.Devices), s.Source)
	if s.Driver != nil || s.DriverVersion != nil {
		head += ", " + cli.DriverText(s.Driver, s.DriverVersion)
	}
	fmt.Fprintln(w, head)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IDX\tBUS-ID\tASIC\tMOD\tTEMP\tPOWER\tUTIL\tMEMORY-USAGE\tSTATUS")
	for _, d := range s.Devices {
		status := d.Status
		if short, ok := tableStatus[status]; ok {
			status = short
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Index, dash(d.PCIAddress), dash(d.ASIC), intOr(d.ModuleID),
			hottest(d.Temperatures), watts(d.PowerMW), percent(d.UtilizationPercent), memoryUsage(d), dash(status))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeFailedQueries(w, s); err != nil {
		return err
	}
	if err := writeProcesses(w, s); err != nil {
		return err
	}
	if err := writeNICs(w, nics); err != nil {
		return err
	}
	for _, d := range s.Devices {
		if c.Details {
			if err := writeDetails(w, d, c.sections); err != nil {
				return err
			}
		}
		if c.Engines {
			writeEngines(w, d)
		}
	}
	return nil
}

// writeFailedQueries lists, under the table, the queries that failed for
// each device, so that a "-" in the table is never silent; -v and -json
// print each error whole. Devices without errors are left out, and so is
// the section when there are none.
func writeFailedQueries(w io.Writer, s *devstat.Snapshot) error {
	var rows [][]string
	for _, d := range s.Devices {
		var qs []string
		for _, e := range d.Errors {
			q := e.Query
			if e.Errno != nil {
				q += " (" + *e.Errno + ")"
			}
			qs = append(qs, q)
		}
		if len(qs) > 0 {
			rows = append(rows, wrapList(qs, 80-len("IDX  ")))
			rows[len(rows)-1][0] = strconv.Itoa(d.Index) + "\t" + rows[len(rows)-1][0]
		}
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nFAILED QUERIES (-v or -json says why)")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IDX\tQUERIES")
	for _, lines := range rows {
		for i, l := range lines {
			if i > 0 {
				l = "\t" + l
			}
			fmt.Fprintln(tw, l)
		}
	}
	return tw.Flush()
}

// wrapList joins items with ", " into lines of at most width columns
// (an item longer than width gets a line of its own).
func wrapList(items []string, width int) []string {
	var lines []string
	cur := ""
	for i, it := range items {
		if i < len(items)-1 {
			it += ","
		}
		switch {
		case cur == "":
			cur = it
		case len(cur)+1+len(it) <= width:
			cur += " " + it
		default:
			lines = append(lines, cur)
			cur = it
		}
	}
	return append(lines, cur)
}

// writeProcesses lists the processes that hold each device.
func writeProcesses(w io.Writer, s *devstat.Snapshot) error {
	n := 0
	for _, d := range s.Devices {
		n += len(d.Processes)
	}
	if n == 0 {
		_, err := fmt.Fprintln(w, "\nno processes hold these devices")
		return err
	}
	fmt.Fprintln(w, "\nPROCESSES")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IDX\tPID\tNODE\tNAME")
	for _, d := range s.Devices {
		for _, p := range d.Processes {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\n", d.Index, p.PID, p.Node, dash(p.Name))
		}
	}
	return tw.Flush()
}

// writeDetails prints every value of one device (-v), one per line, or
// with -d those of the chosen sections (nil: all).
func writeDetails(w io.Writer, d devstat.Device, chosen map[string]bool) error {
	fmt.Fprintf(w, "\ndevice %d: %s (control %s)\n", d.Index, d.Node, d.ControlNode)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(k, format string, a ...any) {
		if keep(chosen, strings.TrimSpace(k)) {
			fmt.Fprintf(tw, "  %s\t"+format+"\n", append([]any{k}, a...)...)
		}
	}
	line("asic", "%s, pci id %#04x rev %d, card %s, module %s", dash(d.ASIC), d.PCIDeviceID, d.PCIRevision, strOr(d.CardName), intOr(d.ModuleID))
	line("serial", "%s", strOr(d.Serial))
	line("uuid", "%s", strOr(d.UUID))
	line("status", "%s, simulated %s", dash(d.Status), yesNo(d.Simulated))
	line("abi", "%s, dma-buf export %s", dash(d.ABI), boolOr(d.DMABufExport))
	line("driver", "%s", strOr(d.Driver))
	line("numa node", "%s", intOr(d.NUMANode))
	line("firmware", "%s", strOr(d.FirmwareVersion))
	keys := make([]string, 0, len(d.Firmware))
	for k := range d.Firmware {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		line("  "+k, "%s", d.Firmware[k])
	}
	line("memory", "%s used, %s free of %s, %s pages", bytesOr(d.MemoryUsedBytes), bytesOr(d.MemoryFreeBytes),
		bytesOr(d.MemoryTotalBytes), bytesOr(d.MemoryPageSizeBytes))
	line("power", "%s (limit %s), energy %s", milliUnits(d.PowerMW, "W"), milliUnits(d.PowerMaxMW, "W"), energy(d.EnergyMJ))
	line("utilization", "%s", percent(d.UtilizationPercent))
	line("clock", "%s MHz (max %s MHz), throttled by %s", uint32Or(d.ClockMHz), uint32Or(d.ClockMaxMHz), listOr(d.ClockThrottleReasons, "nothing"))
	var temps []string
	for _, t := range d.Temperatures {
		temps = append(temps, fmt.Sprintf("%s%s %s°C", t.Sensor, labelOf(t.Label), strconv.FormatFloat(t.Celsius, 'f', -1, 64)))
	}
	line("temperature", "%s", listOr(temps, "-"))
	line("pcie link", "%s GT/s x%s (max %s GT/s x%s)", floatOr(d.PCIe.LinkSpeedGTs), intOr(d.PCIe.LinkWidth), floatOr(d.PCIe.MaxLinkSpeedGTs), intOr(d.PCIe.MaxLinkWidth))
	line("pcie traffic", "rx %s KB/s, tx %s KB/s, replays %s", uintOr(d.PCIe.RXKBps), uintOr(d.PCIe.TXKBps), uintOr(d.PCIe.Replays))
	if d.Resets != nil {
		line("resets", "hard %d, soft %d", d.Resets.Hard, d.Resets.Soft)
	} else {
		line("resets", "-")
	}
	if c := d.CSDrops; c != nil {
		line("dropped cs", "out of memory %d, parsing %d, queue full %d, in reset %d, max in flight %d, validation %d",
			c.OutOfMemory, c.Parsing, c.QueueFull, c.DeviceInReset, c.MaxInFlight, c.Validation)
	} else {
		line("dropped cs", "-")
	}
	line("dram pending rows", "%s", uint32Or(d.DRAMPendingRows))
	line("idle", "%s, busy engines %s", boolOr(d.Idle), masks(d.BusyEngineMask))
	line("compute active", "%s", boolOr(d.ComputeActive))
	if x := d.Details; x != nil {
		h := x.HWIP
		line("sram", "%#x, %s", h.SRAMBase, size(h.SRAMSizeBytes))
		line("dram", "%#x, %s in %s pages, driver keeps %s, default alloc page %s", h.DRAMBase, size(h.DRAMSizeBytes),
			size(h.DRAMPageSizeBytes), size(h.DRAMReservedBytes), size(h.DefaultAllocPageSizeBytes))
		line("engines enabled", "tpc %#x, decoders %#x, edma %#x", h.TPCMask, h.DecoderMask, h.EDMAMask)
		line("events, interrupts", "%d event ids, %d user interrupts from %d", h.NumEvents, h.UserInterrupts, h.FirstUserInterrupt)
		line("security", "%s, cpld %#x, server type %d", yesNo(h.SecurityEnabled), h.CPLDVersion, h.ServerType)
		if sm := x.SyncManager; sm != nil {
			line("sync manager", "dcore 0: first sob %d, monitor %d, cq %d", sm.FirstSyncObject, sm.FirstMonitor, sm.FirstCQ)
		}
		if len(x.PLL0OutputsMHz) > 0 {
			line("pll 0", "%v MHz", x.PLL0OutputsMHz)
		}
		if o := x.OpenStats; o != nil {
			line("opens", "%d, last session %s, releasing %s", o.Opens, time.Duration(o.LastSessionNS), yesNo(o.ComputeInRelease))
		}
		if x.DevMemAllocPageSizesMask != nil {
			line("alloc page sizes", "mask %#x", *x.DevMemAllocPageSizesMask)
		}
		var ev []string
		for _, e := range x.HWEvents {
			ev = append(ev, fmt.Sprintf("%d:%d", e.ID, e.Count))
		}
		line("hw events", "%s", listOr(ev, "none"))
		if x.UserMappings != nil {
			line("user mappings", "%d", *x.UserMappings)
		}
		for _, e := range x.Events {
			line("event "+e.Kind, "%s", eventText(e))
		}
		if o := x.OutOfTree; o != nil {
			line("drm accel", "%s", boolOr(o.DRMAccel))
			line("nic ports", "%#x, external %#x, initialized %s", o.NICPortsMask, o.NICPortsExternalMask, boolOr(o.NICInitialized))
			line("engines (oot)", "mme %#x, scheduler arcs %#x, odp %s", o.MMEMask, o.SchedArcMask, yesNo(o.ODPSupported))
			if p := o.ModuleParams; p != nil {
				line("module params", "timeout %d s, reset on lockup %s, tpc %#x, nic ports %#x, firmware %#x",
					p.TimeoutLockedS, yesNo(p.ResetOnLockup), p.TPCMask, p.NICPortsMask, p.FWLoadingMask)
			}
		}
	}
	for _, e := range d.Errors {
		msg := e.Message
		if e.Errno != nil {
			msg = *e.Errno + ": " + msg
		}
		line("error "+e.Query, "%s", msg)
	}
	return tw.Flush()
}

// milliUnits prints thousandths (mW) in units (W) with one decimal, as
// people read power: "95.0 W"; "-" when absent.
func milliUnits(v *uint64, unit string) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%d.%d %s", *v/1000, (*v%1000)/100, unit)
}

// energy prints millijoules in the largest unit that keeps a whole
// number in front: "96.3 J", "12.4 kJ", "3.2 MJ"; "-" when absent.
func energy(mj *uint64) string {
	if mj == nil {
		return "-"
	}
	v := float64(*mj) / 1000 // joules
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 1, 64) + " MJ"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + " kJ"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " J"
}

// eventText prints a driver event for people: its time on the driver's
// monotonic clock, then each field it has, addresses in hex.
func eventText(e devstat.Event) string {
	parts := []string{"at " + time.Duration(e.TimeNS).String()}
	hex := func(k string, v *devstat.Hex) {
		if v != nil {
			parts = append(parts, fmt.Sprintf("%s %#x", k, *v))
		}
	}
	dec := func(k string, v any) {
		parts = append(parts, fmt.Sprintf("%s %v", k, v))
	}
	if e.Seq != nil {
		dec("seq", *e.Seq)
	}
	hex("addr", e.Addr)
	if len(e.Engines) > 0 {
		dec("engines", e.Engines)
	}
	if e.Engine != nil {
		dec("engine", *e.Engine)
	}
	if e.Flags != nil {
		parts = append(parts, fmt.Sprintf("flags %#x", *e.Flags))
	}
	if e.Stream != nil {
		dec("stream", *e.Stream)
	}
	hex("cq addr", e.CQAddr)
	if e.CQSize != nil {
		dec("cq size", *e.CQSize)
	}
	if e.EventID != nil {
		dec("event id", *e.EventID)
	}
	if e.FWErrorType != nil {
		dec("fw error type", *e.FWErrorType)
	}
	if e.Count != nil {
		dec("count", *e.Count)
	}
	return strings.Join(parts, ", ")
}

// writeEngines prints the driver's engine status of one device.
func writeEngines(w io.Writer, d devstat.Device) {
	fmt.Fprintf(w, "\ndevice %d engines: idle %s, busy engine mask %s\n", d.Index, boolOr(d.Idle), masks(d.BusyEngineMask))
	if d.EngineStatus == nil {
		fmt.Fprintln(w, "  engine status not available")
		return
	}
	fmt.Fprintln(w, strings.TrimRight(*d.EngineStatus, "\n \t"))
}

// hottest prints the highest hwmon temperature, "-" without sensors.
func hottest(ts []devstat.Temperature) string {
	if len(ts) == 0 {
		return "-"
	}
	m := ts[0].Celsius
	for _, t := range ts[1:] {
		m = max(m, t.Celsius)
	}
	return fmt.Sprintf("%.0fC", m)
}

func watts(mw *uint64) string {
	if mw == nil {
		return "-"
	}
	return fmt.Sprintf("%d W", (*mw+500)/1000)
}

func percent(p *int) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%d%%", *p)
}

// memoryUsage prints used/total in GiB with one decimal.
func memoryUsage(d devstat.Device) string {
	if d.MemoryTotalBytes == nil {
		return "-"
	}
	used := "-"
	if d.MemoryUsedBytes != nil {
		used = fmt.Sprintf("%.1f", float64(*d.MemoryUsedBytes)/(1<<30))
	}
	return fmt.Sprintf("%s/%.1f GiB", used, float64(*d.MemoryTotalBytes)/(1<<30))
}

// size prints a byte count in binary units.
func size(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d B", n)
}

func bytesOr(n *uint64) string {
	if n == nil {
		return "-"
	}
	return size(*n)
}

func intOr(p *int) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(*p)
}

func uintOr(p *uint64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatUint(*p, 10)
}

func uint32Or(p *uint32) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatUint(uint64(*p), 10)
}

func floatOr(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', -1, 64)
}

func strOr(p *string) string {
	if p == nil {
		return "-"
	}
	return *p
}

func boolOr(p *bool) string {
	if p == nil {
		return "-"
	}
	return yesNo(*p)
}

func listOr(l []string, none string) string {
	if len(l) == 0 {
		return none
	}
	return strings.Join(l, ", ")
}

func labelOf(l *string) string {
	if l == nil {
		return ""
	}
	return " (" + *l + ")"
}

func masks(m []devstat.Hex) string {
	if len(m) == 0 {
		return "-"
	}
	var s []string
	for _, v := range m {
		s = append(s, fmt.Sprintf("%#x", v))
	}
	return strings.Join(s, " ")
}
