// Command client uses every function of the gohlml API the way Habana's
// Kubernetes device plugin (habanalabs.go Devices, server.go Allocate,
// watchXIDs) and a metric exporter (one pass over every value) call them.
// TestSwitchedProgram builds it against github.com/HabanaAI/gohlml
// replaced by gohlml/compat and runs it on served devices.
//
// It prints one line per fact: "device ...", "metric NAME VALUE" (or
// "metric NAME unsupported"), "timeout ...", "registered", "event ...".
package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	hlml "github.com/HabanaAI/gohlml"
)

// The rest of gohlml's exported names, with their types.
var (
	_ = hlml.PCIInfo{BusID: "0000:19:00.0", DeviceID: 0x1020}
	_ = [...]string{hlml.HLDriverPath, hlml.HLModulePath}
	_ = [...]error{hlml.ErrNotIntialized, hlml.ErrInvalidArgument, hlml.ErrNotSupported, hlml.ErrAlreadyInitialized,
		hlml.ErrNotFound, hlml.ErrInsufficientSize, hlml.ErrDriverNotLoaded, hlml.ErrAipIsLost, hlml.ErrMemoryError,
		hlml.ErrNoData, hlml.ErrUnknownError}
	_ int                                = hlml.HlmlCriticalError
	_ uint64                             = hlml.HlmlCriticalError
	_ int                                = hlml.BITSPerLong
	_ func(uint) (string, string, error) = hlml.FWVersion
	_ func(hlml.EventSet)                = hlml.DeleteEventSet
)

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "client: %s: %v\n", what, err)
	os.Exit(1)
}

func main() {
	if err := hlml.InitWithLogs(); err != nil {
		fail("init", err)
	}
	if err := hlml.Initialize(); !errors.Is(err, hlml.ErrAlreadyInitialized) {
		fail("second init", err)
	}
	defer func() {
		if err := hlml.Shutdown(); err != nil {
			fail("shutdown", err)
		}
	}()
	typ, err := hlml.GetDeviceTypeName()
	if err != nil {
		fail("device type", err)
	}
	fmt.Println("type", typ)
	if v, err := hlml.SystemDriverVersion(); err == nil {
		fmt.Println("driver", v)
	}

	// The device plugin's device list.
	n, err := hlml.DeviceCount()
	if err != nil {
		fail("count", err)
	}
	var serials []string
	for i := uint(0); i < n; i++ {
		d, err := hlml.DeviceHandleByIndex(i)
		if err != nil {
			fail("handle", err)
		}
		pciID, err := d.PCIID()
		if err != nil {
			fail("pci id", err)
		}
		serial, err := d.SerialNumber()
		if err != nil {
			fail("serial", err)
		}
		uuid, err := d.UUID()
		if err != nil {
			fail("uuid", err)
		}
		bus, _ := d.PCIBusID()
		numa, err := d.NumaNode()
		if err != nil {
			fail("numa", err)
		}
		// Allocate: by serial, then the node and the module.
		bySerial, err := hlml.DeviceHandleBySerial(serial)
		if err != nil {
			fail("by serial", err)
		}
		minor, err := bySerial.MinorNumber()
		if err != nil {
			fail("minor", err)
		}
		module, err := bySerial.ModuleID()
		if err != nil {
			fail("module", err)
		}
		byUUID, err := hlml.DeviceHandleByUUID(uuid)
		if err != nil {
			fail("by uuid", err)
		}
		if m, _ := byUUID.MinorNumber(); m != minor {
			fail("by uuid", fmt.Errorf("minor %d, by serial %d", m, minor))
		}
		fmt.Printf("device %d serial=%s uuid=%s id=%x bus=%s node=/dev/accel/accel%d module=%d numa=%v\n",
			i, serial, uuid, pciID, bus, minor, module, numa != nil)
		serials = append(serials, serial)
	}

	// A metric exporter's pass.
	for i := uint(0); i < n; i++ {
		d, _ := hlml.DeviceHandleByIndex(i)
		metric := func(name string, v any, err error) {
			switch {
			case errors.Is(err, hlml.ErrNotSupported):
				fmt.Printf("metric %d %s unsupported\n", i, name)
			case err != nil:
				fail(name, err)
			default:
				fmt.Printf("metric %d %s %v\n", i, name, v)
			}
		}
		u := func(v uint, err error) (any, error) { return v, err }
		u64 := func(v uint64, err error) (any, error) { return v, err }
		s := func(v string, err error) (any, error) { return v, err }
		in := func(v int, err error) (any, error) { return v, err }
		for _, m := range []struct {
			name string
			f    func() (any, error)
		}{
			{"name", func() (any, error) { return s(d.Name()) }},
			{"pci_domain", func() (any, error) { return u(d.PCIDomain()) }},
			{"pci_bus", func() (any, error) { return u(d.PCIBus()) }},
			{"pci_link_speed", func() (any, error) { return u(d.PCILinkSpeed()) }},
			{"pci_link_width", func() (any, error) { return u(d.PCILinkWidth()) }},
			{"utilization", func() (any, error) { return u(d.UtilizationInfo()) }},
			{"soc_clock", func() (any, error) { return u(d.SOCClockInfo()) }},
			{"soc_clock_max", func() (any, error) { return u(d.SOCClockMax()) }},
			{"ic_clock_max", func() (any, error) { return u(d.ICClockMax()) }},
			{"mme_clock_max", func() (any, error) { return u(d.MMEClockMax()) }},
			{"tpc_clock_max", func() (any, error) { return u(d.TPCClockMax()) }},
			{"power_mw", func() (any, error) { return u(d.PowerUsage()) }},
			{"temperature_onboard", func() (any, error) { return u(d.TemperatureOnBoard()) }},
			{"temperature_onchip", func() (any, error) { return u(d.TemperatureOnChip()) }},
			{"temperature_threshold_shutdown", func() (any, error) { return u(d.TemperatureThresholdShutdown()) }},
			{"temperature_threshold_slowdown", func() (any, error) { return u(d.TemperatureThresholdSlowdown()) }},
			{"temperature_threshold_memory", func() (any, error) { return u(d.TemperatureThresholdMemory()) }},
			{"temperature_threshold_gpu", func() (any, error) { return u(d.TemperatureThresholdGPU()) }},
			{"power_default_limit", func() (any, error) { return u(d.PowerManagementDefaultLimit()) }},
			{"ecc_mode", func() (any, error) { c, _, err := d.ECCMode(); return c, err }},
			{"hl_revision", func() (any, error) { return in(d.HLRevision()) }},
			{"pcb_version", func() (any, error) { return s(d.PCBVersion()) }},
			{"pcb_assembly_version", func() (any, error) { return s(d.PCBAssemblyVersion()) }},
			{"board_id", func() (any, error) { return u(d.BoardID()) }},
			{"pcie_tx", func() (any, error) { return u(d.PCIeTX()) }},
			{"pcie_rx", func() (any, error) { return u(d.PCIeRX()) }},
			{"pcie_replay", func() (any, error) { return u(d.PCIReplayCounter()) }},
			{"pcie_link_generation", func() (any, error) { return u(d.PCIeLinkGeneration()) }},
			{"pcie_link_width", func() (any, error) { return u(d.PCIeLinkWidth()) }},
			{"clock_throttle_reasons", func() (any, error) { return u64(d.ClockThrottleReasons()) }},
			{"energy_mj", func() (any, error) { return u64(d.EnergyConsumptionCounter()) }},
			{"nic_ports", func() (any, error) { p, err := d.MacAddressInfo(); return len(p), err }},
			{"nic_link_0", func() (any, error) { return u(d.NicLinkStatus(0)) }},
			{"replaced_rows_double", func() (any, error) { return u(d.ReplacedRowDoubleBitECC()) }},
			{"replaced_rows_single", func() (any, error) { return u(d.ReplacedRowSingleBitECC()) }},
			{"replaced_rows_pending", func() (any, error) { return in(d.IsReplacedRowsPendingStatus()) }},
			{"memory_total", func() (any, error) { t, _, _, err := d.MemoryInfo(); return t, err }},
			{"memory_used", func() (any, error) { _, u, _, err := d.MemoryInfo(); return u, err }},
		} {
			v, err := m.f()
			metric(m.name, v, err)
		}
		if _, _, err := hlml.FWVersion(i); err != nil {
			fmt.Printf("metric %d fw_version unsupported\n", i)
		}
	}

	// watchXIDs: register every device's serial, then wait.
	es := hlml.NewEventSet()
	defer hlml.DeleteEventSet(es)
	for _, s := range serials {
		if err := hlml.RegisterEventForDevice(es, hlml.HlmlCriticalError, s); err != nil {
			fail("register", err)
		}
	}
	start := time.Now()
	e, err := hlml.WaitForEvent(es, 300)
	if err != nil || e.Etype != 0 {
		fail("quiet wait", fmt.Errorf("event %+v, %v", e, err))
	}
	fmt.Printf("timeout elapsed_ms=%d\n", time.Since(start).Milliseconds())
	fmt.Println("registered")
	for {
		e, err := hlml.WaitForEvent(es, 1000)
		if err != nil {
			fail("wait", err)
		}
		if e.Etype != hlml.HlmlCriticalError {
			continue
		}
		dev, err := hlml.DeviceHandleBySerial(e.Serial)
		if err != nil {
			fail("event device", err)
		}
		uuid, err := dev.UUID()
		if err != nil {
			fail("event uuid", err)
		}
		fmt.Printf("event serial=%s uuid=%s\n", e.Serial, uuid)
		return
	}
}
