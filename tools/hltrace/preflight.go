package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Errors that say why the tracer cannot start. Each is wrapped with the
// detail and the fix.
var (
	ErrPrivilege     = errors.New("not privileged")
	ErrNoBTF         = errors.New("kernel BTF missing")
	ErrNoTracepoints = errors.New("system call tracepoints missing")
	ErrNoKprobes     = errors.New("kprobes not available on this kernel")
	ErrNoFentry      = errors.New("fentry not available")
	ErrNoFunc        = errors.New("kernel function not found")
)

// Capability bits (include/uapi/linux/capability.h).
const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

// Probe modes. The first three watch the system calls, so they see every
// traced ioctl and the openat, mmap and close around them; the last two
// watch the driver's ioctl entry functions (Options.IoctlFuncs) and report
// only ioctls, with the driver function's return value and time. Auto
// never picks those: the system call probes need nothing from the driver
// (a tracer started before the module loads still sees its calls) and give
// the context events; the function probes are for kernels whose system
// call probes are unusable, or to time the driver without the syscall
// layer.
const (
	ProbeAuto       = "auto"       // tracepoints when tracefs has them, else raw
	ProbeTracepoint = "tracepoint" // syscalls/sys_{enter,exit}_{ioctl,openat,mmap,close}
	ProbeRaw        = "raw"        // raw_tracepoint sys_enter/sys_exit: no tracefs needed
	ProbeKprobe     = "kprobe"     // kprobe/kretprobe on the ioctl functions: CONFIG_KPROBES
	ProbeFentry     = "fentry"     // fentry/fexit on the ioctl functions: BTF and BPF trampolines
)

// system names the files preflight looks at, so tests can point it
// elsewhere.
type system struct {
	status    string   // /proc/self/status, for CapEff
	btf       string   // kernel BTF
	tracefs   []string // where tracefs may be mounted, in order
	kprobePMU string   // the kprobe perf event source's type file
	kallsyms  string   // the kernel's symbol table
	mount     func(dir string) error
	euidRoot  func() bool
}

var hostSystem = system{
	status:    "/proc/self/status",
	btf:       "/sys/kernel/btf/vmlinux",
	tracefs:   []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"},
	kprobePMU: "/sys/bus/event_source/devices/kprobe/type",
	kallsyms:  "/proc/kallsyms",
	mount: func(dir string) error {
		return unix.Mount("nodev", dir, "tracefs", 0, "")
	},
	euidRoot: func() bool { return os.Geteuid() == 0 },
}

// syscallEvents are the tracepoints the tracepoint mode attaches to.
var syscallEvents = []string{
	"sys_enter_ioctl", "sys_exit_ioctl",
	"sys_enter_openat", "sys_exit_openat",
	"sys_enter_mmap", "sys_exit_mmap",
	"sys_enter_close", "sys_exit_close",
}

// preflight checks what the tracer needs before anything is loaded and
// returns the probe mode to use: privileges (CAP_BPF and CAP_PERFMON, or
// CAP_SYS_ADMIN), kernel BTF (CO-RE reads and fentry), and for the
// tracepoint mode tracefs with the per-syscall events, which it mounts
// when it can, and for the kprobe mode the kernel's kprobe support. Auto
// picks the tracepoints and falls back to the raw tracepoints; an explicit
// mode that is not available is an error. Whether fentry works is only
// known when its programs load (see explainFuncError).
func (s system) preflight(mode string) (string, error) {
	if err := s.checkPrivilege(); err != nil {
		return "", err
	}
	if _, err := os.Stat(s.btf); err != nil {
		return "", fmt.Errorf("%w: %v: hltrace needs a kernel built with CONFIG_DEBUG_INFO_BTF=y (it reads kernel structs with CO-RE)", ErrNoBTF, err)
	}
	switch mode {
	case ProbeRaw, ProbeFentry:
		return mode, nil
	case ProbeKprobe:
		return mode, s.checkKprobes()
	case ProbeTracepoint, ProbeAuto, "":
	default:
		return "", fmt.Errorf("unknown probe mode %q (want auto, tracepoint, raw, kprobe or fentry)", mode)
	}
	err := s.checkTracepoints()
	if err == nil {
		return ProbeTracepoint, nil
	}
	if mode == ProbeTracepoint {
		return "", err
	}
	return ProbeRaw, nil
}

func (s system) checkPrivilege() error {
	caps, err := effectiveCaps(s.status)
	if err != nil {
		if s.euidRoot() {
			return nil
		}
		return fmt.Errorf("%w: %v: run hltrace as root", ErrPrivilege, err)
	}
	has := func(c uint) bool { return caps&(1<<c) != 0 }
	if has(capSysAdmin) || (has(capBPF) && has(capPerfmon)) {
		return nil
	}
	return fmt.Errorf("%w: hltrace loads BPF programs and needs root, or CAP_BPF and CAP_PERFMON (effective capabilities: %#x); try: sudo hltrace", ErrPrivilege, caps)
}

// effectiveCaps reads CapEff from a /proc/<pid>/status file.
func effectiveCaps(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no CapEff line", path)
}

// checkTracepoints finds the syscall events in a mounted tracefs, mounting
// it at the first candidate when none is.
func (s system) checkTracepoints() error {
	dir, err := s.tracefsDir()
	if err != nil {
		return fmt.Errorf("%w: %v, or use -probe raw", ErrNoTracepoints, err)
	}
	return s.checkEvents(dir)
}

// tracefsDir returns where tracefs is mounted, mounting it at the first
// candidate when it is nowhere.
func (s system) tracefsDir() (string, error) {
	var tried []string
	for _, dir := range s.tracefs {
		if _, err := os.Stat(filepath.Join(dir, "events")); err != nil {
			tried = append(tried, dir)
			continue
		}
		return dir, nil
	}
	if len(s.tracefs) > 0 && s.mount != nil {
		dir := s.tracefs[0]
		if err := s.mount(dir); err != nil {
			return "", fmt.Errorf("tracefs is not mounted (looked in %s) and mounting it failed: %v; try: mount -t tracefs nodev %s",
				strings.Join(tried, ", "), err, dir)
		}
		return dir, nil
	}
	return "", fmt.Errorf("tracefs is not mounted (looked in %s); try: mount -t tracefs nodev /sys/kernel/tracing",
		strings.Join(tried, ", "))
}

// checkKprobes reports whether the kernel can place kprobes: through the
// kprobe perf event source, or else through tracefs's kprobe_events, the
// two ways the loader tries.
func (s system) checkKprobes() error {
	if _, err := os.Stat(s.kprobePMU); err == nil {
		return nil
	}
	dir, err := s.tracefsDir()
	if err != nil {
		return fmt.Errorf("%w (CONFIG_KPROBES? %s missing, and %v)", ErrNoKprobes, s.kprobePMU, err)
	}
	events := filepath.Join(dir, "kprobe_events")
	if _, err := os.Stat(events); err != nil {
		return fmt.Errorf("%w (CONFIG_KPROBES? %s missing); use -probe fentry, tracepoint or raw", ErrNoKprobes, events)
	}
	return nil
}

func (s system) checkEvents(dir string) error {
	for _, ev := range syscallEvents {
		if _, err := os.Stat(filepath.Join(dir, "events", "syscalls", ev, "id")); err != nil {
			return fmt.Errorf("%w: %s/events/syscalls/%s: %v: the kernel needs CONFIG_FTRACE_SYSCALLS=y; use -probe raw on kernels without it",
				ErrNoTracepoints, dir, ev, err)
		}
	}
	return nil
}

// explainLoadError turns the kernel's refusals into the errors above.
func explainLoadError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return fmt.Errorf("%w: the kernel refused to load BPF programs (%v); run hltrace as root, and check kernel.unprivileged_bpf_disabled and lockdown", ErrPrivilege, err)
	}
	return err
}
