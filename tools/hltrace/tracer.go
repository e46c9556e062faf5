package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/uapi/dmabuf"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"github.com/gaudi-go/gaudi/uapi/rdma"
)

// Options choose what the tracer watches.
type Options struct {
	PID  int    // trace this process only; 0 for all
	Comm string // trace tasks with this comm only (at most 15 bytes)

	// Devices, when not empty, are the only device nodes whose ioctls
	// are traced and whose openat is reported (by whole path); at most
	// MaxDevices.
	Devices []DeviceNode

	// Follow traces only the processes given to Tracer.Follow and the
	// processes they start after that (their descendants), instead of
	// every process or PID.
	Follow bool

	Probe    string // ProbeAuto, ProbeTracepoint, ProbeRaw, ProbeKprobe or ProbeFentry
	NoFuncs  bool   // do not attach fentry/fexit to driver and dma-buf functions
	RingSize int    // ring buffer bytes, a power of two; 0 for 8 MiB

	// WakeupBytes is the ring buffer backlog at which the BPF side wakes
	// a reader blocked in epoll. Read polls instead (see pollInterval), so
	// by default this only fires when the ring is half full; -1 asks the
	// kernel to wake an idle reader for every event, which costs the
	// traced call an interrupt each.
	WakeupBytes int

	// ExtraFuncs are more kernel functions to time with fentry/fexit;
	// the tests use it to exercise that path on machines without Gaudi.
	ExtraFuncs []string

	// IoctlFuncs are the ioctl entry functions the kprobe and fentry
	// modes attach to, each of the shape long f(struct file *, unsigned
	// int cmd, unsigned long arg); nil for DefaultIoctlFuncs. The tests
	// name ib_uverbs_ioctl, where no habanalabs driver is loaded.
	IoctlFuncs []string
}

// A DeviceNode is a device node to trace: its path, for openat, and its
// device number, for the ioctls on it.
type DeviceNode struct {
	Path string
	Rdev uint32 // the kernel's dev_t: major << 20 | minor; 0 for a served node
	// Served is set for a node tools/hlsim serves: a regular file on a
	// FUSE file system, without a device number, which the BPF side
	// knows by its file system's device (Dev, a kernel dev_t) and its
	// inode number (Ino).
	Served bool
	Dev    uint32
	Ino    uint64
}

// MaxDevices is the most device nodes Options.Devices may hold: the BPF
// side's MAX_RDEVS, a compute and a control node for eight Gaudis.
const MaxDevices = len(bpfConfig{}.Rdev)

// NodeAt returns the device node at path: a character or block device,
// or a node tools/hlsim serves (a regular file on a FUSE file system).
func NodeAt(path string) (DeviceNode, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return DeviceNode{}, fmt.Errorf("device %s: %w", path, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR, unix.S_IFBLK:
		return DeviceNode{Path: path, Rdev: kernelDev(st.Rdev)}, nil
	case unix.S_IFREG:
		var fs unix.Statfs_t
		if err := unix.Statfs(path, &fs); err != nil {
			return DeviceNode{}, fmt.Errorf("device %s: %w", path, err)
		}
		if fs.Type == unix.FUSE_SUPER_MAGIC {
			return DeviceNode{Path: path, Served: true, Dev: kernelDev(st.Dev), Ino: st.Ino}, nil
		}
	}
	return DeviceNode{}, fmt.Errorf("device %s: not a device node, nor a node tools/hlsim serves", path)
}

// kernelDev converts a device number as stat(2) returns it to the
// kernel's dev_t (major << 20 | minor, include/linux/kdev_t.h), the form
// the BPF side reads from struct inode and struct super_block.
func kernelDev(dev uint64) uint32 {
	return unix.Major(dev)<<20 | unix.Minor(dev)
}

// DefaultOpenPrefixes are the paths whose openat is reported: the device
// nodes of habanalabs (accel and legacy), uverbs, udmabuf and dma-heaps.
var DefaultOpenPrefixes = []string{"/dev/accel/", "/dev/hl", "/dev/infiniband/", "/dev/udmabuf", "/dev/dma_heap/"}

// A funcTarget is a kernel function timed with fentry/fexit.
type funcTarget struct {
	Name   string
	Module string // where its BTF lives: "vmlinux" or the module
	Arg    bpfFuncArg
}

// funcTargets are the driver and dma-buf functions worth timing. The
// habanalabs ones are the DRM ioctl handlers and the control node's
// handler (drivers/accel/habanalabs/common), ib_uverbs_ioctl is the uverbs
// ioctl entry, and the dma-buf ones are where an exporter hands out and an
// importer maps a buffer.
var funcTargets = []funcTarget{
	{"hl_info_ioctl", "habanalabs", bpfFuncArgFARG_NONE},
	{"hl_cb_ioctl", "habanalabs", bpfFuncArgFARG_NONE},
	{"hl_cs_ioctl", "habanalabs", bpfFuncArgFARG_NONE},
	{"hl_wait_ioctl", "habanalabs", bpfFuncArgFARG_NONE},
	{"hl_mem_ioctl", "habanalabs", bpfFuncArgFARG_NONE},
	{"hl_debug_ioctl", "habanalabs", bpfFuncArgFARG_NONE},
	{"hl_ioctl_control", "habanalabs", bpfFuncArgFARG_NONE},
	{"ib_uverbs_ioctl", "ib_uverbs", bpfFuncArgFARG_NONE},
	{"dma_buf_export", "vmlinux", bpfFuncArgFARG_EXPORT_INFO},
	{"dma_buf_attach", "vmlinux", bpfFuncArgFARG_DMA_BUF},
	{"dma_buf_dynamic_attach", "vmlinux", bpfFuncArgFARG_DMA_BUF},
	{"dma_buf_map_attachment", "vmlinux", bpfFuncArgFARG_ATTACHMENT},
}

// Tracer owns the loaded programs, their links and the ring buffer reader.
// Read may run in one goroutine while Counters and Close run in others;
// it is not safe for concurrent Reads.
type Tracer struct {
	Mode string // the probe mode in use

	// IoctlFuncs are the functions the kprobe or fentry mode attached
	// to, IoctlFuncsAbsent the default ones the kernel lacks.
	IoctlFuncs       []string
	IoctlFuncsAbsent []string

	Funcs    []string // functions timed with fentry/fexit
	NoFuncs  []string // functions asked for whose BTF the kernel lacks
	FuncErrs []string // functions present that could not be attached, with why
	// FuncRefused are functions present whose fentry/fexit programs the
	// kernel refused to load (EPERM: a security policy, as on kernels
	// that also forbid kprobes).
	FuncRefused []string

	reader   *ringbuf.Reader // set by Open, safe to Close while read
	funcID   map[uint32]string
	deadline atomic.Int64  // Read's deadline, Unix ns; 0 for none
	done     chan struct{} // closed by Close
	sleep    *time.Timer   // Read's poll timer

	mu     sync.Mutex // guards the fields below
	coll   *ebpf.Collection
	fcolls []*ebpf.Collection
	links  []link.Link
	closed bool

	monoBase uint64 // CLOCK_MONOTONIC at wallBase
	wallBase time.Time
	rec      ringbuf.Record
}

// Open checks the system, loads the programs, fills their configuration
// and attaches them. The caller must Close the tracer.
func Open(opts Options) (*Tracer, error) {
	if len(opts.IoctlFuncs) > 0 && opts.Probe != ProbeKprobe && opts.Probe != ProbeFentry {
		return nil, fmt.Errorf("ioctl functions (-func) are for -probe kprobe or fentry, not %q", opts.Probe)
	}
	mode, err := hostSystem.preflight(opts.Probe)
	if err != nil {
		return nil, err
	}
	funcMode := mode == ProbeKprobe || mode == ProbeFentry
	var ioctlFuncs, absent []string
	if funcMode {
		if ioctlFuncs, absent, err = hostSystem.findFuncs(opts.IoctlFuncs); err != nil {
			return nil, err
		}
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, explainLoadError(fmt.Errorf("raise RLIMIT_MEMLOCK: %w", err))
	}
	cfg, err := buildConfig(opts)
	if err != nil {
		return nil, err
	}
	if mode == ProbeRaw || funcMode {
		if err := regsConfig(&cfg); err != nil {
			return nil, err
		}
	}
	if mode == ProbeRaw {
		cfg.Flags |= bpfConfigFlagCFG_RAW_TP
	}

	spec, err := loadBpf()
	if err != nil {
		return nil, err
	}
	ringSize := opts.RingSize
	if ringSize == 0 {
		ringSize = 8 << 20
	}
	if ringSize&(ringSize-1) != 0 || ringSize < os.Getpagesize() {
		return nil, fmt.Errorf("ring buffer size %d is not a power of two of at least a page", ringSize)
	}
	spec.Maps[bpfMapEvents].MaxEntries = uint32(ringSize)
	switch {
	case opts.WakeupBytes < 0:
		cfg.WakeupBytes = 0
	case opts.WakeupBytes == 0:
		cfg.WakeupBytes = uint32(ringSize / 2)
	default:
		cfg.WakeupBytes = uint32(min(opts.WakeupBytes, ringSize/2))
	}

	keep := map[string]bool{}
	switch mode {
	case ProbeTracepoint:
		for _, p := range []string{bpfProgEnterIoctl, bpfProgEnterOpenat, bpfProgEnterMmap, bpfProgEnterClose, bpfProgExitSyscall} {
			keep[p] = true
		}
	case ProbeRaw:
		keep[bpfProgRawEnter] = true
		keep[bpfProgRawExit] = true
	case ProbeKprobe:
		keep[bpfProgKprobeIoctl] = true
		keep[bpfProgKretprobeIoctl] = true
	}
	if opts.Follow {
		keep[bpfProgFollowFork] = true
		keep[bpfProgFollowExit] = true
		cfg.Flags |= bpfConfigFlagCFG_FOLLOW
	}
	funcSpec := spec.Copy()
	for name := range spec.Programs {
		if !keep[name] {
			delete(spec.Programs, name)
		}
	}

	t := &Tracer{Mode: mode, IoctlFuncsAbsent: absent, funcID: map[uint32]string{}, done: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			t.Close()
		}
	}()
	t.coll, err = ebpf.NewCollection(spec)
	if err != nil {
		return nil, explainLoadError(fmt.Errorf("load BPF programs: %w", err))
	}
	if err := t.coll.Maps[bpfMapConfig].Put(uint32(0), &cfg); err != nil {
		return nil, fmt.Errorf("set config: %w", err)
	}
	for req, call := range requestCalls() {
		if err := t.coll.Maps[bpfMapRequests].Put(req, bpfRequest{Call: call}); err != nil {
			return nil, fmt.Errorf("set requests: %w", err)
		}
	}

	switch mode {
	case ProbeTracepoint:
		attach := []struct{ prog, event string }{
			{bpfProgEnterIoctl, "sys_enter_ioctl"},
			{bpfProgEnterOpenat, "sys_enter_openat"},
			{bpfProgEnterMmap, "sys_enter_mmap"},
			{bpfProgEnterClose, "sys_enter_close"},
			{bpfProgExitSyscall, "sys_exit_ioctl"},
			{bpfProgExitSyscall, "sys_exit_openat"},
			{bpfProgExitSyscall, "sys_exit_mmap"},
			{bpfProgExitSyscall, "sys_exit_close"},
		}
		for _, a := range attach {
			l, err := link.Tracepoint("syscalls", a.event, t.coll.Programs[a.prog], nil)
			if err != nil {
				return nil, explainLoadError(fmt.Errorf("attach %s to syscalls/%s: %w", a.prog, a.event, err))
			}
			t.links = append(t.links, l)
		}
	case ProbeRaw:
		for _, a := range []struct{ prog, tp string }{{bpfProgRawEnter, "sys_enter"}, {bpfProgRawExit, "sys_exit"}} {
			l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: a.tp, Program: t.coll.Programs[a.prog]})
			if err != nil {
				return nil, explainLoadError(fmt.Errorf("attach %s to raw tracepoint %s: %w", a.prog, a.tp, err))
			}
			t.links = append(t.links, l)
		}
	default:
		if err := t.attachIoctlFuncs(funcSpec, mode, ioctlFuncs); err != nil {
			return nil, err
		}
	}
	if opts.Follow {
		for _, a := range []struct{ prog, tp string }{{bpfProgFollowFork, "sched_process_fork"}, {bpfProgFollowExit, "sched_process_exit"}} {
			l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: a.tp, Program: t.coll.Programs[a.prog]})
			if err != nil {
				return nil, explainLoadError(fmt.Errorf("attach %s to raw tracepoint %s: %w", a.prog, a.tp, err))
			}
			t.links = append(t.links, l)
		}
	}

	var targets []funcTarget
	if !opts.NoFuncs {
		for _, ft := range funcTargets {
			if !slices.Contains(ioctlFuncs, ft.Name) { // timed by the ioctl events already
				targets = append(targets, ft)
			}
		}
	}
	for _, name := range opts.ExtraFuncs {
		targets = append(targets, funcTarget{Name: name, Module: "?", Arg: bpfFuncArgFARG_NONE})
	}
	for i, ft := range targets {
		t.attachFunc(funcSpec, uint32(i+1), ft)
	}

	t.reader, err = ringbuf.NewReader(t.coll.Maps[bpfMapEvents])
	if err != nil {
		return nil, fmt.Errorf("open ring buffer: %w", err)
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return nil, err
	}
	t.wallBase = time.Now()
	t.monoBase = uint64(ts.Nano())
	ok = true
	return t, nil
}

// attachFunc loads a copy of the fentry/fexit pair for one function,
// sharing the maps of the main collection, and attaches it with the
// function's id and argument kind as cookie. A function the kernel has no
// BTF for (its module is not loaded) is listed in NoFuncs; one that fails
// otherwise in FuncErrs: neither stops the tracer.
func (t *Tracer) attachFunc(base *ebpf.CollectionSpec, id uint32, ft funcTarget) {
	progs := [2]string{bpfProgFuncEnter, bpfProgFuncExit}
	coll, err := t.loadTracingPair(base, progs, ft.Name)
	if err != nil {
		switch {
		case errors.Is(err, btf.ErrNotFound) || errors.Is(err, ebpf.ErrNotSupported):
			t.NoFuncs = append(t.NoFuncs, ft.Name)
		case errors.Is(err, unix.EPERM):
			t.FuncRefused = append(t.FuncRefused, ft.Name)
		default:
			t.FuncErrs = append(t.FuncErrs, fmt.Sprintf("%s: %v", ft.Name, err))
		}
		return
	}
	links, err := attachTracingPair(coll, progs, uint64(id)|uint64(ft.Arg)<<16)
	if err != nil {
		coll.Close()
		t.FuncErrs = append(t.FuncErrs, fmt.Sprintf("%s: attach: %v", ft.Name, err))
		return
	}
	t.links = append(t.links, links...)
	t.fcolls = append(t.fcolls, coll)
	t.Funcs = append(t.Funcs, ft.Name)
	t.funcID[id] = ft.Name
}

// loadTracingPair loads a copy of an fentry and an fexit program (progs,
// in that order) for the kernel function fn, sharing the maps of the main
// collection. The loader finds fn's BTF in vmlinux or a loaded module.
func (t *Tracer) loadTracingPair(base *ebpf.CollectionSpec, progs [2]string, fn string) (*ebpf.Collection, error) {
	spec := base.Copy()
	for name := range spec.Programs {
		if name != progs[0] && name != progs[1] {
			delete(spec.Programs, name)
		}
	}
	for _, p := range progs {
		spec.Programs[p].AttachTo = fn
	}
	repl := map[string]*ebpf.Map{}
	for name, m := range t.coll.Maps {
		repl[name] = m
	}
	return ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: repl})
}

// attachTracingPair attaches the fentry and fexit programs progs of coll
// with the cookie; on failure nothing stays attached.
func attachTracingPair(coll *ebpf.Collection, progs [2]string, cookie uint64) ([]link.Link, error) {
	var links []link.Link
	for i, at := range []ebpf.AttachType{ebpf.AttachTraceFEntry, ebpf.AttachTraceFExit} {
		l, err := link.AttachTracing(link.TracingOptions{Program: coll.Programs[progs[i]], AttachType: at, Cookie: cookie})
		if err != nil {
			for _, l := range links {
				l.Close()
			}
			return nil, err
		}
		links = append(links, l)
	}
	return links, nil
}

// buildConfig turns the options into the BPF config value.
func buildConfig(opts Options) (bpfConfig, error) {
	var cfg bpfConfig
	if opts.PID < 0 {
		return cfg, fmt.Errorf("bad pid %d", opts.PID)
	}
	if opts.PID != 0 && opts.Follow {
		return cfg, errors.New("a pid and following processes exclude each other")
	}
	cfg.Pid = uint32(opts.PID)
	if opts.Comm != "" {
		if len(opts.Comm) > len(cfg.Comm)-1 {
			return cfg, fmt.Errorf("comm %q is longer than the kernel's 15 bytes", opts.Comm)
		}
		copy(cfg.Comm[:], opts.Comm)
		cfg.Flags |= bpfConfigFlagCFG_COMM
	}
	prefixes := DefaultOpenPrefixes
	if len(opts.Devices) > 0 {
		if len(opts.Devices) > len(cfg.Rdev) {
			return cfg, fmt.Errorf("%d device nodes to trace: at most %d", len(opts.Devices), len(cfg.Rdev))
		}
		prefixes = nil
		for _, d := range opts.Devices {
			switch {
			case d.Served:
				// Known by identity: its openat is checked on the
				// file it opened, whatever the path's length.
				cfg.FileDev[cfg.Nfile], cfg.FileIno[cfg.Nfile] = d.Dev, d.Ino
				cfg.Nfile++
				continue
			case d.Rdev == 0:
				return cfg, fmt.Errorf("device %s: no device number", d.Path)
			case len(d.Path) >= len(cfg.Prefix[0]):
				return cfg, fmt.Errorf("device %s: the path is longer than %d bytes", d.Path, len(cfg.Prefix[0])-1)
			}
			cfg.Rdev[cfg.Nrdev] = d.Rdev
			cfg.Nrdev++
			// The NUL makes the prefix a whole path: accel1 is not accel10.
			prefixes = append(prefixes, d.Path+"\x00")
		}
	}
	if len(prefixes) > len(cfg.Prefix) {
		return cfg, fmt.Errorf("at most %d openat prefixes", len(cfg.Prefix))
	}
	for i, p := range prefixes {
		if len(p) > len(cfg.Prefix[i]) {
			return cfg, fmt.Errorf("path %q is longer than %d bytes", p, len(cfg.Prefix[i]))
		}
		copy(cfg.Prefix[i][:], p)
		cfg.PrefixLen[i] = uint32(len(p))
	}
	cfg.Nprefix = uint32(len(prefixes))
	return cfg, nil
}

// regsConfig fills what the raw tracepoint, kprobe and fentry programs
// need: the syscall numbers and where struct pt_regs keeps the system
// call's number and arguments, a function's first three arguments and its
// return value, from the kernel's BTF.
func regsConfig(cfg *bpfConfig) error {
	cfg.NrIoctl = unix.SYS_IOCTL
	cfg.NrOpenat = unix.SYS_OPENAT
	cfg.NrMmap = unix.SYS_MMAP
	cfg.NrClose = unix.SYS_CLOSE
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoBTF, err)
	}
	var regs *btf.Struct
	if err := kernel.TypeByName("pt_regs", &regs); err != nil {
		return fmt.Errorf("kernel BTF: struct pt_regs: %w", err)
	}
	off := func(name string, index int) (uint32, error) {
		for _, m := range regs.Members {
			if m.Name == name {
				return m.Offset.Bytes() + uint32(index*8), nil
			}
			if m.Name == "" { // arm64 keeps regs[] in an anonymous union
				if u, ok := m.Type.(*btf.Union); ok {
					for _, um := range u.Members {
						if s, ok := um.Type.(*btf.Struct); ok {
							for _, sm := range s.Members {
								if sm.Name == name {
									return m.Offset.Bytes() + um.Offset.Bytes() + sm.Offset.Bytes() + uint32(index*8), nil
								}
							}
						}
					}
				}
			}
		}
		return 0, fmt.Errorf("kernel BTF: struct pt_regs has no %s", name)
	}
	type reg struct {
		name  string
		index int
	}
	// The system call's arguments and number, then a function call's
	// first three arguments and its return value.
	var want [6 + 1 + 3 + 1]reg
	switch runtime.GOARCH {
	case "amd64":
		want = [...]reg{{"di", 0}, {"si", 0}, {"dx", 0}, {"r10", 0}, {"r8", 0}, {"r9", 0}, {"orig_ax", 0},
			{"di", 0}, {"si", 0}, {"dx", 0}, {"ax", 0}}
	case "arm64":
		want = [...]reg{{"orig_x0", 0}, {"regs", 1}, {"regs", 2}, {"regs", 3}, {"regs", 4}, {"regs", 5}, {"syscallno", 0},
			{"regs", 0}, {"regs", 1}, {"regs", 2}, {"regs", 0}}
	default:
		return fmt.Errorf("no register map for %s: use -probe tracepoint", runtime.GOARCH)
	}
	dst := []*uint32{&cfg.RegOff[0], &cfg.RegOff[1], &cfg.RegOff[2], &cfg.RegOff[3], &cfg.RegOff[4], &cfg.RegOff[5], &cfg.NrRegOff,
		&cfg.FuncRegOff[0], &cfg.FuncRegOff[1], &cfg.FuncRegOff[2], &cfg.RetRegOff}
	for i, r := range want {
		o, err := off(r.name, r.index)
		if err != nil {
			return err
		}
		if o%8 != 0 || o > 0x3f8 { // what read_reg in hltrace.bpf.c can reach
			return fmt.Errorf("kernel BTF: struct pt_regs member %s at offset %d, out of reach", r.name, o)
		}
		*dst[i] = o
	}
	return nil
}

// requestCalls maps every traced ioctl request number to its call: the
// habanalabs requests in both encodings from the uapi name tables, the
// uverbs ioctl and the dma-buf ioctls.
func requestCalls() map[uint32]bpfCall {
	byName := map[string]bpfCall{
		"INFO":    bpfCallCALL_HL_INFO,
		"CB":      bpfCallCALL_HL_CB,
		"CS":      bpfCallCALL_HL_CS,
		"WAIT_CS": bpfCallCALL_HL_WAIT_CS,
		"MEMORY":  bpfCallCALL_HL_MEMORY,
		"DEBUG":   bpfCallCALL_HL_DEBUG,
	}
	m := map[uint32]bpfCall{}
	for _, table := range []map[uint32]string{hl.RequestNames, hl.LegacyRequestNames} {
		for req, name := range table {
			if c, ok := byName[name]; ok {
				m[req] = c
			}
		}
	}
	for _, r := range otherRequests {
		m[r.req] = r.call
	}
	return m
}

// otherRequests are the traced requests outside habanalabs, named after
// their uapi constants.
var otherRequests = []struct {
	req  uint32
	call bpfCall
	name string
}{
	{rdma.RDMA_VERBS_IOCTL, bpfCallCALL_UVERBS, "RDMA_VERBS_IOCTL"},
	{dmabuf.DMA_BUF_IOCTL_SYNC, bpfCallCALL_DMABUF_SYNC, "DMA_BUF_IOCTL_SYNC"},
	{dmabuf.DMA_BUF_SET_NAME_A, bpfCallCALL_DMABUF_SET_NAME, "DMA_BUF_SET_NAME_A"},
	{dmabuf.DMA_BUF_SET_NAME_B, bpfCallCALL_DMABUF_SET_NAME, "DMA_BUF_SET_NAME_B"},
	{dmabuf.DMA_BUF_IOCTL_EXPORT_SYNC_FILE, bpfCallCALL_DMABUF_EXPORT_SYNC_FILE, "DMA_BUF_IOCTL_EXPORT_SYNC_FILE"},
	{dmabuf.DMA_BUF_IOCTL_IMPORT_SYNC_FILE, bpfCallCALL_DMABUF_IMPORT_SYNC_FILE, "DMA_BUF_IOCTL_IMPORT_SYNC_FILE"},
}

// pollInterval is how long Read sleeps when the ring buffer is empty.
// The reader polls rather than waiting for the kernel to wake it: a
// wakeup costs the traced call an interrupt, and a reader woken for every
// event chases the producer record by record across CPUs. At 100,000
// events a second a poll finds about 500 of them (some 60 KiB).
const pollInterval = 5 * time.Millisecond

// Read blocks until the next event and stores it in ev. It returns
// os.ErrDeadlineExceeded once the deadline set by SetDeadline passes with
// no event, and an error matching os.ErrClosed after Close.
func (t *Tracer) Read(ev *Event) error {
	for {
		// A deadline in the past makes the reader return what the ring
		// holds without waiting.
		t.reader.SetDeadline(time.Unix(0, 1))
		err := t.reader.ReadInto(&t.rec)
		if err == nil {
			if err := ev.decodeRaw(t.rec.RawSample); err != nil {
				return err
			}
			ev.tracer = t
			return nil
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		wait := pollInterval
		if d := t.deadline.Load(); d != 0 {
			left := time.Until(time.Unix(0, d))
			if left <= 0 {
				return os.ErrDeadlineExceeded
			}
			wait = min(wait, left)
		}
		if t.sleep == nil {
			t.sleep = time.NewTimer(wait)
		} else {
			t.sleep.Reset(wait)
		}
		select {
		case <-t.sleep.C:
		case <-t.done:
			return os.ErrClosed
		}
	}
}

// SetDeadline makes Read return os.ErrDeadlineExceeded when no event
// arrives by d; the zero time means no deadline. It may be called while
// a Read is blocked.
func (t *Tracer) SetDeadline(d time.Time) {
	if d.IsZero() {
		t.deadline.Store(0)
		return
	}
	t.deadline.Store(max(d.UnixNano(), 1))
}

// Wall converts a BPF timestamp (CLOCK_MONOTONIC) to wall-clock time.
func (t *Tracer) Wall(mono uint64) time.Time {
	return t.wallBase.Add(time.Duration(int64(mono - t.monoBase)))
}

// Follow adds the process pid to those traced under Options.Follow: from
// now on its calls are traced, and so are those of the processes it
// starts (which are followed in turn, until they exit). A process that
// starts before Follow returns is not followed.
func (t *Tracer) Follow(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("follow pid %d: not a process id", pid)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return os.ErrClosed
	}
	if err := t.coll.Maps[bpfMapFollowed].Put(uint32(pid), uint32(1)); err != nil {
		return fmt.Errorf("follow pid %d: %w", pid, err)
	}
	return nil
}

// Followed returns the processes followed now (under Options.Follow):
// those given to Follow and their descendants that have not exited.
func (t *Tracer) Followed() ([]int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, os.ErrClosed
	}
	var pids []int
	var pid, one uint32
	it := t.coll.Maps[bpfMapFollowed].Iterate()
	for it.Next(&pid, &one) {
		pids = append(pids, int(pid))
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("list followed processes: %w", err)
	}
	slices.Sort(pids)
	return pids, nil
}

// FuncName names a fentry function id.
func (t *Tracer) FuncName(id uint32) string {
	if n, ok := t.funcID[id]; ok {
		return n
	}
	return fmt.Sprintf("func#%d", id)
}

// Counters are the BPF side's counts, summed over CPUs.
type Counters struct {
	Events       uint64 // events submitted
	Lost         uint64 // events dropped because the ring buffer was full
	InflightFull uint64 // calls not traced: too many threads in a call
	Faults       uint64 // argument structs that could not be read
	FollowFull   uint64 // processes not followed: too many at once
}

// Counters reads the counters.
func (t *Tracer) Counters() (Counters, error) {
	var c Counters
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return c, os.ErrClosed
	}
	sum := func(k bpfCounter) (uint64, error) {
		var vals []uint64
		if err := t.coll.Maps[bpfMapCounters].Lookup(uint32(k), &vals); err != nil {
			return 0, err
		}
		var s uint64
		for _, v := range vals {
			s += v
		}
		return s, nil
	}
	var err error
	for _, f := range []struct {
		k   bpfCounter
		dst *uint64
	}{
		{bpfCounterCNT_EVENTS, &c.Events},
		{bpfCounterCNT_LOST, &c.Lost},
		{bpfCounterCNT_INFLIGHT_FULL, &c.InflightFull},
		{bpfCounterCNT_ENTER_FAULT, &c.Faults},
		{bpfCounterCNT_FOLLOW_FULL, &c.FollowFull},
	} {
		if *f.dst, err = sum(f.k); err != nil {
			return c, fmt.Errorf("read counters: %w", err)
		}
	}
	return c, nil
}

// Describe says what is attached, on one line.
func (t *Tracer) Describe() string {
	return strings.Join(t.DescribeLines(0), "; ")
}

// DescribeLines says what is attached, for the banner: one statement per
// line, lists of functions wrapped at width columns (0 for no wrapping),
// continuation lines indented by two spaces.
func (t *Tracer) DescribeLines(width int) []string {
	var lines []string
	switch t.Mode {
	case ProbeTracepoint:
		lines = append(lines, "probes: tracepoint (syscalls: ioctl, openat, mmap, close)")
	case ProbeRaw:
		lines = append(lines, "probes: raw (raw tracepoints sys_enter, sys_exit)")
	default:
		lines = append(lines, wrapList("probes: "+t.Mode+" on", t.IoctlFuncs, width)...)
	}
	lists := []struct {
		what  string
		funcs []string
	}{
		{"not in this kernel:", t.IoctlFuncsAbsent},
		{"timed with fentry/fexit:", t.Funcs},
		{"not timed, not in kernel BTF (module not loaded):", t.NoFuncs},
		{"not timed, fentry/fexit refused by the kernel (EPERM):", t.FuncRefused},
	}
	for _, l := range lists {
		if len(l.funcs) > 0 {
			lines = append(lines, wrapList(l.what, l.funcs, width)...)
		}
	}
	for _, e := range t.FuncErrs {
		lines = append(lines, "not timed, "+e)
	}
	return lines
}

// wrapList writes head and the items, separated by commas, in lines of
// at most width columns where the items allow (0: one line);
// continuation lines start with two spaces.
func wrapList(head string, items []string, width int) []string {
	var lines []string
	line := head
	for i, it := range items {
		word := " " + it
		if i < len(items)-1 {
			word += ","
		}
		if width > 0 && len(line)+len(word) > width && strings.TrimSpace(line) != "" {
			lines = append(lines, line)
			line = " "
		}
		line += word
	}
	return append(lines, line)
}

// Close detaches and unloads everything; it unblocks a pending Read. It
// may be called more than once.
func (t *Tracer) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	close(t.done)
	// Each detach waits for the kernel's RCU grace periods (some 50 ms
	// for a tracepoint's perf event on the test machine); in parallel the
	// waits overlap, which matters when hltrace exits with a command.
	errs := make([]error, len(t.links))
	var wg sync.WaitGroup
	for i, l := range t.links {
		wg.Go(func() { errs[i] = l.Close() })
	}
	wg.Wait()
	t.links = nil
	if t.reader != nil {
		errs = append(errs, t.reader.Close())
	}
	for _, c := range t.fcolls {
		c.Close()
	}
	t.fcolls = nil
	if t.coll != nil {
		t.coll.Close()
		t.coll = nil
	}
	return errors.Join(errs...)
}
