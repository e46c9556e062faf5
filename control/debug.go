package control

import (
	"encoding/binary"
	"fmt"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/devio"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// The DEBUG ioctl configures the CoreSight trace and profiling hardware.
// The device must be in debug mode (SetDebugMode) for any configuration;
// the driver answers EFAULT otherwise (the out-of-tree driver EPERM,
// hl_debug_op_requires_debug), and EFAULT also when debug mode is
// entered twice or left while off. Only one context can hold debug mode;
// the driver leaves it when that context ends. Component indexes are the
// ASIC's CoreSight component numbers (gaudi2_coresight.h in the driver);
// an index past the ASIC's table gives EINVAL.
//
// Each function replaces a use of hlthunk_debug with one HL_DEBUG_OP_*;
// ioctl.(*Device).Debug issues arbitrary requests.

// SetDebugMode enters (on) or leaves debug mode. It replaces hlthunk_debug
// with HL_DEBUG_OP_SET_MODE.
func SetDebugMode(d *device.Device, on bool) error {
	a := hl.DebugArgs{Op: hl.HL_DEBUG_OP_SET_MODE}
	if on {
		a.Enable = 1
	}
	if err := devio.Of(d).Debug(&a, nil, nil); err != nil {
		return fmt.Errorf("debug mode %v: %w", on, err)
	}
	return nil
}

// ETR configures the embedded trace router, which writes the trace into a
// buffer in device-visible memory.
type ETR struct {
	// BufferAddress is the trace buffer's device address: host memory
	// mapped into the device or DRAM.
	BufferAddress uint64
	// BufferSize is the buffer's size in bytes; it must not be 0.
	BufferSize uint64
	// SinkMode is the ETR's mode register value.
	SinkMode uint32
}

// EnableETR starts the trace router. Enabling it when it runs already
// does nothing.
func EnableETR(d *device.Device, cfg ETR) error {
	in := make([]byte, 24) // struct hl_debug_params_etr
	binary.LittleEndian.PutUint64(in[0:], cfg.BufferAddress)
	binary.LittleEndian.PutUint64(in[8:], cfg.BufferSize)
	binary.LittleEndian.PutUint32(in[16:], cfg.SinkMode)
	return coresight(d, hl.HL_DEBUG_OP_ETR, 0, true, in, nil)
}

// DisableETR stops the trace router and returns its write pointer: the
// device address where the next trace byte would have gone, so the trace
// ends there.
func DisableETR(d *device.Device) (writePointer uint64, err error) {
	out := make([]byte, 8)
	if err := coresight(d, hl.HL_DEBUG_OP_ETR, 0, false, nil, out); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(out), nil
}

// ConfigureETF enables (with the given sink mode) or disables the
// embedded trace FIFO with index component.
func ConfigureETF(d *device.Device, component uint32, enable bool, sinkMode uint32) error {
	var in []byte
	if enable {
		in = make([]byte, 24) // struct hl_debug_params_etf
		binary.LittleEndian.PutUint32(in[16:], sinkMode)
	}
	return coresight(d, hl.HL_DEBUG_OP_ETF, component, enable, in, nil)
}

// STM configures a system trace macrocell.
type STM struct {
	HEMask, SPMask uint64 // hardware event and stimulus port enables
	ID             uint32 // trace id
	Frequency      uint32 // timestamp frequency
}

// ConfigureSTM enables (with cfg) or disables the system trace macrocell
// with index component.
func ConfigureSTM(d *device.Device, component uint32, enable bool, cfg STM) error {
	var in []byte
	if enable {
		in = make([]byte, 24) // struct hl_debug_params_stm
		binary.LittleEndian.PutUint64(in[0:], cfg.HEMask)
		binary.LittleEndian.PutUint64(in[8:], cfg.SPMask)
		binary.LittleEndian.PutUint32(in[16:], cfg.ID)
		binary.LittleEndian.PutUint32(in[20:], cfg.Frequency)
	}
	return coresight(d, hl.HL_DEBUG_OP_STM, component, enable, in, nil)
}

// ConfigureFunnel enables or disables the trace funnel with index
// component.
func ConfigureFunnel(d *device.Device, component uint32, enable bool) error {
	return coresight(d, hl.HL_DEBUG_OP_FUNNEL, component, enable, nil, nil)
}

// BMON configures a bus monitor: two masked address windows, two address
// ranges, and the bandwidth window settings.
type BMON struct {
	StartAddr0, AddrMask0   uint64
	StartAddr1, AddrMask1   uint64
	BWWindow, WindowCapture uint32
	ID                      uint32
	Control                 uint32
	StartAddr2, EndAddr2    uint64
	StartAddr3, EndAddr3    uint64
}

// ConfigureBMON enables (with cfg) or disables the bus monitor with index
// component.
func ConfigureBMON(d *device.Device, component uint32, enable bool, cfg BMON) error {
	var in []byte
	if enable {
		in = make([]byte, 80) // struct hl_debug_params_bmon
		le := binary.LittleEndian
		le.PutUint64(in[0:], cfg.StartAddr0)
		le.PutUint64(in[8:], cfg.AddrMask0)
		le.PutUint64(in[16:], cfg.StartAddr1)
		le.PutUint64(in[24:], cfg.AddrMask1)
		le.PutUint32(in[32:], cfg.BWWindow)
		le.PutUint32(in[36:], cfg.WindowCapture)
		le.PutUint32(in[40:], cfg.ID)
		le.PutUint32(in[44:], cfg.Control)
		le.PutUint64(in[48:], cfg.StartAddr2)
		le.PutUint64(in[56:], cfg.EndAddr2)
		le.PutUint64(in[64:], cfg.StartAddr3)
		le.PutUint64(in[72:], cfg.EndAddr3)
	}
	return coresight(d, hl.HL_DEBUG_OP_BMON, component, enable, in, nil)
}

// SPMUMaxEvents is how many event counters an SPMU has (SPMU_MAX_COUNTERS
// in the driver).
const SPMUMaxEvents = 6

// SPMU configures a system performance monitor unit.
type SPMU struct {
	// EventTypes are the events to count, at most SPMUMaxEvents, and on
	// first-generation Gaudi at least three (the driver answers EINVAL
	// otherwise).
	EventTypes    []uint64
	PMTRC         uint32 // trace control register value
	TraceCtrlHost uint32
	TraceEnHost   uint32
}

// EnableSPMU starts the performance monitor with index component.
func EnableSPMU(d *device.Device, component uint32, cfg SPMU) error {
	if len(cfg.EventTypes) > hl.HL_DEBUG_MAX_AUX_VALUES {
		return fmt.Errorf("spmu: %d event types, at most %d", len(cfg.EventTypes), hl.HL_DEBUG_MAX_AUX_VALUES)
	}
	in := make([]byte, 96) // struct hl_debug_params_spmu
	le := binary.LittleEndian
	for i, e := range cfg.EventTypes {
		le.PutUint64(in[8*i:], e)
	}
	le.PutUint32(in[80:], uint32(len(cfg.EventTypes)))
	le.PutUint32(in[84:], cfg.PMTRC)
	le.PutUint32(in[88:], cfg.TraceCtrlHost)
	le.PutUint32(in[92:], cfg.TraceEnHost)
	return coresight(d, hl.HL_DEBUG_OP_SPMU, component, true, in, nil)
}

// SPMUCounters are what a performance monitor counted.
type SPMUCounters struct {
	Events   []uint64 // one count per event type, in order
	Overflow uint64   // the overflow status bits
	Cycles   uint64   // the cycle counter
}

// DisableSPMU stops the performance monitor with index component and
// reads its counters for events event types (0 to SPMUMaxEvents; at least
// 1 on first-generation Gaudi, whose driver wants room for three values).
func DisableSPMU(d *device.Device, component uint32, events int) (SPMUCounters, error) {
	if events < 0 || events > SPMUMaxEvents {
		return SPMUCounters{}, fmt.Errorf("spmu: %d events, at most %d", events, SPMUMaxEvents)
	}
	out := make([]byte, 8*(events+2))
	if err := coresight(d, hl.HL_DEBUG_OP_SPMU, component, false, nil, out); err != nil {
		return SPMUCounters{}, err
	}
	c := SPMUCounters{Events: make([]uint64, events)}
	for i := range c.Events {
		c.Events[i] = binary.LittleEndian.Uint64(out[8*i:])
	}
	c.Overflow = binary.LittleEndian.Uint64(out[8*events:])
	c.Cycles = binary.LittleEndian.Uint64(out[8*events+8:])
	return c, nil
}

// coresight issues one CoreSight configuration request.
func coresight(d *device.Device, op, component uint32, enable bool, in, out []byte) error {
	a := hl.DebugArgs{Op: op, RegIdx: component}
	if enable {
		a.Enable = 1
	}
	if err := devio.Of(d).Debug(&a, in, out); err != nil {
		return fmt.Errorf("debug %s %d: %w", hl.DebugOpNames[op], component, err)
	}
	return nil
}
