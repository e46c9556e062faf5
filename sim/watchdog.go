package sim

import (
	"time"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// What a CS timeout leads to (cs_timedout -> hl_device_cond_reset).
//
// Without a registered eventfd the driver hard-resets the device at once
// (hl_device_reset with HL_DRV_RESET_HARD), and a hard reset kills every
// process that holds the compute node (device_kill_open_processes sends
// SIGKILL) after rolling its CSs back. With an eventfd registered it
// postpones the reset: it notifies DEVICE_RESET, force-completes every CS
// in flight with EIO and ends the pending user interrupt waits
// (hl_abort_waiting_for_completions), and arms the device release
// watchdog (HL_DEVICE_RELEASE_WATCHDOG_TIMEOUT_SEC, 30 s). While the
// watchdog runs, WAIT_CS answers EBUSY (hl_wait_ioctl checks
// watchdog_active). If the user closes the compute file in time, the
// release cancels the watchdog and resets the device (Gaudi2: the compute
// reset of every release; Gaudi, which has no compute reset, a hard one);
// else the watchdog hard-resets the device, killing the process.
//
// The simulator runs inside the process the driver would kill. It models
// the kill as the compute file becoming dead: every later ioctl and mmap
// on it (and on its duplicates) answers ErrKilled, a wait in progress that
// the reset does not end answers it too, Munmap and Close still
// work, and the file keeps the device's compute slot (Open answers EBUSY)
// until it is closed; then the device can be opened again. On the driver
// the other files of the killed process (its control files, its other
// devices) would die with it; the simulator leaves them alone.
// Device.Reset, the test hook for a fatal error, does not kill.

// ErrKilled is what every call on a compute file answers after a hard
// reset that, on the driver, would have killed the process holding it
// (see File.Killed). The driver never returns it: the process is gone.
const ErrKilled = unix.EOWNERDEAD

// Killed reports whether a hard reset killed the file: on the driver the
// process holding it would have received SIGKILL. Every later call on the
// file answers ErrKilled; close it and open the device again.
func (f *File) Killed() bool { return f.killed.Load() }

// kill marks the file dead, as the SIGKILL of device_kill_open_processes
// ends its process. The signal also ends the process's waits in progress
// (wait_for_completion_interruptible_timeout returns -ERESTARTSYS): the
// reset that follows completes every CS in flight and ends the interrupt
// waits, which leaves the multi-CS waits that no completion ends (an
// empty list, or CSs not in flight); they are woken here and answer
// ErrKilled (wait.go).
func (f *File) kill() {
	f.killed.Store(true)
	if c := f.cs.p.Load(); c != nil {
		c.signalCompletion()
	}
}

// watchdog is the device release watchdog (device_release_watchdog_work
// and reset_info.watchdog_active). Its fields are guarded by Device.mu.
type watchdog struct {
	active bool
	timer  *time.Timer
	gen    uint64 // arms so far, to tell a stale firing
}

// WatchdogActive reports whether the device release watchdog runs: a CS
// timed out while an eventfd was registered, and the device waits for the
// compute file to be closed before it hard-resets.
func (d *Device) WatchdogActive() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.wd.active
}

// stopWatchdogLocked cancels the watchdog and reports whether it ran.
// d.mu must be held.
func (d *Device) stopWatchdogLocked() bool {
	if !d.wd.active {
		return false
	}
	d.wd.active = false
	if d.wd.timer != nil {
		d.wd.timer.Stop()
		d.wd.timer = nil
	}
	return true
}

// condReset is hl_device_cond_reset for a CS timeout (HL_DRV_RESET_TDR,
// with DEVICE_RESET in the event mask).
func (d *Device) condReset(bits uint64) {
	d.mu.Lock()
	f := d.compute
	d.mu.Unlock()
	registered := false
	if f != nil {
		f.mu.Lock()
		registered = f.eventfd >= 0
		f.mu.Unlock()
	}
	d.mu.Lock()
	postpone := f != nil && (registered || d.wd.active) && d.state.operational()
	if postpone && !d.wd.active {
		wait := d.cfg.ReleaseWatchdog
		if wait <= 0 {
			wait = releaseWatchdog
		}
		d.wd.active = true
		d.wd.gen++
		gen := d.wd.gen
		d.wd.timer = time.AfterFunc(wait, func() { d.watchdogFired(gen) })
	}
	d.mu.Unlock()
	if !postpone {
		d.killingReset(bits)
		return
	}
	d.Notify(hl.HL_NOTIFIER_EVENT_DEVICE_RESET | bits)
	d.hardware().abortWaiting()
}

// watchdogFired is device_release_watchdog_func: the compute file was not
// closed in time, so the device hard-resets, killing its holder.
func (d *Device) watchdogFired(gen uint64) {
	d.mu.Lock()
	if !d.wd.active || d.wd.gen != gen {
		d.mu.Unlock()
		return // cancelled by a release or a reset meanwhile
	}
	d.wd.active, d.wd.timer = false, nil
	d.mu.Unlock()
	d.killingReset(0)
}

// killingReset is hl_device_reset with HL_DRV_RESET_HARD: the process
// holding the compute node is killed (its file becomes dead) and the
// device resets.
func (d *Device) killingReset(bits uint64) {
	d.mu.Lock()
	f := d.compute
	d.mu.Unlock()
	if f != nil {
		f.kill()
	}
	d.reset(bits)
}

// abortWaiting is hl_abort_waiting_for_completions: every CS in flight
// has its fence completed with EIO (force_complete_cs) while it stays in
// flight, multi-CS waits wake (force_complete_multi_cs), and pending user
// interrupt waits end (hl_release_pending_user_interrupts).
func (hw *hwState) abortWaiting() {
	// Under hw.mu no CS of the mirror list can reach its own completion
	// (release takes it off the list first), so each fence is still the
	// CS's; marked forced, allocate gives the slot a new fence instead of
	// reusing this one, and the CS completes this one again when it ends,
	// as cs_do_release does.
	hw.mu.Lock()
	ctxs := map[*csCtx]bool{}
	for _, s := range hw.mirror {
		if fc := s.fence; fc != nil && !fc.completed() {
			fc.forced.Store(true)
			fc.complete(unix.EIO, 0)
		}
		ctxs[s.c] = true
	}
	hw.mu.Unlock()
	for c := range ctxs {
		c.signalCompletion()
	}
	if hw.sm != nil {
		hw.sm.abortIRQ()
	}
}
