package sim

import (
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// errorInfo is the driver's captured error information (struct
// hl_error_info): the first error of each kind, which the *_EVENT INFO ops
// return. The driver clears it on every successful compute open
// (hl_enable_err_info_capture) and never on reset; CS timeouts and undefined
// opcodes are captured only after that first open has enabled them.
type errorInfo struct {
	razwi          hl.InfoRazwiEvent
	razwiAvailable bool

	pageFault          hl.PageFaultInfo
	pageFaultAvailable bool
	userMappings       []hl.UserMapping

	hwErr          hl.InfoHWErrEvent
	hwErrAvailable bool

	fwErr          hl.InfoFWErrEvent
	fwErrAvailable bool

	engineErr          hl.InfoEngineErrEvent
	engineErrAvailable bool

	csTimeoutEnabled bool
	csTimeout        hl.InfoCSTimeoutEvent

	undefOpcodeEnabled bool
	undefOpcode        hl.InfoUndefinedOpcodeEvent
}

// enableCapture forgets every captured error and arms the CS timeout and
// undefined opcode captures, as a compute open does.
func (e *errorInfo) enableCapture() {
	*e = errorInfo{csTimeoutEnabled: true, undefOpcodeEnabled: true}
}

// csCounters are the dropped-submission counters of CS_COUNTERS, in the
// order of struct hl_info_cs_counters: out of memory, parsing, queue full,
// device in reset, max CS in flight, validation.
type csCounters [6]uint64

// clkThrottle is the driver's clock throttling state (struct
// hl_clk_throttle), which firmware events update.
type clkThrottle struct {
	current, aggregated uint32
	start, end          [2]int64 // CLOCK_MONOTONIC ns per HL_CLK_THROTTLE_TYPE_*; end 0 while throttling
}

// monotonicNow returns CLOCK_MONOTONIC in nanoseconds: the kernel's
// ktime_get(), which stamps captured errors and opens.
func monotonicNow() int64 { return nanotime() }

func clockNs(clock int32) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err != nil {
		panic("clock_gettime: " + err.Error())
	}
	return ts.Nano()
}

// setThrottle starts or ends clock throttling of type typ
// (HL_CLK_THROTTLE_TYPE_POWER or _THERMAL), as hl_handle_clk_change_event
// does for the firmware's power and thermal events.
func (d *Device) setThrottle(typ int, start bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := &d.throttle
	bit := uint32(1) << typ
	if start {
		t.current |= bit
		t.aggregated |= bit
		t.start[typ] = monotonicNow()
		t.end[typ] = 0
		return
	}
	t.current &^= bit
	t.end[typ] = monotonicNow()
}

// countEvent counts event queue entry id in the HW_EVENTS counters, as the
// ASIC's event handler does for every entry. d.mu must be held.
func (d *Device) countEvent(id uint16) {
	if int(id) < len(d.hwEvents) {
		d.hwEvents[id]++
		d.hwEventsAgg[id]++
	}
}

// The Record methods capture an error the way the driver's handlers do:
// only the first error of a kind is kept, until the next compute open (a
// reset does not clear it); each raises its notifier bit
// (hl.HL_NOTIFIER_EVENT_*) on the open compute files and signals their
// eventfds. They do not reset the device; call Reset when the error is
// fatal, as the driver would.

// RecordRazwi records an illegal access (RAZWI) to addr by one of engines
// (at most hl.HL_RAZWI_MAX_NUM_OF_ENGINES_PER_RTR; with more, the driver
// refuses to capture it) with flags hl.HL_RAZWI_*, and raises
// HL_NOTIFIER_EVENT_RAZWI (hl_handle_razwi).
func (d *Device) RecordRazwi(addr uint64, engines []uint16, flags uint8) {
	d.mu.Lock()
	e := &d.errs
	if len(engines) <= hl.HL_RAZWI_MAX_NUM_OF_ENGINES_PER_RTR && !e.razwiAvailable {
		e.razwi = hl.InfoRazwiEvent{
			Timestamp:            monotonicNow(),
			Addr:                 addr,
			NumOfPossibleEngines: uint16(len(engines)),
			Flags:                flags,
		}
		copy(e.razwi.EngineID[:], engines)
		e.razwiAvailable = true
	}
	d.mu.Unlock()
	d.Notify(hl.HL_NOTIFIER_EVENT_RAZWI)
}

// RecordPageFault records a device MMU page fault at addr with the user
// mappings the compute context had (USER_MAPPINGS returns them), and raises
// HL_NOTIFIER_EVENT_PAGE_FAULT (hl_handle_page_fault). The engine id is 0,
// as both ASICs' handlers report it. Without a compute context the driver
// captures no mappings, and neither does the simulator.
func (d *Device) RecordPageFault(addr uint64, mappings ...hl.UserMapping) {
	d.mu.Lock()
	e := &d.errs
	if !e.pageFaultAvailable {
		e.pageFault = hl.PageFaultInfo{Timestamp: monotonicNow(), Addr: addr}
		e.userMappings = nil
		if d.compute != nil {
			e.userMappings = append([]hl.UserMapping(nil), mappings...)
		}
		e.pageFaultAvailable = true
	}
	d.mu.Unlock()
	d.Notify(hl.HL_NOTIFIER_EVENT_PAGE_FAULT)
}

// RecordHWError records a critical hardware error reported by event queue
// entry eventID (the ASIC's event id), counts the entry in HW_EVENTS and
// HW_EVENTS_AGGREGATE, and raises HL_NOTIFIER_EVENT_CRITICL_HW_ERR
// (hl_handle_critical_hw_err).
func (d *Device) RecordHWError(eventID uint16) {
	d.mu.Lock()
	d.countEvent(eventID)
	e := &d.errs
	if !e.hwErrAvailable {
		e.hwErr = hl.InfoHWErrEvent{Timestamp: monotonicNow(), EventID: eventID}
		e.hwErrAvailable = true
	}
	d.mu.Unlock()
	d.Notify(hl.HL_NOTIFIER_EVENT_CRITICL_HW_ERR)
}

// RecordFWError records a firmware error: a missed heartbeat
// (hl.HL_INFO_FW_HEARTBEAT_ERR; eventID is ignored) or one the firmware
// reported through event queue entry eventID (hl.HL_INFO_FW_REPORTED_ERR,
// also counted in HW_EVENTS), and raises HL_NOTIFIER_EVENT_CRITICL_FW_ERR
// (hl_handle_fw_err).
func (d *Device) RecordFWError(errType hl.InfoFWErrType, eventID uint16) {
	d.mu.Lock()
	reported := errType == hl.HL_INFO_FW_REPORTED_ERR
	if reported {
		d.countEvent(eventID)
	}
	e := &d.errs
	if !e.fwErrAvailable {
		e.fwErr = hl.InfoFWErrEvent{Timestamp: monotonicNow(), ErrType: uint16(errType)}
		if reported {
			e.fwErr.EventID = eventID
		}
		e.fwErrAvailable = true
	}
	d.mu.Unlock()
	d.Notify(hl.HL_NOTIFIER_EVENT_CRITICL_FW_ERR)
}

// RecordEngineError records errorCount errors of user engine engineID (the
// ASIC's engine id, hl.Gaudi2EngineID or hl.GaudiEngineID) and raises
// HL_NOTIFIER_EVENT_USER_ENGINE_ERR (hl_capture_engine_err).
func (d *Device) RecordEngineError(engineID, errorCount uint16) {
	d.mu.Lock()
	e := &d.errs
	if !e.engineErrAvailable {
		e.engineErr = hl.InfoEngineErrEvent{Timestamp: monotonicNow(), EngineID: engineID, ErrorCount: errorCount}
		e.engineErrAvailable = true
	}
	d.mu.Unlock()
	d.Notify(hl.HL_NOTIFIER_EVENT_USER_ENGINE_ERR)
}

// RecordUndefinedOpcode records an undefined opcode met by the lower
// command processor of engine engineID's queue manager, whose command queue
// was at cqAddr with cqSize bytes left, and raises
// HL_NOTIFIER_EVENT_UNDEFINED_OPCODE. As on Gaudi2
// (handle_lower_qman_data_on_err), the stream id is 4 (the lower CP) and no
// command buffer addresses are captured.
func (d *Device) RecordUndefinedOpcode(engineID uint32, cqAddr uint64, cqSize uint32) {
	d.mu.Lock()
	e := &d.errs
	if e.undefOpcodeEnabled {
		e.undefOpcode = hl.InfoUndefinedOpcodeEvent{
			Timestamp: monotonicNow(),
			CQAddr:    cqAddr,
			CQSize:    cqSize,
			EngineID:  engineID,
			StreamID:  4, // QMAN_STREAMS
		}
		e.undefOpcodeEnabled = false
	}
	d.mu.Unlock()
	d.Notify(hl.HL_NOTIFIER_EVENT_UNDEFINED_OPCODE)
}

// RecordCSTimeout records that command submission seq timed out. As in the
// driver's timeout handler, only the first timeout since the compute open
// is captured, and only that one raises HL_NOTIFIER_EVENT_CS_TIMEOUT.
func (d *Device) RecordCSTimeout(seq uint64) {
	if d.captureCSTimeout(seq) {
		d.Notify(hl.HL_NOTIFIER_EVENT_CS_TIMEOUT)
	}
}

// captureCSTimeout captures a CS timeout unless one is captured already,
// and reports whether it did.
func (d *Device) captureCSTimeout(seq uint64) bool {
	d.mu.Lock()
	e := &d.errs
	captured := e.csTimeoutEnabled
	if captured {
		e.csTimeout = hl.InfoCSTimeoutEvent{Timestamp: monotonicNow(), Seq: seq}
		e.csTimeoutEnabled = false
	}
	d.mu.Unlock()
	return captured
}
