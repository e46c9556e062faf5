package gohlml

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gaudi-go/gaudi/device"
)

// Device is a handle to one device, valid from Initialize to Shutdown. It
// is a small value, safe to copy and to use from many goroutines at once.
// Its zero value (what the lookups return with an error) answers
// ErrInvalidArgument.
type Device struct{ h *handle }

// PCIInfo is the PCI identity of a device, as gohlml declares it.
type PCIInfo struct {
	BusID    string
	DeviceID uint
}

// DeviceSource is what NewDevice reads a device's values from.
type DeviceSource struct {
	// Control is the device's control node (device.OpenControl, or
	// simdevice.OpenSimControl); nil makes the INFO values fail with
	// OpenErr.
	Control *device.Device
	// OpenErr is why Control is nil.
	OpenErr error
	// Node is the device as sysfs lists it, found in SysFS; nil makes the
	// values only sysfs gives (serial, UUID, PCIe link, temperatures,
	// NUMA node) ErrNotSupported.
	Node  *device.Node
	SysFS device.SysFS
}

// NewDevice returns a Device that reads src, for programs that open the
// devices themselves (hlinfo and hlexporter read each value through it).
// It needs no Initialize and Shutdown does not end it; the caller keeps
// src.Control open while it uses the Device, and closes it. Its
// MinorNumber is N of the node's name.
func NewDevice(src DeviceSource) Device { return Device{newHandle(src)} }

// newHandle reads the identity src gives.
func newHandle(src DeviceSource) *handle {
	h := &handle{dev: src.Control, openErr: src.OpenErr}
	if h.dev == nil && h.openErr == nil {
		h.openErr = errors.New("no control node")
	}
	if n := src.Node; n != nil {
		h.node, h.hasNode, h.minor, h.pciAddress = *n, true, n.Index, n.PCIAddress
		h.attrDir, h.pciDir = src.SysFS.AttrDir(*n), src.SysFS.PCIDir(*n)
		h.serial = readAttr(h.attrDir, "serial_number")
		h.uuid = readAttr(h.attrDir, "uuid")
	} else if h.dev != nil {
		h.minor, _ = trailingNumber(h.dev.Path())
	}
	if h.pciAddress == "" && h.dev != nil {
		h.pciAddress, _ = h.dev.PCIAddress()
	}
	return h
}

// handle is one device. Its fields are set when it is made and only read
// afterwards.
type handle struct {
	lib        *library // nil for NewDevice's
	index      int      // DeviceHandleByIndex's number
	minor      int      // N of accelN
	node       device.Node
	hasNode    bool
	attrDir    string // the driver attributes ("" without sysfs)
	pciDir     string // the PCI function ("" without sysfs)
	serial     string // sysfs serial_number, "" when absent
	uuid       string // sysfs uuid, "" when absent
	pciAddress string
	dev        *device.Device // the control node; nil when openErr
	openErr    error
}

// ctl returns d's control node, after checking that d is a handle of the
// library in force.
func (d Device) ctl(op string) (*device.Device, error) {
	h, err := d.handle()
	if err != nil {
		return nil, err
	}
	if h.dev == nil {
		return nil, driverError(op, h.openErr)
	}
	return h.dev, nil
}

// handle returns d's handle, ErrInvalidArgument for the zero Device and
// ErrNotIntialized after Shutdown.
func (d Device) handle() (*handle, error) {
	if d.h == nil {
		return nil, ErrInvalidArgument
	}
	if d.h.lib == nil {
		return d.h, nil
	}
	l, err := current()
	if err != nil {
		return nil, err
	}
	if l != d.h.lib {
		return nil, ErrNotIntialized
	}
	return d.h, nil
}

// MinorNumber returns N of the device's nodes (/dev/accel/accelN), which
// the device plugin turns back into the node path.
func (d Device) MinorNumber() (uint, error) {
	h, err := d.handle()
	if err != nil {
		return 0, err
	}
	return uint(h.minor), nil
}

// Name returns the card's name as the firmware reports it (INFO HW_IP_INFO
// card_name, CPU-CP's cpucp_info.card_name), such as "HL225".
func (d Device) Name() (string, error) {
	dev, err := d.ctl("name")
	if err != nil {
		return "", err
	}
	if n := dev.HWIPInfo().CardName; n != "" {
		return n, nil
	}
	return "", ErrNotSupported
}

// UUID returns the sysfs attribute uuid of the device's driver attributes,
// where the driver provides one. The kernel's driver (6.12) has none, and
// neither does the out-of-tree one's common/sysfs.c: the card's identity
// is in its EEPROM, whose layout no driver documents. Without the
// attribute it is ErrNotSupported.
func (d Device) UUID() (string, error) {
	h, err := d.handle()
	if err != nil {
		return "", err
	}
	if h.uuid == "" {
		return "", ErrNotSupported
	}
	return h.uuid, nil
}

// SerialNumber returns the sysfs attribute serial_number of the device's
// driver attributes, where the driver provides one (see UUID), else
// ErrNotSupported.
func (d Device) SerialNumber() (string, error) {
	h, err := d.handle()
	if err != nil {
		return "", err
	}
	if h.serial == "" {
		return "", ErrNotSupported
	}
	return h.serial, nil
}

// pciAddr returns the device's PCI address (sysfs, or the node's file for
// devices without sysfs), split in its parts.
func (d Device) pciAddr() (domain, bus uint64, addr string, err error) {
	h, err := d.handle()
	if err != nil {
		return 0, 0, "", err
	}
	// "DDDD:BB:SS.F" (drivers/pci/probe.c, pci_setup_device's dev_set_name).
	f := strings.Split(h.pciAddress, ":")
	if len(f) != 3 {
		return 0, 0, "", ErrNotSupported
	}
	domain, err1 := strconv.ParseUint(f[0], 16, 32)
	bus, err2 := strconv.ParseUint(f[1], 16, 8)
	if err1 != nil || err2 != nil {
		return 0, 0, "", ErrNotSupported
	}
	return domain, bus, h.pciAddress, nil
}

// PCIDomain returns the PCI domain of the device's function.
func (d Device) PCIDomain() (uint, error) {
	dom, _, _, err := d.pciAddr()
	return uint(dom), err
}

// PCIBus returns the PCI bus of the device's function.
func (d Device) PCIBus() (uint, error) {
	_, bus, _, err := d.pciAddr()
	return uint(bus), err
}

// PCIBusID returns the PCI address of the device's function, such as
// "0000:19:00.0" (the sysfs device link, or pci_addr).
func (d Device) PCIBusID() (string, error) {
	_, _, addr, err := d.pciAddr()
	return addr, err
}

// PCIID returns the PCI device id (sysfs "device" of the function, else
// INFO HW_IP_INFO device_id), such as 0x1020 for Gaudi2.
func (d Device) PCIID() (uint, error) {
	h, err := d.handle()
	if err != nil {
		return 0, err
	}
	if h.hasNode && h.node.DeviceID != 0 {
		return uint(h.node.DeviceID), nil
	}
	dev, err := d.ctl("pci id")
	if err != nil {
		return 0, err
	}
	return uint(dev.HWIPInfo().DeviceID), nil
}

// linkSpeed reads the function's current_link_speed (drivers/pci/
// pci-sysfs.c, printed by pci_speed_string as "16.0 GT/s PCIe") in GT/s.
func (d Device) linkSpeed() (float64, error) {
	h, err := d.handle()
	if err != nil {
		return 0, err
	}
	s := readAttr(h.pciDir, "current_link_speed")
	num, _, found := strings.Cut(s, " GT/s")
	v, perr := strconv.ParseFloat(num, 64)
	if !found || perr != nil || v <= 0 {
		return 0, ErrNotSupported
	}
	return v, nil
}

// PCILinkSpeed returns the PCIe link's current speed in whole GT/s (2 for
// 2.5 GT/s), from sysfs current_link_speed; ErrNotSupported when sysfs
// does not show it or says "Unknown".
func (d Device) PCILinkSpeed() (uint, error) {
	v, err := d.linkSpeed()
	return uint(v), err
}

// PCILinkWidth returns the PCIe link's current lane count (sysfs
// current_link_width); ErrNotSupported when sysfs does not show it or the
// link is down.
func (d Device) PCILinkWidth() (uint, error) {
	h, err := d.handle()
	if err != nil {
		return 0, err
	}
	v, perr := strconv.ParseUint(readAttr(h.pciDir, "current_link_width"), 10, 32)
	if perr != nil || v == 0 {
		return 0, ErrNotSupported
	}
	return uint(v), nil
}

// PCIeLinkWidth is PCILinkWidth.
func (d Device) PCIeLinkWidth() (uint, error) { return d.PCILinkWidth() }

// PCIeLinkGeneration returns the PCIe generation of the link's current
// speed (sysfs current_link_speed: 2.5 GT/s is generation 1, 5 is 2, 8 is
// 3, 16 is 4, 32 is 5, 64 is 6; the PCIe base specifications' rates).
func (d Device) PCIeLinkGeneration() (uint, error) {
	v, err := d.linkSpeed()
	if err != nil {
		return 0, err
	}
	for gen, rate := range []float64{2.5, 5, 8, 16, 32, 64} {
		if v == rate {
			return uint(gen + 1), nil
		}
	}
	return 0, ErrNotSupported
}

// MemoryInfo returns the device memory users get, in bytes: total (INFO
// HW_IP_INFO dram_size), used (total minus free) and free (INFO DRAM_USAGE
// dram_free_mem, the whole device's, every context's allocations
// counted).
func (d Device) MemoryInfo() (uint64, uint64, uint64, error) {
	dev, err := d.ctl("memory")
	if err != nil {
		return 0, 0, 0, err
	}
	total := dev.HWIPInfo().DRAMSize
	u, err := dev.DRAMUsage()
	if err != nil {
		return 0, 0, 0, driverError("dram usage", err)
	}
	free := min(u.Free, total)
	return total, total - free, free, nil
}

// UtilizationPeriod is the window INFO DEVICE_UTILIZATION averages over
// for UtilizationInfo.
const UtilizationPeriod = 100 * time.Millisecond

// UtilizationInfo returns the device's utilization in percent over the
// last UtilizationPeriod (INFO DEVICE_UTILIZATION, hl_device_utilization).
func (d Device) UtilizationInfo() (uint, error) {
	dev, err := d.ctl("utilization")
	if err != nil {
		return 0, err
	}
	u, err := dev.Utilization(UtilizationPeriod)
	if err != nil {
		return 0, driverError("utilization", err)
	}
	return uint(u), nil
}

// clock returns INFO CLK_RATE (the firmware's current and maximum
// frequency of the PLL the driver reports, in MHz).
func (d Device) clock() (device.Clock, error) {
	dev, err := d.ctl("clock")
	if err != nil {
		return device.Clock{}, err
	}
	c, err := dev.ClockRate()
	return c, driverError("clock rate", err)
}

// SOCClockInfo returns the current clock in MHz (INFO CLK_RATE
// cur_clk_rate_mhz).
func (d Device) SOCClockInfo() (uint, error) {
	c, err := d.clock()
	return uint(c.CurrentMHz), err
}

// SOCClockMax returns the maximum clock in MHz (INFO CLK_RATE
// max_clk_rate_mhz).
func (d Device) SOCClockMax() (uint, error) {
	c, err := d.clock()
	return uint(c.MaxMHz), err
}

// ICClockMax is ErrNotSupported: the driver reports one clock (CLK_RATE)
// and the raw outputs of numbered PLLs (PLL_FREQUENCY), whose mapping to
// the interconnect is not documented.
func (d Device) ICClockMax() (uint, error) { return d.unsupported() }

// MMEClockMax is ErrNotSupported, as ICClockMax.
func (d Device) MMEClockMax() (uint, error) { return d.unsupported() }

// TPCClockMax is ErrNotSupported, as ICClockMax.
func (d Device) TPCClockMax() (uint, error) { return d.unsupported() }

// unsupported checks d, then returns ErrNotSupported.
func (d Device) unsupported() (uint, error) {
	if _, err := d.handle(); err != nil {
		return 0, err
	}
	return 0, ErrNotSupported
}

// PowerUsage returns the input power in mW (INFO POWER,
// hl_fw_cpucp_power_get).
func (d Device) PowerUsage() (uint, error) {
	dev, err := d.ctl("power")
	if err != nil {
		return 0, err
	}
	p, err := dev.Power()
	return uint(p), driverError("power", err)
}

// EnergyConsumptionCounter returns the energy the device used since the
// firmware booted, in mJ (INFO TOTAL_ENERGY).
func (d Device) EnergyConsumptionCounter() (uint64, error) {
	dev, err := d.ctl("energy")
	if err != nil {
		return 0, err
	}
	e, err := dev.TotalEnergy()
	return e, driverError("total energy", err)
}

// ClockThrottleReasons returns the throttling in force (INFO
// CLK_THROTTLE_REASON clk_throttling_reason): HL_CLK_THROTTLE_POWER (bit
// 0) and HL_CLK_THROTTLE_THERMAL (bit 1) are HLML's
// HLML_CLOCKS_THROTTLE_REASON_POWER and _THERMAL, the same bits; other
// bits pass through.
func (d Device) ClockThrottleReasons() (uint64, error) {
	dev, err := d.ctl("clock throttle")
	if err != nil {
		return 0, err
	}
	t, err := dev.ClockThrottle()
	return uint64(t.Reasons), driverError("clock throttle", err)
}

// pciCounters returns INFO PCI_COUNTERS.
func (d Device) pciCounters() (device.PCICounters, error) {
	dev, err := d.ctl("pci counters")
	if err != nil {
		return device.PCICounters{}, err
	}
	c, err := dev.PCICounters()
	return c, driverError("pci counters", err)
}

// PCIeTX returns the PCIe transmit throughput the firmware measured (INFO
// PCI_COUNTERS tx_throughput).
func (d Device) PCIeTX() (uint, error) {
	c, err := d.pciCounters()
	return uint(c.TX), err
}

// PCIeRX returns the PCIe receive throughput the firmware measured (INFO
// PCI_COUNTERS rx_throughput).
func (d Device) PCIeRX() (uint, error) {
	c, err := d.pciCounters()
	return uint(c.RX), err
}

// PCIReplayCounter returns the link's replay count (INFO PCI_COUNTERS
// replay_cnt).
func (d Device) PCIReplayCounter() (uint, error) {
	c, err := d.pciCounters()
	return uint(c.Replays), err
}

// temperature reads the hwmon channel of the device's PCI function whose
// temp<n>_label names what, and its file suffix ("input", "crit", "max"),
// in °C. The kernel's driver labels no channel (common/hwmon.c), so which
// sensor is the chip's and which the board's is unknown there:
// ErrNotSupported.
func (d Device) temperature(what []string, suffix string) (uint, error) {
	h, err := d.handle()
	if err != nil {
		return 0, err
	}
	if h.pciDir == "" {
		return 0, ErrNotSupported
	}
	labels, _ := filepath.Glob(filepath.Join(h.pciDir, "hwmon", "hwmon*", "temp*_label"))
	for _, l := range labels {
		label := strings.ToLower(readAttr(filepath.Dir(l), filepath.Base(l)))
		if !containsAny(label, what) {
			continue
		}
		ch := strings.TrimSuffix(filepath.Base(l), "_label")
		// hwmon reports millidegrees (Documentation/hwmon/sysfs-interface.rst).
		v, err := strconv.ParseInt(readAttr(filepath.Dir(l), ch+"_"+suffix), 10, 64)
		if err != nil || v < 0 {
			return 0, ErrNotSupported
		}
		return uint(v / 1000), nil
	}
	return 0, ErrNotSupported
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

var (
	boardSensor = []string{"board"}
	chipSensor  = []string{"chip", "asic", "aip", "die"}
)

// TemperatureOnBoard returns the board's temperature in °C: the hwmon
// channel of the device labelled as the board's (temp<n>_label);
// ErrNotSupported without one.
func (d Device) TemperatureOnBoard() (uint, error) { return d.temperature(boardSensor, "input") }

// TemperatureOnChip returns the chip's temperature in °C: the hwmon
// channel labelled as the chip's; ErrNotSupported without one.
func (d Device) TemperatureOnChip() (uint, error) { return d.temperature(chipSensor, "input") }

// TemperatureThresholdShutdown returns the chip channel's critical limit
// (temp<n>_crit) in °C; ErrNotSupported without one.
func (d Device) TemperatureThresholdShutdown() (uint, error) {
	return d.temperature(chipSensor, "crit")
}

// TemperatureThresholdSlowdown returns the chip channel's maximum
// (temp<n>_max) in °C; ErrNotSupported without one.
func (d Device) TemperatureThresholdSlowdown() (uint, error) { return d.temperature(chipSensor, "max") }

// TemperatureThresholdMemory is ErrNotSupported: no driver reports an HBM
// temperature limit.
func (d Device) TemperatureThresholdMemory() (uint, error) { return d.unsupported() }

// TemperatureThresholdGPU is ErrNotSupported: the driver reports no
// limit beyond the channel's crit and max.
func (d Device) TemperatureThresholdGPU() (uint, error) { return d.unsupported() }

// PowerManagementDefaultLimit is ErrNotSupported: the driver's max_power
// attribute is the limit in force, which can be changed, not the one the
// device booted with (max_power_default, which no interface reports).
func (d Device) PowerManagementDefaultLimit() (uint, error) { return d.unsupported() }

// ECCMode returns whether HBM ECC is on, as current and pending (the
// same): INFO MODULE_PARAMS hbm_ecc_enable of the out-of-tree driver.
// The kernel's driver does not serve the op: ErrNotSupported.
func (d Device) ECCMode() (uint, uint, error) {
	dev, err := d.ctl("ecc mode")
	if err != nil {
		return 0, 0, err
	}
	p, err := dev.ModuleParams()
	if err != nil {
		return 0, 0, driverError("module params", err)
	}
	if p.HBMECCEnable {
		return 1, 1, nil
	}
	return 0, 0, nil
}

// HLRevision returns the chip's PCI revision (sysfs "revision" of the
// function, else INFO HW_IP_INFO revision_id).
func (d Device) HLRevision() (int, error) {
	h, err := d.handle()
	if err != nil {
		return 0, err
	}
	if h.hasNode {
		return int(h.node.Revision), nil
	}
	dev, err := d.ctl("revision")
	if err != nil {
		return 0, err
	}
	return int(dev.HWIPInfo().Revision), nil
}

// PCBVersion is ErrNotSupported: the PCB version is in the card's EEPROM,
// whose layout no driver documents.
func (d Device) PCBVersion() (string, error) {
	_, err := d.unsupported()
	return "", err
}

// PCBAssemblyVersion is ErrNotSupported, as PCBVersion.
func (d Device) PCBAssemblyVersion() (string, error) {
	_, err := d.unsupported()
	return "", err
}

// ModuleID returns the card's location, the OAM slot on HLS servers
// (sysfs module_id, else INFO HW_IP_INFO module_id; both are the
// firmware's cpucp_info.card_location).
func (d Device) ModuleID() (uint, error) {
	h, err := d.handle()
	if err != nil {
		return 0, err
	}
	if h.hasNode && h.node.ModuleID >= 0 {
		return uint(h.node.ModuleID), nil
	}
	dev, err := d.ctl("module id")
	if err != nil {
		return 0, err
	}
	return uint(dev.HWIPInfo().ModuleID), nil
}

// BoardID is ErrNotSupported: no driver interface reports a board id.
func (d Device) BoardID() (uint, error) { return d.unsupported() }

// MacAddressInfo returns the device's NIC ports by number, "external" for
// those used for scale-out and "internal" for the others: INFO HW_IP_INFO
// nic_ports_mask and nic_ports_external_mask of the out-of-tree driver.
// The kernel's driver reserves those bytes: ErrNotSupported.
func (d Device) MacAddressInfo() (map[int]string, error) {
	dev, err := d.ctl("nic ports")
	if err != nil {
		return nil, err
	}
	info, err := dev.DriverInfo()
	if err != nil {
		return nil, driverError("driver", err)
	}
	if info.Driver != device.DriverOutOfTree {
		return nil, ErrNotSupported
	}
	hw := dev.HWIPInfo()
	ports := make(map[int]string)
	for p := range BITSPerLong {
		switch bit := uint64(1) << p; {
		case hw.NICPortsMask&bit == 0:
		case hw.NICPortsExternalMask&bit != 0:
			ports[p] = "external"
		default:
			ports[p] = "internal"
		}
	}
	return ports, nil
}

// NicLinkStatus returns 1 when NIC port port's link is up, 0 when down
// (INFO HABANA_LINK_STATE of the out-of-tree driver). It is
// ErrNotSupported on the kernel's driver, and where the driver's NIC is
// not initialized (the op's EFAULT, device.ErrNoNIC).
func (d Device) NicLinkStatus(port uint) (uint, error) {
	dev, err := d.ctl("nic link")
	if err != nil {
		return 0, err
	}
	s, err := dev.LinkState(uint32(port))
	if errors.Is(err, device.ErrNoNIC) {
		// The driver's NIC is not initialized: it gives no link state.
		return 0, ErrNotSupported
	}
	if err != nil {
		return 0, driverError("nic link", err)
	}
	if s.Up {
		return 1, nil
	}
	return 0, nil
}

// replacedRows counts the replaced HBM rows of one cause in INFO
// DRAM_REPLACED_ROWS, the firmware's struct
// cpucp_hbm_row_replaced_rows_info (include/linux/habanalabs/cpucp_if.h):
// a little-endian u16 count, 6 bytes of padding, then 8-byte rows whose
// byte 6 is the cause (enum cpucp_hbm_row_replace_cause).
func (d Device) replacedRows(cause byte) (uint, error) {
	dev, err := d.ctl("replaced rows")
	if err != nil {
		return 0, err
	}
	b, err := dev.DRAMReplacedRows()
	if err != nil {
		return 0, driverError("replaced rows", err)
	}
	return countReplacedRows(b, cause), nil
}

// countReplacedRows counts the rows of cause in a
// cpucp_hbm_row_replaced_rows_info; a count beyond the rows the buffer
// holds is cut to them.
func countReplacedRows(b []byte, cause byte) uint {
	const header, rowSize = 8, 8
	if len(b) < header {
		return 0
	}
	n := int(binary.LittleEndian.Uint16(b))
	var count uint
	for i := 0; i < n && header+(i+1)*rowSize <= len(b); i++ {
		if b[header+i*rowSize+6] == cause {
			count++
		}
	}
	return count
}

// The causes of enum cpucp_hbm_row_replace_cause.
const (
	replaceCauseDoubleECC      = 0 // REPLACE_CAUSE_DOUBLE_ECC_ERR
	replaceCauseMultiSingleECC = 1 // REPLACE_CAUSE_MULTI_SINGLE_ECC_ERR
)

// ReplacedRowDoubleBitECC returns how many HBM rows were replaced for a
// double-bit ECC error (INFO DRAM_REPLACED_ROWS).
func (d Device) ReplacedRowDoubleBitECC() (uint, error) { return d.replacedRows(replaceCauseDoubleECC) }

// ReplacedRowSingleBitECC returns how many HBM rows were replaced for
// repeated single-bit ECC errors (INFO DRAM_REPLACED_ROWS).
func (d Device) ReplacedRowSingleBitECC() (uint, error) {
	return d.replacedRows(replaceCauseMultiSingleECC)
}

// IsReplacedRowsPendingStatus returns 1 when HBM rows wait for a
// replacement at the next power cycle, else 0 (INFO DRAM_PENDING_ROWS).
func (d Device) IsReplacedRowsPendingStatus() (int, error) {
	dev, err := d.ctl("pending rows")
	if err != nil {
		return 0, err
	}
	n, err := dev.DRAMPendingRows()
	if err != nil {
		return 0, driverError("pending rows", err)
	}
	if n > 0 {
		return 1, nil
	}
	return 0, nil
}

// NumaNode returns the NUMA node of the device's PCI function (sysfs
// numa_node), or nil, nil when the kernel knows none (-1) or sysfs does
// not show it, as gohlml does.
func (d Device) NumaNode() (*uint, error) {
	h, err := d.handle()
	if err != nil {
		return nil, err
	}
	n := -1
	if h.hasNode {
		n = h.node.NUMANode
	}
	if n < 0 {
		return nil, nil
	}
	v := uint(n)
	return &v, nil
}
