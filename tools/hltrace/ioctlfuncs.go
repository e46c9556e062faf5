package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// DefaultIoctlFuncs are the kernel functions the kprobe and fentry modes
// attach to when Options.IoctlFuncs is empty: the habanalabs ioctl entry
// points. From Linux 6.2 on (the accel subsystem), ioctls on
// /dev/accel/accelN enter through the DRM core's drm_ioctl, which calls
// the driver's handlers, and those on the control node through
// hl_ioctl_control; hl_ioctl is the entry of older kernels (/dev/hlN) and
// of the driver's out-of-tree releases. All three take (struct file *,
// unsigned int cmd, unsigned long arg). The ones the running kernel lacks
// are skipped.
var DefaultIoctlFuncs = []string{"hl_ioctl", "hl_ioctl_control", "drm_ioctl"}

// accelMajor is the character device major of /dev/accel/* (the kernel's
// ACCEL_MAJOR).
const accelMajor = 261

// ioctlFuncMajors are the device majors whose files a function's calls
// are reported for; functions not listed report all their calls.
// drm_ioctl also serves every GPU driver, whose request numbers may equal
// habanalabs ones. The tests add entries.
var ioctlFuncMajors = map[string]uint32{"drm_ioctl": accelMajor}

// findFuncs looks functions up in the kernel's symbol table. With names
// empty it looks for DefaultIoctlFuncs and needs at least one of them;
// named functions must all be there. It returns those found, in order,
// and those missing.
func (s system) findFuncs(names []string) (found, missing []string, err error) {
	explicit := len(names) > 0
	if !explicit {
		names = DefaultIoctlFuncs
	}
	have, err := kernelSymbols(s.kallsyms, names)
	if err != nil {
		return nil, nil, fmt.Errorf("look up kernel functions: %w", err)
	}
	for _, n := range names {
		if have[n] {
			found = append(found, n)
		} else {
			missing = append(missing, n)
		}
	}
	switch {
	case explicit && len(missing) > 0:
		return nil, nil, fmt.Errorf("%w: %s not in %s: check the name, and that its module is loaded (lsmod)",
			ErrNoFunc, strings.Join(missing, ", "), s.kallsyms)
	case len(found) == 0:
		return nil, nil, fmt.Errorf("%w: none of %s is in %s: is the habanalabs driver loaded? (-func names other functions)",
			ErrNoFunc, strings.Join(names, ", "), s.kallsyms)
	}
	return found, missing, nil
}

// kernelSymbols reports which of names a kallsyms file lists as
// functions (text symbols, in the kernel or a module).
func kernelSymbols(path string, names []string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	have := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "ffffffffc0a01234 t name\t[module]"
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || (fields[1] != "t" && fields[1] != "T") {
			continue
		}
		if slices.Contains(names, fields[2]) {
			have[fields[2]] = true
		}
	}
	return have, sc.Err()
}

// attachIoctlFuncs attaches the kprobe or fentry ioctl programs to each
// function; the kprobe pair is in the main collection, fentry needs a
// copy per function.
func (t *Tracer) attachIoctlFuncs(base *ebpf.CollectionSpec, mode string, funcs []string) error {
	for _, fn := range funcs {
		major := uint64(ioctlFuncMajors[fn])
		if mode == ProbeKprobe {
			l, err := link.Kprobe(fn, t.coll.Programs[bpfProgKprobeIoctl], &link.KprobeOptions{Cookie: major})
			if err != nil {
				return explainFuncError(mode, fn, err)
			}
			t.links = append(t.links, l)
			l, err = link.Kretprobe(fn, t.coll.Programs[bpfProgKretprobeIoctl], nil)
			if err != nil {
				return explainFuncError(mode, fn, err)
			}
			t.links = append(t.links, l)
			continue
		}
		progs := [2]string{bpfProgFentryIoctl, bpfProgFexitIoctl}
		coll, err := t.loadTracingPair(base, progs, fn)
		if err != nil {
			return explainFuncError(mode, fn, err)
		}
		t.fcolls = append(t.fcolls, coll)
		links, err := attachTracingPair(coll, progs, major)
		if err != nil {
			return explainFuncError(mode, fn, err)
		}
		t.links = append(t.links, links...)
	}
	t.IoctlFuncs = funcs
	return nil
}

// enotsupp is the kernel's internal "operation not supported" errno,
// which the bpf system call lets through for fentry on kernels without
// BPF trampolines.
const enotsupp = unix.Errno(524)

// explainFuncError says why a kprobe or fentry ioctl program could not
// be loaded or attached to fn, and what to try instead.
func explainFuncError(mode, fn string, err error) error {
	switch {
	case mode == ProbeFentry && errors.Is(err, btf.ErrNotFound):
		return fmt.Errorf("%w: fentry on %s: the kernel has no BTF for it (%w); its module needs CONFIG_DEBUG_INFO_BTF_MODULES, or use -probe kprobe",
			ErrNoFentry, fn, err)
	case mode == ProbeFentry && (errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)):
		return fmt.Errorf("%w: the kernel refused fentry/fexit on %s (%w): a security policy (lockdown, LSM) forbids them; use -probe kprobe, tracepoint or raw",
			ErrNoFentry, fn, err)
	case mode == ProbeFentry && (errors.Is(err, unix.EINVAL) || errors.Is(err, enotsupp) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, ebpf.ErrNotSupported)):
		return fmt.Errorf("%w: the kernel refused fentry/fexit on %s (%w): it needs BPF trampolines (CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS) and a traceable function; use -probe kprobe, tracepoint or raw",
			ErrNoFentry, fn, err)
	case mode == ProbeKprobe && errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: kprobe on %s: %w", ErrNoFunc, fn, err)
	case mode == ProbeKprobe && errors.Is(err, ebpf.ErrNotSupported):
		return fmt.Errorf("%w: kprobe on %s: %w", ErrNoKprobes, fn, err)
	case mode == ProbeKprobe && (errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)):
		return fmt.Errorf("%w: the kernel refused a kprobe on %s (%w): the function may be blacklisted for kprobes or a security policy forbids them; use -probe fentry, tracepoint or raw",
			ErrNoKprobes, fn, err)
	}
	return explainLoadError(fmt.Errorf("%s on %s: %w", mode, fn, err))
}
