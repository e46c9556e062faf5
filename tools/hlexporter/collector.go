package main

import (
	"log"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gaudi-go/gaudi/tools/internal/devstat"
)

// The metric names, their units and the common labels are those of
// Habana's metric exporter, so that dashboards built on it keep working:
// HabanaAI/gaudi-metric-exporter at commit
// c5973e8c5cf11fbe9268cf8d4d9c288d785a90f7, exporter.go (getMetricLabels,
// Collect) and samples.go (names and help), and the Intel Gaudi
// documentation's "Prometheus Metric Exporter" page (default port 41611).
// Its labels are Serial, UUID, device (the serial again), id (the device
// index), fit (the U-Boot version), spi (the firmware kernel version),
// driver (the driver version), pod_namespace and pod_name.
//
// Where this exporter differs, on purpose:
//   - A value the device does not give is not exported, where Habana's
//     exporter sends 0: no temperature series on the simulator, no link
//     speed without a PCIe link.
//   - device is the serial number when the driver shows one, else the PCI
//     address, so that series of different devices never share it.
//   - pod_namespace and pod_name are empty: this exporter does not ask the
//     kubelet which pod holds a device.
//   - habanalabs_temperature_onchip is the hwmon channel labelled as the
//     chip's when there is one, else the hottest channel: the kernel's
//     driver labels none (drivers/accel/habanalabs/common/hwmon.c);
//     habanalabs_temperature_onboard only exists for a channel labelled
//     "board". Every channel is also habanalabs_hwmon_temperature_celsius.
//   - habanalabs_power_default_limit_mW is the sysfs max_power limit in
//     force (Habana's library reads the limit the device booted with).
//   - Habana's metrics without a source in the kernel's driver (ECC mode,
//     replaced-row counts, temperature thresholds, NIC port status) and
//     its accelerator_* duplicates are not exported.
//   - The metrics below habanalabs_device_processes are this exporter's.

// commonLabels are the labels of every device metric.
var commonLabels = []string{"Serial", "UUID", "device", "id", "fit", "spi", "driver", "pod_namespace", "pod_name"}

// gauge is a device metric with the common labels only.
type gauge struct {
	desc  *prometheus.Desc
	value func(d *devstat.Device) (float64, bool)
}

func u64(p *uint64) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return float64(*p), true
}

func u32(p *uint32) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return float64(*p), true
}

func integer(p *int) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return float64(*p), true
}

// collector reads a devstat snapshot at every scrape.
type collector struct {
	opts   devstat.Options
	gauges []gauge
	// Metrics with labels of their own.
	config, hwmon, resets, drops, errs *prometheus.Desc
	// The exporter's own.
	success, duration *prometheus.Desc

	// mu makes scrapes take turns: two at once would only read the
	// same devices twice.
	mu sync.Mutex
}

// lintNames are the names of Habana's that promtool's lint rejects, and
// what newCollector calls them without habanaNames: snake case, and no
// "_count" suffix outside histograms and summaries.
var lintNames = map[string]string{
	"habanalabs_power_mW":               "habanalabs_power_mw",
	"habanalabs_power_default_limit_mW": "habanalabs_power_default_limit_mw",
	"habanalabs_pcie_replay_count":      "habanalabs_pcie_replays",
}

// newCollector describes the metrics. habanaNames keeps Habana's names
// even where promtool's lint rejects them (lintNames).
func newCollector(opts devstat.Options, habanaNames bool) *collector {
	name := func(n string) string {
		if to, ok := lintNames[n]; ok && !habanaNames {
			return to
		}
		return n
	}
	d := func(name, help string, extra ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append(append([]string(nil), commonLabels...), extra...), nil)
	}
	c := &collector{opts: opts}
	add := func(n, help string, v func(d *devstat.Device) (float64, bool)) {
		c.gauges = append(c.gauges, gauge{d(name(n), help), v})
	}
	add("habanalabs_clock_soc_mhz", "Current frequency of the SOC in MHz (INFO CLK_RATE)", func(x *devstat.Device) (float64, bool) { return u32(x.ClockMHz) })
	add("habanalabs_clock_soc_max_mhz", "Maximum frequency of the SOC in MHz (INFO CLK_RATE)", func(x *devstat.Device) (float64, bool) { return u32(x.ClockMaxMHz) })
	add("habanalabs_energy", "Energy the device used since its firmware started, in millijoules (INFO TOTAL_ENERGY)", func(x *devstat.Device) (float64, bool) { return u64(x.EnergyMJ) })
	add("habanalabs_memory_free_bytes", "Device memory not allocated, in bytes", func(x *devstat.Device) (float64, bool) { return u64(x.MemoryFreeBytes) })
	add("habanalabs_memory_total_bytes", "Device memory available to users, in bytes", func(x *devstat.Device) (float64, bool) { return u64(x.MemoryTotalBytes) })
	add("habanalabs_memory_used_bytes", "Device memory allocated, in bytes", func(x *devstat.Device) (float64, bool) { return u64(x.MemoryUsedBytes) })
	add("habanalabs_pci_link_speed", "Current PCIe link speed in GT/s (sysfs current_link_speed)", func(x *devstat.Device) (float64, bool) {
		if x.PCIe.LinkSpeedGTs == nil {
			return 0, false
		}
		return *x.PCIe.LinkSpeedGTs, true
	})
	add("habanalabs_pci_link_width", "Current PCIe link width in lanes (sysfs current_link_width)", func(x *devstat.Device) (float64, bool) { return integer(x.PCIe.LinkWidth) })
	add("habanalabs_pcie_receive_throughput", "PCIe receive throughput in KB/s (INFO PCI_COUNTERS)", func(x *devstat.Device) (float64, bool) { return u64(x.PCIe.RXKBps) })
	add("habanalabs_pcie_rx", "PCIe receive throughput in KB/s (INFO PCI_COUNTERS)", func(x *devstat.Device) (float64, bool) { return u64(x.PCIe.RXKBps) })
	add("habanalabs_pcie_transmit_throughput", "PCIe transmit throughput in KB/s (INFO PCI_COUNTERS)", func(x *devstat.Device) (float64, bool) { return u64(x.PCIe.TXKBps) })
	add("habanalabs_pcie_tx", "PCIe transmit throughput in KB/s (INFO PCI_COUNTERS)", func(x *devstat.Device) (float64, bool) { return u64(x.PCIe.TXKBps) })
	add("habanalabs_pcie_replay_count", "PCIe replay count (INFO PCI_COUNTERS)", func(x *devstat.Device) (float64, bool) { return u64(x.PCIe.Replays) })
	add("habanalabs_pending_rows_state", "Whether HBM rows wait for replacement (INFO DRAM_PENDING_ROWS)", func(x *devstat.Device) (float64, bool) {
		if x.DRAMPendingRows == nil {
			return 0, false
		}
		if *x.DRAMPendingRows > 0 {
			return 1, true
		}
		return 0, true
	})
	add("habanalabs_power_default_limit_mW", "Power limit in milliwatts (sysfs max_power)", func(x *devstat.Device) (float64, bool) { return u64(x.PowerMaxMW) })
	add("habanalabs_power_mW", "Power usage in milliwatts (INFO POWER)", func(x *devstat.Device) (float64, bool) { return u64(x.PowerMW) })
	add("habanalabs_temperature_onboard", "Board temperature in Celsius (the hwmon channel labelled board)", func(x *devstat.Device) (float64, bool) {
		for _, t := range x.Temperatures {
			if t.Label != nil && strings.Contains(strings.ToLower(*t.Label), "board") {
				return t.Celsius, true
			}
		}
		return 0, false
	})
	add("habanalabs_temperature_onchip", "Chip temperature in Celsius (the hwmon channel labelled as the chip's, else the hottest)", onChip)
	add("habanalabs_utilization", "Utilization of the device in percent (INFO DEVICE_UTILIZATION)", func(x *devstat.Device) (float64, bool) { return integer(x.UtilizationPercent) })
	add("habanalabs_device_processes", "Processes that hold the device open (/proc/*/fd)", func(x *devstat.Device) (float64, bool) { return float64(len(x.Processes)), true })
	add("habanalabs_device_operational", "1 when the driver reports the device operational", func(x *devstat.Device) (float64, bool) {
		if x.Status == "operational" {
			return 1, true
		}
		return 0, true
	})
	c.config = d("habanalabs_device_config", "Gaudi device configuration; the value is always 1",
		"bus_id", "asic", "module_id", "card_name", "firmware", "simulated")
	c.hwmon = d("habanalabs_hwmon_temperature_celsius", "Temperature of one hwmon channel of the device in Celsius", "sensor", "label")
	c.resets = d("habanalabs_resets_total", "Device resets since the driver loaded, by type (INFO RESET_COUNT)", "type")
	c.drops = d("habanalabs_cs_dropped_total", "Command submissions the driver dropped, by cause (INFO CS_COUNTERS)", "cause")
	c.errs = d("habanalabs_device_collect_errors", "1 for each query that failed for the device at the last scrape, by query (hlinfo -json lists the errors)", "query")
	c.success = prometheus.NewDesc("habanalabs_exporter_collect_success", "1 when the last scrape listed the devices and every query of every device answered", nil, nil)
	c.duration = prometheus.NewDesc("habanalabs_exporter_collect_duration_seconds", "How long reading the devices took", nil, nil)
	return c
}

// onChip picks the chip temperature: a channel labelled as the chip's,
// else the hottest channel.
func onChip(x *devstat.Device) (float64, bool) {
	if len(x.Temperatures) == 0 {
		return 0, false
	}
	for _, t := range x.Temperatures {
		if t.Label == nil {
			continue
		}
		l := strings.ToLower(*t.Label)
		for _, w := range []string{"chip", "aip", "asic", "die"} {
			if strings.Contains(l, w) {
				return t.Celsius, true
			}
		}
	}
	m := x.Temperatures[0].Celsius
	for _, t := range x.Temperatures[1:] {
		m = max(m, t.Celsius)
	}
	return m, true
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range c.gauges {
		ch <- g.desc
	}
	for _, d := range []*prometheus.Desc{c.config, c.hwmon, c.resets, c.drops, c.errs, c.success, c.duration} {
		ch <- d
	}
}

// labels returns the common label values of a device.
func labels(s *devstat.Snapshot, x *devstat.Device) []string {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	dev := str(x.Serial)
	if dev == "" {
		dev = x.PCIAddress
	}
	return []string{str(x.Serial), str(x.UUID), dev, strconv.Itoa(x.Index), x.Firmware["uboot_ver"],
		x.Firmware["armcp_kernel_ver"], str(s.DriverVersion), "", ""}
}

// Collect implements prometheus.Collector: it reads the devices now.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := time.Now()
	s, err := devstat.Collect(c.opts)
	ch <- prometheus.MustNewConstMetric(c.duration, prometheus.GaugeValue, time.Since(start).Seconds())
	if err != nil {
		log.Printf("hlexporter: %v", err)
		ch <- prometheus.MustNewConstMetric(c.success, prometheus.GaugeValue, 0)
		return
	}
	success := 1.0
	for i := range s.Devices {
		x := &s.Devices[i]
		l := labels(s, x)
		with := func(extra ...string) []string { return append(append([]string(nil), l...), extra...) }
		// One series per failed query: a value that is missing says why.
		failed := map[string]bool{}
		for _, e := range x.Errors {
			if !failed[e.Query] {
				failed[e.Query] = true
				ch <- prometheus.MustNewConstMetric(c.errs, prometheus.GaugeValue, 1, with(e.Query)...)
			}
			success = 0
		}
		for _, g := range c.gauges {
			if v, ok := g.value(x); ok {
				ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v, l...)
			}
		}
		module, card, fw := "", "", ""
		if x.ModuleID != nil {
			module = strconv.Itoa(*x.ModuleID)
		}
		if x.CardName != nil {
			card = *x.CardName
		}
		if x.FirmwareVersion != nil {
			fw = *x.FirmwareVersion
		}
		ch <- prometheus.MustNewConstMetric(c.config, prometheus.GaugeValue, 1,
			with(x.PCIAddress, x.ASIC, module, card, fw, strconv.FormatBool(x.Simulated))...)
		for _, t := range x.Temperatures {
			label := ""
			if t.Label != nil {
				label = *t.Label
			}
			ch <- prometheus.MustNewConstMetric(c.hwmon, prometheus.GaugeValue, t.Celsius, with(t.Sensor, label)...)
		}
		if r := x.Resets; r != nil {
			ch <- prometheus.MustNewConstMetric(c.resets, prometheus.CounterValue, float64(r.Hard), with("hard")...)
			ch <- prometheus.MustNewConstMetric(c.resets, prometheus.CounterValue, float64(r.Soft), with("soft")...)
		}
		if dr := x.CSDrops; dr != nil {
			for _, v := range []struct {
				cause string
				n     uint64
			}{
				{"out_of_memory", dr.OutOfMemory}, {"parsing", dr.Parsing}, {"queue_full", dr.QueueFull},
				{"device_in_reset", dr.DeviceInReset}, {"max_in_flight", dr.MaxInFlight}, {"validation", dr.Validation},
			} {
				ch <- prometheus.MustNewConstMetric(c.drops, prometheus.CounterValue, float64(v.n), with(v.cause)...)
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(c.success, prometheus.GaugeValue, success)
}
