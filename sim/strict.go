package sim

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Strict mode: what real hardware would punish, the simulator reports.
//
// On a Gaudi some misuse goes unnoticed until data is wrong somewhere
// else: an address handed to the driver that pointed into a goroutine
// stack the runtime has since moved, DMA into host pages the caller
// unmapped (the device writes the pinned, orphaned pages), a buffer freed
// while a queued CS still uses it, a command buffer rewritten before the
// engine fetched it. The simulator in strict mode detects each of those
// and records it as a Violation on the Device; where the chip reports the
// fault too (an MMU page fault) it is also recorded as the driver records
// it. An argument that names goroutine stack memory also fails the call.
//
// Strict mode is on by default in test binaries, so the project's tests
// fail on what hardware would punish: see StrictMode for the default,
// Device.Violations, Device.ExpectViolations and System.CheckStrict for
// how tests read and assert on violations, and strict_*.go for each
// detector and its limits.

// StrictMode says whether a System runs in strict mode.
type StrictMode int

const (
	// StrictAuto, the zero value, takes GAUDI_SIM_STRICT when it is set
	// ("1" or "0"), and otherwise turns strict mode on in test binaries
	// (testing.Testing) and off in programs.
	StrictAuto StrictMode = iota
	// StrictOn turns strict mode on whatever the environment says.
	StrictOn
	// StrictOff turns it off.
	StrictOff
)

// strictEnv is the variable that overrides StrictAuto.
const strictEnv = "GAUDI_SIM_STRICT"

// resolve turns the mode into on or off.
func (m StrictMode) resolve() (bool, error) {
	switch m {
	case StrictOn:
		return true, nil
	case StrictOff:
		return false, nil
	case StrictAuto:
	default:
		return false, fmt.Errorf("strict mode %d: %w", int(m), errBadStrict)
	}
	switch v := os.Getenv(strictEnv); strings.ToLower(v) {
	case "":
		return testing.Testing(), nil
	case "1", "on", "true":
		return true, nil
	case "0", "off", "false":
		return false, nil
	default:
		return false, fmt.Errorf("%s=%q: want 1 or 0: %w", strictEnv, v, errBadStrict)
	}
}

var errBadStrict = errors.New("bad strict mode")

// ViolationKind is a class of misuse strict mode detects.
type ViolationKind int

const (
	// ViolationStackAddress: an address in an ioctl argument points into
	// the calling goroutine's stack, which the runtime may move at any
	// function call (the simulator's own calls included); the call fails.
	ViolationStackAddress ViolationKind = iota + 1
	// ViolationArgumentChanged: memory an ioctl argument names no longer
	// held the bytes it held when the call began, at its end or after the
	// simulator moved the calling goroutine's stack.
	ViolationArgumentChanged
	// ViolationHostReplaced: a CS reached host memory that was unmapped,
	// remapped or replaced since MAP pinned it; on hardware the device
	// goes on using the pinned pages and the data goes elsewhere.
	ViolationHostReplaced
	// ViolationFreedInFlight: a CS reached device or host memory that was
	// unmapped (and possibly mapped again for something else) after the
	// CS was submitted, while it was queued or running.
	ViolationFreedInFlight
	// ViolationPageFault: a CS reached an address no mapping covers, for
	// another reason than the above (the device records an MMU page fault
	// and stops the queue).
	ViolationPageFault
	// ViolationCBChanged: a user command buffer changed between the
	// submission of its CS and its execution or completion; the engine
	// fetches it while the CS runs.
	ViolationCBChanged
	// ViolationBarrierHazard: a LIN_DMA depends on an earlier packet of
	// its command buffer without the engine barrier bit (barrier.go).
	ViolationBarrierHazard
)

var violationNames = [...]string{
	ViolationStackAddress:    "argument names goroutine stack memory",
	ViolationArgumentChanged: "argument memory changed",
	ViolationHostReplaced:    "host memory replaced since MAP",
	ViolationFreedInFlight:   "memory unmapped under a CS in flight",
	ViolationPageFault:       "device page fault",
	ViolationCBChanged:       "command buffer changed in flight",
	ViolationBarrierHazard:   "engine barrier hazard",
}

// String names the kind.
func (k ViolationKind) String() string {
	if k > 0 && int(k) < len(violationNames) {
		return violationNames[k]
	}
	return fmt.Sprintf("violation kind %d", int(k))
}

// Violation is one misuse strict mode detected.
type Violation struct {
	Kind ViolationKind
	// Op is the ioctl for the argument checks ("CS", "WAIT_CS", ...),
	// "DMA" for what a CS's engines found.
	Op string
	// Seq is the CS's sequence number for DMA violations, 0 otherwise.
	Seq uint64
	// Addr is the address involved: the argument's user address, or the
	// device address the engine reached.
	Addr uint64
	// Detail says what happened, for people.
	Detail string
	// Expected is set when the kind was expected (Device.ExpectViolations)
	// when the violation was recorded.
	Expected bool

	ctx uint64 // the compute context (Device.openCounter) it happened in
}

// String describes the violation.
func (v Violation) String() string {
	if v.Kind == 0 {
		return v.Detail
	}
	s := v.Kind.String() + ": "
	if v.Op != "" {
		s += v.Op + ": "
	}
	return s + v.Detail
}

// ErrViolation is matched (errors.Is) by a *ViolationError.
var ErrViolation = errors.New("simulator strict mode violation")

// ViolationError reports strict mode violations: a call that failed
// because of one, or the violations a check found.
type ViolationError struct {
	Violations []Violation
}

// Error lists the violations.
func (e *ViolationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "simulator strict mode: %d violation", len(e.Violations))
	if len(e.Violations) != 1 {
		b.WriteString("s")
	}
	for i, v := range e.Violations {
		if i == 8 {
			fmt.Fprintf(&b, "; and %d more", len(e.Violations)-i)
			break
		}
		b.WriteString("; ")
		b.WriteString(v.String())
	}
	return b.String()
}

// Is matches ErrViolation.
func (e *ViolationError) Is(target error) bool { return target == ErrViolation }

// maxViolations bounds what a device keeps; later ones are counted only.
const maxViolations = 1024

// strictState is a device's strict mode: whether it is on, and the
// violations recorded.
type strictState struct {
	on bool

	// clock orders CS submissions, mappings and unmappings of the
	// device's contexts for the in-flight checks (strict_dma.go).
	clock atomic.Uint64

	proc procFiles // for the host memory identity checks (strict_host_unsafe.go)

	mu         sync.Mutex
	violations []Violation
	dropped    int    // violations beyond maxViolations
	expected   uint32 // bit k: kind k is expected
}

// Strict reports whether the device runs in strict mode.
func (d *Device) Strict() bool { return d.strict.on }

// violate records a violation of compute context ctx (File.serial; 0 for
// the current one). It is a no-op when strict mode is off.
func (d *Device) violate(ctx uint64, v Violation) {
	s := &d.strict
	if !s.on {
		return
	}
	if ctx == 0 {
		d.mu.Lock()
		ctx = d.openCounter
		d.mu.Unlock()
	}
	v.ctx = ctx
	s.mu.Lock()
	defer s.mu.Unlock()
	v.Expected = s.expected&(1<<v.Kind) != 0
	if len(s.violations) >= maxViolations {
		s.dropped++
		return
	}
	s.violations = append(s.violations, v)
}

// Violations returns the violations recorded since the device was created
// or last taken (TakeViolations), oldest first, expected ones included.
func (d *Device) Violations() []Violation {
	s := &d.strict
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Violation(nil), s.violations...)
}

// TakeViolations returns the violations recorded so far and forgets them,
// for a test that caused them on purpose and asserts on them.
func (d *Device) TakeViolations() []Violation {
	s := &d.strict
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.violations
	s.violations, s.dropped = nil, 0
	return v
}

// ExpectViolations marks kinds as expected from now on, for a test that
// causes them on purpose without asserting on each: violations of those
// kinds are still recorded, with Expected set, but CheckStrict and Close
// do not report them.
func (d *Device) ExpectViolations(kinds ...ViolationKind) {
	s := &d.strict
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range kinds {
		s.expected |= 1 << k
	}
}

// CheckStrict returns a *ViolationError listing the violations recorded
// and not expected, or nil when there are none (or strict mode is off).
func (d *Device) CheckStrict() error { return d.checkStrict(0) }

// checkStrict is CheckStrict for the violations of compute context ctx,
// or of every context when ctx is 0.
func (d *Device) checkStrict(ctx uint64) error {
	s := &d.strict
	s.mu.Lock()
	defer s.mu.Unlock()
	var bad []Violation
	for _, v := range s.violations {
		if !v.Expected && (ctx == 0 || v.ctx == ctx) {
			bad = append(bad, v)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	if s.dropped > 0 {
		bad = append(bad, Violation{Detail: fmt.Sprintf("%d more not kept", s.dropped)})
	}
	return &ViolationError{Violations: bad}
}

// CheckStrict returns the unexpected violations of every device (see
// Device.CheckStrict), or nil.
func (s *System) CheckStrict() error {
	var errs []error
	for _, d := range s.devices {
		if err := d.CheckStrict(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d.Name(), err))
		}
	}
	return errors.Join(errs...)
}
