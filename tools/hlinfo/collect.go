package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/simdevice"
	"golang.org/x/sys/unix"
)

// inventory is everything hlinfo reports.
type inventory struct {
	Source  string      `json:"source"` // "hardware" or "simulator"
	Devices []report    `json:"devices"`
	NICs    []nicReport `json:"rdma_devices"`
}

// report describes one device.
type report struct {
	Index        int    `json:"index"`
	PCIAddress   string `json:"pci_address"`
	ASIC         string `json:"asic"`
	DeviceID     string `json:"device_id"`
	Revision     uint8  `json:"revision"`
	ModuleID     uint32 `json:"module_id"`
	CardName     string `json:"card_name"`
	Firmware     string `json:"firmware"`
	DRAMTotal    uint64 `json:"dram_total"`
	DRAMFree     uint64 `json:"dram_free"`
	DRAMPageSize uint64 `json:"dram_page_size"`
	Status       string `json:"status"`
	Owned        bool   `json:"owned"` // a process holds the compute context
	Encoding     string `json:"abi"`
	DMABuf       string `json:"dmabuf_export"`
	NUMANode     int    `json:"numa_node"`
	Node         string `json:"node"`
	ControlNode  string `json:"control_node"`
	// Info holds every INFO value (with -v), by name; Errors the INFO
	// queries the device refused, by name.
	Info   []field `json:"info,omitempty"`
	Errors []field `json:"info_errors,omitempty"`
}

// field is one named value, kept in query order.
type field struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// collect lists the devices GAUDI_DEVICE (choice) and the machine offer.
func collect(choice string, verbose bool) (*inventory, error) {
	nodes, err := device.Nodes()
	if err != nil {
		return nil, fmt.Errorf("list devices: %w", err)
	}
	var inv *inventory
	if strings.HasPrefix(choice, "sim") || len(nodes) == 0 {
		inv, err = collectSim(verbose)
	} else {
		inv, err = collectHardware(nodes, verbose)
	}
	if err != nil {
		return nil, err
	}
	inv.NICs = []nicReport{}
	s, nics, err := listNICs()
	if err != nil {
		return nil, fmt.Errorf("list rdma devices: %w", err)
	}
	collectNICs(inv, s, nics)
	return inv, nil
}

// listNICs lists the RDMA devices and the sysfs they were read from;
// tests replace it with a fixture.
var listNICs = func() (ib.SysFS, []ib.Device, error) {
	nics, err := ib.Devices()
	return ib.SysFS{}, nics, err
}

// collectHardware reports the habanalabs devices sysfs lists.
func collectHardware(nodes []device.Node, verbose bool) (*inventory, error) {
	inv := &inventory{Source: "hardware"}
	for _, nd := range nodes {
		r := report{Index: nd.Index, PCIAddress: nd.PCIAddress, NUMANode: nd.NUMANode, Node: nd.Path, ControlNode: nd.ControlPath,
			Status: strings.ToLower(nd.Status)}
		if nd.ControlPath != "" {
			if d, err := device.OpenControl(nd.ControlPath); err == nil {
				fill(&r, d, verbose)
				if err := d.Close(); err != nil {
					r.Errors = append(r.Errors, field{"close", err.Error()})
				}
			} else {
				r.Errors = append(r.Errors, field{"open", err.Error()})
			}
		}
		inv.Devices = append(inv.Devices, r)
	}
	return inv, nil
}

func collectSim(verbose bool) (*inventory, error) {
	s, err := simdevice.System()
	if err != nil {
		return nil, err
	}
	inv := &inventory{Source: "simulator"}
	for _, sd := range s.Devices() {
		r := report{Index: sd.Index(), PCIAddress: sd.Config().PCIAddress, NUMANode: -1, Node: sd.Name(), ControlNode: sd.Name() + "-control"}
		d, err := simdevice.OpenSimControl(sd)
		if err != nil {
			r.Errors = append(r.Errors, field{"open", err.Error()})
		} else {
			fill(&r, d, verbose)
			if err := d.Close(); err != nil {
				r.Errors = append(r.Errors, field{"close", err.Error()})
			}
		}
		inv.Devices = append(inv.Devices, r)
	}
	return inv, nil
}

// fill reads identity and, with verbose, every INFO value from a control
// node.
func fill(r *report, d *device.Device, verbose bool) {
	hw := d.HWIPInfo()
	r.ASIC = d.ASIC().String()
	r.DeviceID = fmt.Sprintf("%#04x", hw.DeviceID)
	r.Revision = hw.Revision
	r.ModuleID = hw.ModuleID
	r.CardName = hw.CardName
	r.Firmware = hw.CPUCPVersion
	r.DRAMTotal = hw.DRAMSize
	r.DRAMPageSize = hw.DRAMPageSize
	r.Encoding = d.Encoding().String()
	// Every driver that speaks the DRM encoding (6.6 and later) has
	// MEMORY EXPORT_DMABUF_FD; for older ones a control node cannot tell.
	if d.Encoding() == ioctl.EncodingDRM {
		r.DMABuf = "yes"
	} else {
		r.DMABuf = "unknown"
	}
	if st, err := d.Status(); err == nil {
		r.Status = st.String()
	}
	if u, err := d.DRAMUsage(); err == nil {
		r.DRAMFree = u.Free
	}
	if os, err := d.OpenStats(); err == nil {
		r.Owned = os.ComputeActive
	}
	if verbose {
		for _, q := range queries {
			v, err := q.get(d)
			if err != nil {
				r.Errors = append(r.Errors, field{q.name, errText(err)})
				continue
			}
			r.Info = append(r.Info, field{q.name, v})
		}
	}
}

// errText names an INFO failure briefly: the errno and what it means here.
func errText(err error) string {
	var e *ioctl.Error
	if errors.As(err, &e) {
		switch e.Errno {
		case unix.EBUSY:
			return "EBUSY (device not operational)"
		case unix.EOPNOTSUPP, unix.ENOTTY:
			return "not supported"
		}
		return unix.ErrnoName(e.Errno) + " (" + e.Errno.Error() + ")"
	}
	return err.Error()
}

// query is one INFO value hlinfo -v prints.
type query struct {
	name string
	get  func(d *device.Device) (string, error)
}

func q[T any](name string, f func(d *device.Device) (T, error), format func(T) string) query {
	return query{name, func(d *device.Device) (string, error) {
		v, err := f(d)
		if err != nil {
			return "", err
		}
		return format(v), nil
	}}
}

func event[T any](name string, f func(d *device.Device) (T, bool, error)) query {
	return query{name, func(d *device.Device) (string, error) {
		v, ok, err := f(d)
		if err != nil {
			return "", err
		}
		if !ok {
			return "none recorded", nil
		}
		return fmt.Sprintf("%+v", v), nil
	}}
}

var queries = []query{
	q("hw_ip_info", func(d *device.Device) (device.HWIPInfo, error) { return d.HWIPInfo(), nil }, func(h device.HWIPInfo) string {
		return fmt.Sprintf("sram %#x+%s, dram %#x+%s in %s pages (driver keeps %s), events %d, interrupts %d from %d, tpc %#x, decoders %#x, edma %#x, security %v",
			h.SRAMBase, size(h.SRAMSize), h.DRAMBase, size(h.DRAMSize), size(h.DRAMPageSize), size(h.DRAMReserved), h.NumEvents,
			h.UserInterrupts, h.FirstUserInterrupt, h.TPCMask, h.DecoderMask, h.EDMAMask, h.SecurityEnabled)
	}),
	q("device_status", (*device.Device).Status, func(s device.Status) string { return s.String() }),
	q("dram_usage", (*device.Device).DRAMUsage, func(u device.DRAMUsage) string {
		return fmt.Sprintf("free %s, this context %s", size(u.Free), size(u.Context))
	}),
	q("hw_idle", (*device.Device).HWIdle, func(i device.Idle) string { return fmt.Sprintf("idle %v, busy %#x", i.Idle, i.BusyEngines) }),
	q("utilization", func(d *device.Device) (int, error) { return d.Utilization(100 * time.Millisecond) }, func(p int) string { return fmt.Sprintf("%d%%", p) }),
	q("clk_rate", (*device.Device).ClockRate, func(c device.Clock) string { return fmt.Sprintf("%d MHz of %d MHz", c.CurrentMHz, c.MaxMHz) }),
	q("reset_count", (*device.Device).ResetCount, func(c device.ResetCount) string { return fmt.Sprintf("hard %d, soft %d", c.Hard, c.Soft) }),
	q("cs_counters", (*device.Device).CSCounters, func(c device.CSCounters) string { return fmt.Sprintf("%+v", c) }),
	q("pci_counters", (*device.Device).PCICounters, func(c device.PCICounters) string { return fmt.Sprintf("%+v", c) }),
	q("clk_throttle", (*device.Device).ClockThrottle, func(t device.Throttle) string { return fmt.Sprintf("reasons %#x", t.Reasons) }),
	q("sync_manager", func(d *device.Device) (device.SyncManager, error) { return d.SyncManager(0) }, func(s device.SyncManager) string {
		return fmt.Sprintf("dcore 0: first sob %d, monitor %d, cq %d", s.FirstSyncObject, s.FirstMonitor, s.FirstCQ)
	}),
	q("total_energy", (*device.Device).TotalEnergy, func(e uint64) string { return fmt.Sprint(e) }),
	q("power", (*device.Device).Power, func(p uint64) string { return fmt.Sprint(p) }),
	q("pll_frequency", func(d *device.Device) ([4]uint16, error) { return d.PLLFrequency(0) }, func(f [4]uint16) string { return fmt.Sprintf("pll 0: %v", f) }),
	q("open_stats", (*device.Device).OpenStats, func(o device.OpenStats) string {
		return fmt.Sprintf("opens %d, owned %v, releasing %v", o.Opens, o.ComputeActive, o.ComputeInRelease)
	}),
	q("dram_pending_rows", (*device.Device).DRAMPendingRows, func(n uint32) string { return fmt.Sprint(n) }),
	q("dev_mem_alloc_page_sizes", (*device.Device).DevMemAllocPageSizes, func(m uint64) string { return fmt.Sprintf("%#x", m) }),
	q("hw_events", func(d *device.Device) ([]uint32, error) { return d.HWEvents(false) }, nonZero),
	q("hw_events_aggregate", func(d *device.Device) ([]uint32, error) { return d.HWEvents(true) }, nonZero),
	event("cs_timeout_event", (*device.Device).CSTimeoutEvent),
	event("razwi_event", (*device.Device).RazwiEvent),
	event("page_fault_event", (*device.Device).PageFaultEvent),
	event("undefined_opcode_event", (*device.Device).UndefinedOpcodeEvent),
	event("hw_err_event", (*device.Device).HWErrEvent),
	event("fw_err_event", (*device.Device).FWErrEvent),
	event("engine_err_event", (*device.Device).EngineErrEvent),
	q("user_mappings", (*device.Device).UserMappings, func(m []device.Mapping) string { return fmt.Sprintf("%d recorded", len(m)) }),
	q("engine_status", (*device.Device).EngineStatus, func(s string) string { return fmt.Sprintf("%d lines", strings.Count(s, "\n")) }),
}

func nonZero(counts []uint32) string {
	var parts []string
	for id, c := range counts {
		if c != 0 {
			parts = append(parts, fmt.Sprintf("%d:%d", id, c))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%d event ids, none counted", len(counts))
	}
	return strings.Join(parts, " ")
}

// size prints a byte count in binary units.
func size(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d B", n)
}
