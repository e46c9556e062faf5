// Package devstat takes a typed snapshot of the Gaudi devices of a machine,
// or of the simulator's, for the tools that report them: hlinfo prints it
// as a table, CSV or JSON, and hlexporter turns it into Prometheus metrics.
//
// Every value comes from one place and says so: the driver's INFO ioctls
// (on control nodes, so other processes may own the devices), sysfs (the
// driver's attributes, the PCI function's link, its hwmon sensors), and
// /proc (which processes hold each device). A value the device or the
// kernel does not give is absent (a nil pointer, null in JSON), never 0; a
// query that failed is listed in Device.Errors with its errno.
//
// The JSON form of a Snapshot is hlinfo's -json output. Its keys carry the
// unit of their number (power_mw, clock_mhz, memory_used_bytes), and
// SchemaVersion changes when a key changes meaning or goes away; keys may
// be added without a change.
package devstat

import (
	"errors"
	"fmt"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/ioctl"
	"golang.org/x/sys/unix"
)

// SchemaVersion is the version of the JSON form of a Snapshot.
const SchemaVersion = 2

// Snapshot is every device a selector chose, read at one time.
type Snapshot struct {
	SchemaVersion int `json:"schema_version"`
	// Timestamp is when the snapshot was taken.
	Timestamp time.Time `json:"timestamp"`
	// Source is "hardware" or "simulator".
	Source string `json:"source"`
	// Driver is the habanalabs driver the devices run on: "upstream" (the
	// kernel's) or "out-of-tree" (Intel's); nil when it cannot be told or
	// the devices differ. See Device.Driver.
	Driver *string `json:"driver"`
	// DriverVersion is /sys/module/habanalabs/version when the driver has
	// one (Habana's out-of-tree driver), else "linux " and the kernel
	// release for the kernel's own driver (cli.HostDriverVersion); nil
	// for the simulator or without the driver.
	DriverVersion *string `json:"driver_version"`
	// Devices are sorted by Index.
	Devices []Device `json:"devices"`
}

// Device is one Gaudi.
type Device struct {
	// Index is N of accelN (or hlN), or of sim:accelN.
	Index      int    `json:"index"`
	PCIAddress string `json:"pci_address"`
	// ASIC is the chip as device.ASIC names it, such as "GAUDI2".
	ASIC        string `json:"asic"`
	PCIDeviceID uint16 `json:"pci_device_id"`
	PCIRevision uint8  `json:"pci_revision"`
	// ModuleID is the card's location (the OAM slot on HLS servers).
	ModuleID *int `json:"module_id"`
	// CardName is the firmware's card name (hl-smi's "name").
	CardName *string `json:"card_name"`
	// Serial and UUID are the sysfs attributes serial_number and uuid of
	// drivers that have them; the kernel's own driver has neither.
	Serial *string `json:"serial"`
	UUID   *string `json:"uuid"`
	// Status is the driver's state, such as "operational" or "in reset".
	Status    string `json:"status"`
	Simulated bool   `json:"simulated"`
	// Node and ControlNode are the device files (sim:accelN for the
	// simulator, which has none).
	Node        string `json:"node"`
	ControlNode string `json:"control_node"`
	// ABI is the ioctl encoding the driver speaks: "drm" or "legacy".
	ABI string `json:"abi"`
	// Driver is the driver the device runs on, as the device answers a
	// probe (device.Device.DriverInfo) or, when it cannot tell, as sysfs
	// says: "upstream" or "out-of-tree"; nil when unknown.
	Driver *string `json:"driver"`
	// DMABufExport is true for drivers that export dma-bufs (every DRM
	// one); nil when a control node cannot tell.
	DMABufExport *bool `json:"dmabuf_export"`
	NUMANode     *int  `json:"numa_node"`

	// FirmwareVersion is the CPU-CP version INFO HW_IP_INFO reports.
	FirmwareVersion *string `json:"firmware_version"`
	// Firmware holds the driver's version attributes from sysfs by name
	// (armcp_kernel_ver, uboot_ver, ...): text the firmware reports.
	Firmware map[string]string `json:"firmware_components"`

	MemoryTotalBytes    *uint64 `json:"memory_total_bytes"`
	MemoryFreeBytes     *uint64 `json:"memory_free_bytes"`
	MemoryUsedBytes     *uint64 `json:"memory_used_bytes"`
	MemoryPageSizeBytes *uint64 `json:"memory_page_size_bytes"`

	// PowerMW is the input power the firmware reports (INFO POWER), in mW.
	PowerMW *uint64 `json:"power_mw"`
	// PowerMaxMW is the sysfs max_power limit, in mW.
	PowerMaxMW *uint64 `json:"power_max_mw"`
	// EnergyMJ is the firmware's energy counter since it booted, in mJ
	// (INFO TOTAL_ENERGY).
	EnergyMJ           *uint64 `json:"energy_mj"`
	UtilizationPercent *int    `json:"utilization_percent"`
	ClockMHz           *uint32 `json:"clock_mhz"`
	ClockMaxMHz        *uint32 `json:"clock_max_mhz"`
	// ClockThrottleReasons names the throttling in force: "power",
	// "thermal"; empty when none (INFO CLK_THROTTLE_REASON).
	ClockThrottleReasons []string `json:"clock_throttle_reasons"`
	// Temperatures are the hwmon temperature channels of the device;
	// empty when it has none (the simulator has no hwmon).
	Temperatures []Temperature `json:"temperatures"`
	PCIe         PCIe          `json:"pcie"`
	// Resets counts the device's resets since the driver loaded.
	Resets *Resets `json:"resets"`
	// CSDrops counts the command submissions the driver dropped, for
	// the whole device, by cause (INFO CS_COUNTERS).
	CSDrops *CSDrops `json:"cs_drops"`
	// DRAMPendingRows counts HBM rows waiting for replacement.
	DRAMPendingRows *uint32 `json:"dram_pending_rows"`
	// Idle is INFO HW_IDLE; BusyEngineMask its busy engines by the
	// ASIC's engine ids, 64 per word.
	Idle           *bool `json:"idle"`
	BusyEngineMask []Hex `json:"busy_engine_mask"`
	// ComputeActive says whether a process holds the compute context
	// (INFO OPEN_STATS).
	ComputeActive *bool `json:"compute_active"`
	// Processes hold the device's files open.
	Processes []Process `json:"processes"`

	// Details holds every other INFO value (hlinfo -v).
	Details *Details `json:"details,omitempty"`
	// EngineStatus is the driver's text dump of every engine's state
	// (INFO ENGINE_STATUS; hlinfo -engines).
	EngineStatus *string `json:"engine_status,omitempty"`

	// Errors lists what could not be read, by query.
	Errors []QueryError `json:"errors"`
}

// Temperature is one hwmon temperature channel.
type Temperature struct {
	// Sensor is the channel's name, such as "temp1".
	Sensor string `json:"sensor"`
	// Label is temp*_label, when the driver gives one.
	Label *string `json:"label"`
	// Celsius is temp*_input, which hwmon reports in millidegrees.
	Celsius float64 `json:"celsius"`
}

// PCIe is the device's PCI Express link (sysfs) and traffic (INFO
// PCI_COUNTERS).
type PCIe struct {
	// LinkSpeedGTs and LinkWidth are the negotiated link; the Max ones
	// what the device can do.
	LinkSpeedGTs    *float64 `json:"link_speed_gts"`
	LinkWidth       *int     `json:"link_width"`
	MaxLinkSpeedGTs *float64 `json:"max_link_speed_gts"`
	MaxLinkWidth    *int     `json:"max_link_width"`
	// RXKBps and TXKBps are the throughput the firmware measured over
	// its last 10 ms window, in KB/s.
	RXKBps *uint64 `json:"rx_kbps"`
	TXKBps *uint64 `json:"tx_kbps"`
	// Replays counts the link's replayed packets.
	Replays *uint64 `json:"replays"`
}

// Resets counts resets: INFO RESET_COUNT, or the sysfs counters when the
// INFO query fails.
type Resets struct {
	Hard uint32 `json:"hard"`
	Soft uint32 `json:"soft"`
}

// CSDrops counts dropped command submissions by cause, device-wide.
type CSDrops struct {
	OutOfMemory   uint64 `json:"out_of_memory"`
	Parsing       uint64 `json:"parsing"`
	QueueFull     uint64 `json:"queue_full"`
	DeviceInReset uint64 `json:"device_in_reset"`
	MaxInFlight   uint64 `json:"max_in_flight"`
	Validation    uint64 `json:"validation"`
}

// Process is a process that holds a device file open.
type Process struct {
	PID  int    `json:"pid"`
	Name string `json:"name"`
	// Node is "compute" (the process owns the compute context) or
	// "control" (it reads INFO).
	Node string `json:"node"`
}

// QueryError is a value that could not be read.
type QueryError struct {
	// Query names what was asked, such as "power" or "sysfs".
	Query string `json:"query"`
	// Errno is the error's errno name, such as "EBUSY", when it has one.
	Errno *string `json:"errno"`
	// Message is the error's text.
	Message string `json:"message"`
}

// queryError describes err for Device.Errors.
func queryError(query string, err error) QueryError {
	q := QueryError{Query: query, Message: err.Error()}
	var e *ioctl.Error
	var errno unix.Errno
	switch {
	case errors.As(err, &e):
		errno = e.Errno
	case errors.As(err, &errno):
	}
	if errno != 0 {
		name := unix.ErrnoName(errno)
		if name == "" {
			name = fmt.Sprintf("errno %d", int(errno))
		}
		q.Errno = &name
	}
	return q
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// asicName is the chip's name as device.ASIC spells it.
func asicName(a device.ASIC) string { return a.String() }
