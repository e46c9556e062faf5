package sim

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Device is one simulated Gaudi. Open gives a compute file (one at a time,
// across processes that share the lock directory), OpenControl a control
// file. Tests drive its state with SetState, Reset and InjectFault. A Device
// is safe for concurrent use.
type Device struct {
	index       int
	cfg         DeviceConfig
	prof        profile
	legacy      bool
	driver      Driver
	noP2P       bool   // out-of-tree driver built without _HAS_PEER2PEER
	servedLimit uint64 // Config.ServedMemoryLimit
	lockPath    string
	dram        *sparseMem
	vm          *devVM
	dramUsed    atomic.Int64  // dram_used_mem: bytes allocated (Gaudi: as users report them)
	hazards     atomic.Uint64 // LIN_DMA packets that raced for want of an engine barrier (barrier.go)

	mu             sync.Mutex
	state          State
	hardResets     uint32
	computeResets  uint32 // compute_reset_cnt: compute resets other than a release's
	releaseResets  uint32 // engine resets of Gaudi2's context release (not counted by the driver)
	openCounter    uint64
	lastOpen       time.Time
	lastOpenPeriod time.Duration
	compute        *File
	files          map[*File]struct{}
	faults         []*Fault
	badPackets     atomic.Int32 // armed BadPacket faults among faults (fault.go)
	hwEvents       []uint32     // counters since the last hard reset
	hwEventsAgg    []uint32     // counters across resets
	created        time.Time
	lastOpenMono   int64      // CLOCK_MONOTONIC ns of the last compute open, 0 before the first
	errs           errorInfo  // the first error of each kind since the last compute open
	csDrops        csCounters // dropped command submissions, all contexts
	throttle       clkThrottle
	wd             watchdog   // the device release watchdog (watchdog.go)
	hostFaults     HostFaults // DMA that found host memory unmapped (hostfault.go)
	hw             hwHolder   // command submission hardware (engine.go)

	// The out-of-tree driver's soft reset stall (oot.go): until when soft
	// resets wait (CLOCK_MONOTONIC ns, 0 for none), how many DEVICE_STATUS
	// calls asked for one, how many resets waited; and the last memory
	// consumption report.
	stallUntil    int64
	stallRequests uint64
	stalledResets uint64
	memReport     MemoryConsumption
	strict        strictState // strict mode and its violations (strict.go)

	debug   debugState  // DEBUG ioctl: debug mode and CoreSight (debug.go)
	engines engineModes // engine cores halted and engines stalled (cs_control.go)
}

func newDevice(i int, dc DeviceConfig, cfg Config, strict bool) (*Device, error) {
	prof, err := newProfile(dc.ASIC, dc.DRAMSize)
	if err != nil {
		return nil, err
	}
	dc.DRAMSize = prof.dramSize
	if dc.PCIAddress == "" {
		dc.PCIAddress = fmt.Sprintf("0000:%02x:00.0", 0x10+i)
	}
	if dc.ASIC == Gaudi2 && dc.Revision == 0 {
		dc.Revision = 1
	}
	d := &Device{
		index:       i,
		cfg:         dc,
		prof:        prof,
		legacy:      cfg.Legacy,
		driver:      cfg.Driver,
		noP2P:       cfg.NoPeerToPeer,
		servedLimit: cfg.ServedMemoryLimit,
		lockPath:    lockPath(cfg.LockDir, dc.PCIAddress),
		dram:        newSparseMem(dc.DRAMSize),
		vm:          newDevVM(&prof),
		files:       map[*File]struct{}{},
		hwEvents:    make([]uint32, prof.numEvents),
		hwEventsAgg: make([]uint32, prof.numEvents),
		created:     time.Now(),
	}
	d.strict.on = strict
	d.strict.proc = newProcFiles()
	return d, nil
}

// Index returns the device's position in its System.
func (d *Device) Index() int { return d.index }

// LockPath returns the lock file whose exclusive flock marks the device's
// compute owner: the process that holds the compute context keeps it open
// while the context lives, so a scan of /proc/*/fd for this path finds the
// owner from any process that shares the lock directory (Config.LockDir).
func (d *Device) LockPath() string { return d.lockPath }

// Config returns the device's configuration with defaults filled in.
func (d *Device) Config() DeviceConfig { return d.cfg }

// Name returns the device's node name, as /dev/accel would show it.
func (d *Device) Name() string { return fmt.Sprintf("sim:accel%d", d.index) }

// State returns the device's current state.
func (d *Device) State() State {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.state
}

// SetState puts the device in state s, for tests: while it is not
// operational, compute opens and most ioctls fail as on the driver.
func (d *Device) SetState(s State) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.state = s
}

// ResidentDRAM returns how many bytes of host memory the device's DRAM
// uses: only pages that were written take memory.
func (d *Device) ResidentDRAM() uint64 { return d.dram.Resident() }

// Open opens the device's compute node. Only one compute file may be open
// per device at a time, across goroutines and processes: a second open gets
// EBUSY. A device in reset gives EAGAIN; one that is disabled or needs a
// reset gives EPERM. Errors are unix.Errno values, as from open(2).
func (d *Device) Open() (*File, error) {
	d.reap()
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.takeFault("OPEN", -1); err != nil {
		return nil, err
	}
	switch {
	case d.state == InReset || d.state == InResetAfterDeviceRelease:
		return nil, unix.EAGAIN
	case !d.state.operational():
		return nil, unix.EPERM
	case d.compute != nil:
		return nil, unix.EBUSY
	}
	lock, err := acquireCtxLock(d.lockPath)
	if err != nil {
		return nil, err
	}
	f := newFile(d, false)
	f.lock = lock
	f.ctx = newContext(d)
	f.ctx.file = f
	f.mm = newMemMgr()
	d.compute = f
	d.files[f] = struct{}{}
	d.openCounter++
	f.serial = d.openCounter
	d.lastOpen = time.Now()
	d.lastOpenMono = monotonicNow()
	d.errs.enableCapture()
	return f, nil
}

// OpenControl opens the device's control node, which serves INFO only and
// may be opened any number of times. It fails with EPERM only when the
// device is disabled.
func (d *Device) OpenControl() (*File, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.takeFault("OPEN_CONTROL", -1); err != nil {
		return nil, err
	}
	if d.state == Malfunction {
		return nil, unix.EPERM
	}
	f := newFile(d, true)
	d.files[f] = struct{}{}
	return f, nil
}

// release is called when the last handle of file f closes. A compute
// file whose dma-buf exports are still open lingers: the driver's exports
// hold the file, so the context, its memory and the compute lock stay
// until they are closed (see reap).
func (d *Device) release(f *File) {
	d.mu.Lock()
	delete(d.files, f)
	compute := d.compute == f
	d.mu.Unlock()
	if !compute {
		if f.rem != nil {
			f.rem.close()
		}
		return
	}
	if f.rem != nil {
		// A served file's imports go with it (import_unsafe.go), so that
		// an import of its own export does not hold the device.
		f.ctx.dropImports()
	}
	if f.ctx.exported() {
		d.mu.Lock()
		f.lingering = true
		d.mu.Unlock()
		return
	}
	d.finish(f)
}

// reap ends a lingering compute context whose exports were closed since.
func (d *Device) reap() {
	d.mu.Lock()
	f := d.compute
	lingering := f != nil && f.lingering
	d.mu.Unlock()
	if lingering && !f.ctx.exported() {
		d.finish(f)
	}
}

// finish releases a compute context, as hl_device_release and the
// context's release do: the mmap buffers, the memory context (mappings,
// allocations, DRAM usage), the compute lock.
func (d *Device) finish(f *File) {
	hardReset := false
	defer func() {
		if hardReset {
			d.Reset()
		}
	}()
	f.final.Do(func() {
		if d.prof.dramVirtual && d.oot() {
			// The release's compute reset (see below) is a soft reset,
			// which a DEVICE_STATUS poll may have asked to stall.
			d.softResetStall()
		}
		d.closeSubmissions(f)
		d.pqmStopFile(f) // before the memory the channels reach goes
		f.mm.fini()
		f.ctx.fini()
		if f.rem != nil {
			f.rem.close() // nothing of the context reaches it any more
		}
		d.mu.Lock()
		if d.compute == f {
			d.compute = nil
		}
		f.lingering = false
		d.lastOpenPeriod = time.Since(d.lastOpen)
		// A release while the release watchdog runs cancels it and
		// resets the device (hpriv_release: reset_device when
		// watchdog_active; hl_device_reset cancels the watchdog work).
		// Gaudi has no compute reset (supports_compute_reset), so there
		// the release reset is a hard one.
		if d.stopWatchdogLocked() && !d.prof.dramVirtual {
			hardReset = true
		}
		if d.prof.dramVirtual {
			// Gaudi2 resets the compute engines whenever the context
			// goes away (fixup_device_params_per_asic sets
			// reset_upon_device_release; hpriv_release calls
			// hl_device_reset with HL_DRV_RESET_DEV_RELEASE). That
			// reset is not counted: hl_device_reset bumps
			// compute_reset_cnt (INFO RESET_COUNT's soft_reset_cnt) only
			// when !reset_upon_device_release. It still resets the
			// engines; the reset is instant here.
			d.releaseResets++
		}
		d.mu.Unlock()
		d.strict.proc.close()
		f.lock.release()
	})
}

// Reset performs a hard reset now, as the driver does after a fatal error:
// the device is briefly in reset, the hard reset counter grows, the
// HW_EVENTS counters restart (HW_EVENTS_AGGREGATE and the captured errors
// stay), pending work ends, and the device is operational again; then
// every open compute file gets the DEVICE_RESET notifier bit (and its
// eventfd a signal). Notifying last keeps a woken user from meeting the
// device still in reset, as with the driver's postponed reset, which
// notifies while the device is operational.
func (d *Device) Reset() { d.reset(0) }

// reset is Reset, notifying bits with DEVICE_RESET.
func (d *Device) reset(bits uint64) {
	d.mu.Lock()
	d.stopWatchdogLocked() // a hard reset cancels it (hl_device_reset)
	d.state = InReset
	clear(d.hwEvents)
	files := make([]*File, 0, len(d.files))
	for f := range d.files {
		files = append(files, f)
	}
	d.mu.Unlock()
	// Halt first: counting the reset starts a new epoch, which ends the
	// engines' stalls (cs_control.go), and a stalled queue must not start
	// a job the reset aborts.
	d.haltEngines()
	d.mu.Lock()
	d.hardResets++
	d.mu.Unlock()
	for _, f := range files {
		f.abort()
	}
	// The channels' registers and state are cleared while the engines
	// are halted: a channel block mapped beside the reset cannot start
	// its goroutine before (pqm.go startLocked).
	d.pqmReset()
	d.restartEngines()
	d.pqmResume()
	d.mu.Lock()
	d.state = Operational
	d.mu.Unlock()
	for _, f := range files {
		f.notify(hl.HL_NOTIFIER_EVENT_DEVICE_RESET | bits)
	}
}

// Notify raises notifier event bits (hl.HL_NOTIFIER_EVENT_*) on every open
// compute file, as the driver does when it records an error.
func (d *Device) Notify(bits uint64) {
	d.mu.Lock()
	files := make([]*File, 0, len(d.files))
	for f := range d.files {
		files = append(files, f)
	}
	d.mu.Unlock()
	for _, f := range files {
		f.notify(bits)
	}
}
