// Command hltrace traces what processes ask of the Gaudi driver: every
// habanalabs ioctl (INFO, CB, CS, WAIT_CS, MEMORY, DEBUG, in the DRM and
// the legacy encoding), the uverbs ioctl and the dma-buf ioctls, with the
// openat, mmap and close of device nodes and dma-bufs for context. BPF
// programs on the system call tracepoints decode the caller's argument
// structs in the kernel; fentry/fexit programs also time the driver's and
// dma-buf's functions where the kernel has BTF for them.
//
// Usage:
//
//	hltrace [flags] -- command [args...]
//	hltrace [flags]
//
// With a command, hltrace starts it once the probes are attached (so that
// no call escapes), traces it and every process it starts, and exits with
// the command's exit status, or 128+N when signal N ended it. The trace
// goes to standard error, or to the -o file, so that the command's
// standard output stays its own. SIGTERM, and a SIGINT that did not come
// from the terminal (the terminal sends Ctrl-C to the command too), are
// passed on to the command. Without a command, hltrace traces every
// process, or those -p and -c choose, until interrupted or -duration
// passes. "hltrace -h" lists the flags, the environment, the exit
// statuses and examples; -h, -version, -device and the exit status of a
// bad command line (2) are those of every command of this module
// (internal/cli).
//
// # Devices
//
// -device, else GAUDI_DEVICE, keeps only the ioctls on the devices a
// selector names, in the grammar every command of this module shares: an
// index, a PCI address, module:N or a chip name stands for the compute
// and control nodes of each Gaudi it matches (found in sysfs, with their
// device numbers, or under GAUDI_ROOT the nodes tools/hlsim serves there,
// known by file system and inode); a path for that one device node, a
// served node, a Gaudi's or any
// other (a uverbs device, say); the calls on other files, dma-bufs
// included, are left out. With a command, -device's selector also
// becomes the command's GAUDI_DEVICE, so that a program of this module
// opens the device traced. The simulator's selectors, sim and sim:N, are
// refused: the simulator answers a program's device calls inside its
// process, without a system call. -d is the deprecated name of -device.
//
// By default it prints one line per call: time, pid, tid, comm, call,
// decoded arguments, "->" decoded results, "=" the return value or errno
// name, and the duration. -errors keeps the calls that failed, -slower D
// those that took longer than D. The queues and engines of a command
// submission are named (PDMA_0_0, DCORE0_TPC_0) when hltrace knows the
// device's ASIC: from the device's answer to INFO HW_IP_INFO, from sysfs,
// or from -asic. When it sees no call at all it says so, and why that is
// expected of a program on the in-process simulator, which makes no
// system calls. -transfers pairs each command submission with
// the waits that saw it complete and prints the submit-to-completion
// latency, the submissions still outstanding and a latency histogram.
// -summary prints counts and latency percentiles per call and op at the
// end. -json writes all of it as JSON lines. -decode-cb decodes the
// LIN_DMA packets of Gaudi2 command buffers from the caller's memory, and
// on Gaudi3 the PQM packets of the PDMA channel rings at each interrupt
// wait, where the channel's mapped registers can be read from outside the
// process (the simulator's served nodes; on hardware they are MMIO, which
// process_vm_readv cannot read).
// Lost events are reported.
//
// # Probes
//
// hltrace needs root (or CAP_BPF and CAP_PERFMON) and a kernel with BTF.
// It attaches to the per-syscall tracepoints sys_{enter,exit}_{ioctl,
// openat,mmap,close} (tracefs, which it mounts when needed) and falls back
// to the raw sys_enter/sys_exit tracepoints (-probe raw), which need no
// tracefs; it needs no kprobes. -probe auto (the default) picks the first
// of those two that the kernel offers. Where the kernel has BTF for them it
// also times, with fentry/fexit, the habanalabs ioctl handlers
// (hl_*_ioctl, hl_ioctl_control), ib_uverbs_ioctl, and dma_buf_export,
// dma_buf_attach, dma_buf_dynamic_attach and dma_buf_map_attachment; the
// banner lists what is attached, what is absent and what the kernel
// refused.
//
// -probe kprobe and -probe fentry move the same decoding from the system
// call to the driver's ioctl entry functions: kprobe/kretprobe (needs
// CONFIG_KPROBES) or fentry/fexit (needs BTF for the function and BPF
// trampolines). By default they attach to hl_ioctl_control and drm_ioctl
// (the 6.2+ accel node enters the driver through the DRM core; only files
// with the accel major are reported from it) and hl_ioctl (older kernels,
// out-of-tree driver), skipping those the kernel lacks; -func names other
// functions of the same shape, long f(struct file *, unsigned int cmd,
// unsigned long arg), such as ib_uverbs_ioctl. The return value and
// duration are then the driver function's, and there are no openat, mmap
// or close events. kretprobe keeps a limited number of calls in flight
// (the kernel's default, at least two per CPU); many threads blocked in
// WAIT_CS at once can exceed it, and the calls beyond it are not
// reported, so fentry is the better choice where the kernel allows it.
// Auto never chooses these modes: they see nothing until the driver's
// module is loaded.
//
// # Filters
//
// The filters of what is traced run in the kernel: the processes (the
// command and its descendants, found through the sched_process_fork raw
// tracepoint), the ioctl request (the habanalabs
// requests in both encodings, RDMA_VERBS_IOCTL, the dma-buf ioctls), -p
// (thread group id), -c (comm) and -device (the device number of the
// inode behind the ioctl's fd, read through task->files with CO-RE, one of
// at most MaxDevices). openat is reported for paths under the Gaudi,
// uverbs and dma-buf device directories (or, with -device, for the paths
// of its nodes); mmap and close for file descriptors that
// were opened so, answered a traced ioctl, or came from EXPORT_DMABUF_FD.
// -errors and -slower choose, in hltrace, which traced calls are printed
// and summarised: -transfers and -decode-cb need every call.
//
// # Cost
//
// One event per finished call crosses a ring buffer; hltrace polls it
// every few milliseconds rather than being woken per event, and reports
// events lost when the ring buffer was full. BenchmarkTracedIoctl measures
// the time added to a traced ioctl.
//
// The BPF side is hltrace.bpf.c, compiled by bpf2go ("make generate").
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gaudi-go/gaudi/internal/cli"
)

func main() {
	launchIfAsked()
	os.Exit(hltrace(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Exit statuses without a command (with one, see launch.go); -h,
// -version and a bad command line exit as every command of this module
// does (cli.ExitCode: 0, 0 and 2).
const exitFailed = 1 // hltrace failed

// config is what the command line asks for.
type config struct {
	opts     Options
	out      outputOptions
	duration time.Duration // -duration; 0 for none
	output   string        // -o; "" for standard output (standard error with a command)
	argv     []string      // the command; nil for none
	device   *cli.DeviceFlag
	oldD     bool         // -d, the deprecated name of -device, was given
	devices  deviceFilter // what -device or GAUDI_DEVICE names; resolved by run
}

const synopsis = `hltrace [flags] -- command [args...]
hltrace [flags]`

const doc = `hltrace traces the calls processes make to the Gaudi driver (habanalabs
ioctls), to RDMA devices (the uverbs ioctl) and to dma-bufs, with the
openat, mmap and close of those files, from BPF programs in the kernel.
It needs root, or CAP_BPF and CAP_PERFMON.

With a command, hltrace starts it once its probes are attached, traces it
and every process it starts, and exits with its exit status. The trace
goes to standard error (or to -o FILE), so that the command's standard
output stays its own. SIGTERM, and a SIGINT that the terminal did not
send (Ctrl-C reaches the command directly), are passed on to it.
Without a command, hltrace traces every process, or those -p and -c
choose, until Ctrl-C or -duration.

-device (else GAUDI_DEVICE) keeps only the ioctls on the devices a
selector names, in the grammar of every command of this module; with a
command, -device also becomes the command's GAUDI_DEVICE, so that it
opens the device traced. The simulator's devices cannot be traced: a
program on the simulator makes no system call for its device.`

// sections are -h's exit statuses and examples.
var sections = []cli.Section{
	{Title: "Exit status", Text: `With a command: the command's exit status, or 128+N when signal N ended
it; 125 when hltrace fails (the command did not run, or ran untraced),
126 when the command cannot be run, 127 when it is not found.
Without a command: 0, or 1 when hltrace fails.
Either way: 0 after -h and -version, 2 for a bad flag or argument.`},
	{Title: "Examples", Text: `sudo hltrace -- ./train.sh --epochs 1
sudo hltrace -errors -slower 1ms -o trace.txt -- python3 app.py
sudo hltrace -device 1 -summary -- hlperf
sudo hltrace -p 1234 -summary -duration 10s
sudo hltrace -json -o trace.jsonl -decode-cb -- ./bench`},
}

// deviceUsage is -device's text: the shared selectors, and what hltrace
// does with them.
const deviceUsage = "trace only the ioctls on the devices a selector `SEL` names, as GAUDI_DEVICE does:\n" +
	"an index (0), a PCI address (0000:19:00.0 or 19:00.0), module:N or a chip (gaudi, gaudi2,\n" +
	"gaudi3) for the compute and control nodes of each Gaudi it matches; a device node\n" +
	"(/dev/accel/accel0, or any other, such as /dev/infiniband/uverbs0) for that node alone.\n" +
	"Their openat is reported, by that path. Default $GAUDI_DEVICE, else every device, as\n" +
	"-device \"\" says. With a command, the selector becomes its GAUDI_DEVICE. The\n" +
	"simulator's sim and sim:N are refused: a program on it makes no system calls."

// newCommand returns hltrace's command line, writing to stdout and
// stderr, with its flags bound to cfg and ring (-ringbuf).
func newCommand(cfg *config, ring *int, stdout, stderr io.Writer) *cli.Command {
	cmd := cli.New("hltrace", synopsis, doc)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Env = []cli.Env{{Name: "GAUDI_DEVICE", Doc: "the devices to trace without -device, in its grammar; the command inherits it"}, cli.EnvNamed("GAUDI_ROOT")}
	cmd.Sections = sections
	cmd.Flags.Lookup("device").Usage = deviceUsage
	cfg.device = cmd.Device
	fs := cmd.Flags
	fs.IntVar(&cfg.opts.PID, "p", 0, "trace only this process id (not with a command)")
	fs.StringVar(&cfg.opts.Comm, "c", "", "trace only tasks with this command `name`")
	fs.Func("d", "deprecated: the same as -device `SEL`", func(v string) error {
		cfg.oldD = true
		return cmd.Device.Set(v)
	})
	fs.StringVar(&cfg.opts.Probe, "probe", ProbeAuto, "`probes`: auto, tracepoint (syscall tracepoints), raw (raw sys_enter/sys_exit), kprobe or fentry (on the ioctl functions, see -func)")
	fs.Func("func", "comma-separated ioctl entry `functions` for -probe kprobe and fentry (default hl_ioctl,hl_ioctl_control,drm_ioctl, those present)", func(v string) error {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				cfg.opts.IoctlFuncs = append(cfg.opts.IoctlFuncs, f)
			}
		}
		return nil
	})
	fs.BoolVar(&cfg.opts.NoFuncs, "no-funcs", false, "do not time driver and dma-buf functions with fentry/fexit")
	fs.IntVar(ring, "ringbuf", 8, "ring buffer size in `MiB`: a power of two from 1 to 1024")
	fs.BoolVar(&cfg.out.JSON, "json", false, "write JSON lines")
	fs.BoolVar(&cfg.out.Summary, "summary", false, "print counts and latency percentiles per call and op at the end, instead of each call")
	fs.BoolVar(&cfg.out.Transfers, "transfers", false, "pair each CS with the waits that saw it complete, instead of printing each call")
	fs.BoolVar(&cfg.out.DecodeCB, "decode-cb", false, "decode the LIN_DMA packets of Gaudi2 command buffers submitted in a CS, and the PQM packets of Gaudi3 PDMA channel rings at each interrupt wait (where the channel's block can be read: the simulator's served nodes, not hardware)")
	fs.BoolVar(&cfg.out.Errors, "errors", false, "print and summarise only the calls that failed")
	cli.DurationVar(fs, &cfg.out.Slower, "slower", 0, "print and summarise only the calls that took longer than this `duration` (such as 1ms)")
	fs.Func("asic", "name queues, engines and blocks as those of this `ASIC` (gaudi, gaudi2 or gaudi3) on devices hltrace cannot identify", func(v string) error {
		a, err := parseASIC(v)
		cfg.out.ASIC = a
		return err
	})
	fs.StringVar(&cfg.output, "o", "", "write the trace to this `file` instead of standard output (standard error with a command)")
	cli.DurationVar(fs, &cfg.duration, "duration", 0, "stop tracing after this long (default: until interrupted, or until the command exits)")
	return cmd
}

// parseArgs reads the command line. For -h and -version it has written
// the help or the version to stdout, and it returns an error for which
// cli.ExitCode is 0; a bad command line it has reported on stderr, and
// it returns an error matching cli.ErrUsage.
func parseArgs(args []string, stdout, stderr io.Writer) (*cli.Command, *config, error) {
	cfg := new(config)
	var ring int
	cmd := newCommand(cfg, &ring, stdout, stderr)
	if err := cmd.Parse(args); err != nil {
		return cmd, nil, err
	}
	if cmd.Flags.NArg() > 0 {
		cfg.argv = cmd.Flags.Args()
	}
	given := map[string]bool{}
	cmd.Flags.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if ring < 1 || ring > 1024 || ring&(ring-1) != 0 {
		return cmd, nil, cmd.UsageError("-ringbuf %d: the size is in MiB and must be a power of two from 1 to 1024", ring)
	}
	cfg.opts.RingSize = ring << 20
	switch {
	case given["d"] && given["device"]:
		return cmd, nil, cmd.UsageError("-d is the old name of -device: give one")
	case cfg.opts.PID < 0:
		return cmd, nil, cmd.UsageError("-p %d: not a process id", cfg.opts.PID)
	case cfg.opts.PID != 0 && cfg.argv != nil:
		return cmd, nil, cmd.UsageError("-p and a command exclude each other: with a command, hltrace traces the command and its children")
	case !validProbe(cfg.opts.Probe):
		return cmd, nil, cmd.UsageError("-probe %q: want auto, tracepoint, raw, kprobe or fentry", cfg.opts.Probe)
	case cfg.out.Slower < 0:
		return cmd, nil, cmd.UsageError("-slower %v: the duration must not be negative", cfg.out.Slower)
	case cfg.duration < 0:
		return cmd, nil, cmd.UsageError("-duration %v: the duration must not be negative", cfg.duration)
	case cfg.out.Transfers && cfg.out.filtered():
		return cmd, nil, cmd.UsageError("%s select calls, and -transfers shows every transfer: use one or the other", cfg.out.filters())
	}
	// The simulator's selectors are a bad argument on the command line
	// (in GAUDI_DEVICE, run reports them as a failure).
	if given["device"] || given["d"] {
		sel, err := cmd.Device.Selection()
		if err == nil && sel.Selector.Sim {
			_, err = resolveDevices(sel, sysfsRoot)
			return cmd, nil, cmd.UsageError("%w", err)
		}
	}
	return cmd, cfg, nil
}

// hltrace runs the command line args and returns the exit status.
func hltrace(args []string, stdin *os.File, stdout, stderr io.Writer) int {
	cmd, cfg, err := parseArgs(args, stdout, stderr)
	if err != nil {
		return cmd.Report(err)
	}
	if cfg.oldD {
		fmt.Fprintf(stderr, "hltrace: -d is deprecated: use -device, which takes the selectors of GAUDI_DEVICE\n")
	}
	return run(cfg, stdin, stdout, stderr)
}

// bannerWidth is the width banner lines are wrapped to after "hltrace: ".
const bannerWidth = 80 - len("hltrace: ")

// run traces as cfg says, writing the trace to stdout (stderr with a
// command) or the -o file and diagnostics to stderr, and returns the exit
// status.
func run(cfg *config, stdin *os.File, stdout, stderr io.Writer) int {
	failed := exitFailed
	var path string
	if cfg.argv != nil {
		failed = exitTraceFailed
		var code int
		var err error
		if path, code, err = findCommand(cfg.argv[0]); err != nil {
			fmt.Fprintf(stderr, "hltrace: %v\n", err)
			return code
		}
	}
	sel, err := cfg.device.Selection()
	if err == nil {
		cfg.devices, err = resolveDevices(sel, sysfsRoot)
	}
	if err != nil {
		fmt.Fprintf(stderr, "hltrace: %v\n", err)
		return failed
	}
	cfg.opts.Devices = cfg.devices.nodes
	w := stdout
	if cfg.argv != nil {
		w = stderr
	}
	var file *os.File
	if cfg.output != "" {
		f, err := os.Create(cfg.output)
		if err != nil {
			fmt.Fprintf(stderr, "hltrace: %v\n", err)
			return failed
		}
		file, w = f, f
		defer f.Close() // again after the Close below: harmless
	}

	// -p holds the process by a pidfd from here on: a pid that names no
	// process is refused now rather than traced for the whole duration,
	// and the trace ends when the process exits.
	var gone <-chan struct{}
	if cfg.opts.PID != 0 {
		w, err := watchPID(cfg.opts.PID)
		if err != nil {
			fmt.Fprintf(stderr, "hltrace: -p %d: %v\n", cfg.opts.PID, err)
			return failed
		}
		defer w.close()
		gone = w.gone
	}

	cfg.opts.Follow = cfg.argv != nil
	t, err := Open(cfg.opts)
	if err != nil {
		fmt.Fprintf(stderr, "hltrace: %v\n", err)
		return failed
	}
	defer t.Close()
	// Signals are caught from before the banner says Ctrl-C stops the
	// trace, and before the command starts, so that none kills hltrace.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	for _, l := range append(t.DescribeLines(bannerWidth), cfg.devices.describe(bannerWidth)...) {
		fmt.Fprintf(stderr, "hltrace: %s\n", l)
	}
	if cfg.output != "" {
		fmt.Fprintf(stderr, "hltrace: writing the trace to %s\n", cfg.output)
	}

	var cmd *command
	if cfg.argv != nil {
		cmd, err = startCommand(cfg.argv, path, cfg.devices.commandEnv(), stdin, stdout, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "hltrace: %v\n", err)
			return failed
		}
		if err := t.Follow(cmd.pid()); err != nil {
			cmd.abort()
			fmt.Fprintf(stderr, "hltrace: %v; %s did not run\n", err, cmd.name)
			return failed
		}
		fmt.Fprintf(stderr, "hltrace: tracing %s (pid %d) and the processes it starts\n", cmd.name, cmd.pid())
		if err := cmd.run(); err != nil {
			cmd.abort()
			fmt.Fprintf(stderr, "hltrace: %v\n", err)
			return failed
		}
	} else {
		fmt.Fprintf(stderr, "hltrace: tracing %s; Ctrl-C to stop\n", cfg.opts.who())
	}

	p := newPrinter(w, cfg.out, t.Wall)
	start := time.Now()
	err = trace(t, p, cfg.duration, cmd, gone, sigs)
	if gone != nil {
		select {
		case <-gone:
			fmt.Fprintf(stderr, "hltrace: process %d exited; stopped tracing\n", cfg.opts.PID)
		default:
		}
	}
	if err == nil {
		err = report(t, p, stderr, cfg, cmd, time.Since(start))
	}
	if err == nil && file != nil {
		err = file.Close()
	}
	if err != nil {
		fmt.Fprintf(stderr, "hltrace: %v\n", err)
	}
	if cmd == nil {
		if err != nil {
			return failed
		}
		return 0
	}
	select {
	case <-cmd.done:
	default:
		t.Close()
		fmt.Fprintf(stderr, "hltrace: stopped tracing; waiting for %s (pid %d) to exit\n", cmd.name, cmd.pid())
		<-cmd.done
	}
	fmt.Fprintf(stderr, "hltrace: %s (pid %d) %s\n", cmd.name, cmd.pid(), describeExit(cmd.state))
	if err != nil {
		return exitTraceFailed
	}
	return exitStatus(cmd.state)
}

// who says which processes the options trace, for the banner.
func (o *Options) who() string {
	var parts []string
	if o.PID != 0 {
		parts = append(parts, fmt.Sprintf("pid %d", o.PID))
	}
	if o.Comm != "" {
		parts = append(parts, fmt.Sprintf("tasks named %q", o.Comm))
	}
	if len(parts) == 0 {
		parts = append(parts, "every process")
	}
	switch len(o.Devices) {
	case 0:
	case 1:
		parts = append(parts, "on "+o.Devices[0].Path)
	default:
		parts = append(parts, fmt.Sprintf("on %d device nodes", len(o.Devices)))
	}
	return strings.Join(parts, ", ")
}

// trace reads events into p until a signal on sigs (without a command),
// the command's exit, the -p process's exit (gone) or dur ends it. With a command, the signals are
// passed on to it while it runs, and do not stop the trace.
func trace(t *Tracer, p *printer, dur time.Duration, cmd *command, gone <-chan struct{}, sigs <-chan os.Signal) error {
	var timeout <-chan time.Time
	if dur > 0 {
		timeout = time.After(dur)
	}
	exited := gone
	if cmd != nil {
		exited = cmd.done
		go func() {
			for {
				select {
				case sig := <-sigs:
					cmd.forward(sig)
				case <-cmd.done:
					return
				}
			}
		}()
	}
	// Read wakes up at least every tick to notice a stop; after a stop,
	// events already in the ring still reach the reader for a short grace
	// period (the command's are all there once it has exited), and then
	// the loop ends even under steady traffic.
	const tick, grace = 100 * time.Millisecond, 50 * time.Millisecond
	var stopAt atomic.Int64
	done := make(chan struct{})
	defer close(done)
	go func() {
		var interrupted <-chan os.Signal
		if cmd == nil {
			interrupted = sigs
		}
		select {
		case <-interrupted:
		case <-timeout:
		case <-exited:
		case <-done:
			return
		}
		stopAt.Store(time.Now().Add(grace).UnixNano())
	}()

	var ev Event
	for {
		now := time.Now()
		if at := stopAt.Load(); at != 0 && now.UnixNano() > at {
			return nil
		}
		t.SetDeadline(now.Add(tick))
		err := t.Read(&ev)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if err := p.flush(); err != nil {
				return err
			}
			continue
		}
		if errors.Is(err, os.ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := p.event(&ev); err != nil {
			return err
		}
		if t.reader.AvailableBytes() == 0 {
			if err := p.flush(); err != nil {
				return err
			}
		}
	}
}

// report ends the output, and says on stderr what was lost and, when
// nothing was seen, why that can be.
func report(t *Tracer, p *printer, stderr io.Writer, cfg *config, cmd *command, took time.Duration) error {
	c, err := t.Counters()
	if err != nil {
		return err
	}
	if c.Lost > 0 || c.InflightFull > 0 {
		fmt.Fprintf(stderr, "hltrace: lost %d events (ring buffer full; try a larger -ringbuf), %d calls untraced (too many in flight)\n", c.Lost, c.InflightFull)
	}
	if cmd != nil {
		pids, err := t.Followed()
		if err != nil {
			return err
		}
		switch len(pids) {
		case 0:
		case 1:
			fmt.Fprintf(stderr, "hltrace: a process %s started is still running, no longer traced: pid %d\n", cmd.name, pids[0])
		default:
			fmt.Fprintf(stderr, "hltrace: %d processes %s started are still running, no longer traced: pids %s\n",
				len(pids), cmd.name, joinInts(pids, 8))
		}
	}
	if c.FollowFull > 0 {
		fmt.Fprintf(stderr, "hltrace: %d processes the command started were not traced (too many processes at once)\n", c.FollowFull)
	}
	if err := p.finish(c); err != nil {
		return err
	}
	if hint := p.asicHint(); hint != "" {
		for _, l := range wrapWords(hint, bannerWidth) {
			fmt.Fprintf(stderr, "hltrace: %s\n", l)
		}
	}
	var who string
	if cmd != nil {
		who = fmt.Sprintf("%s (pid %d) or the processes it started", cmd.name, cmd.pid())
	} else {
		if cfg.duration > 0 && took > cfg.duration {
			took = cfg.duration // and the grace period
		}
		who = fmt.Sprintf("%s in %v", cfg.opts.who(), took.Round(100*time.Millisecond))
	}
	writeNothingSeen(stderr, p, c, who)
	return nil
}

// simulatorNote explains why a program may issue no call hltrace sees.
const simulatorNote = "A program on the in-process simulator (GAUDI_DEVICE=sim, or no Gaudi " +
	"on this machine) has its device calls answered inside the process, without system calls, " +
	"so there is nothing to trace. hltrace sees the calls a program makes on a device node " +
	"(/dev/accel/accel*, /dev/hl*); a simulator served as a device node would be traceable too."

// writeNothingSeen says so when no traced ioctl arrived, or none passed
// the filters, instead of leaving an empty trace to be read as a result.
func writeNothingSeen(w io.Writer, p *printer, c Counters, who string) {
	if c.Lost > 0 {
		return // something was seen, and lost
	}
	if p.ioctls == 0 {
		msg := "saw no Gaudi, RDMA or dma-buf ioctl from " + who
		if p.calls > 0 {
			msg += fmt.Sprintf(" (only %d openat, mmap or close calls)", p.calls)
		}
		for _, l := range wrapWords(msg+". "+simulatorNote, bannerWidth) {
			fmt.Fprintf(w, "hltrace: %s\n", l)
		}
		return
	}
	if p.matched == 0 && p.opts.filtered() {
		fmt.Fprintf(w, "hltrace: saw %d calls; none matched %s\n", p.calls, p.opts.filters())
	}
}

// wrapWords breaks text into lines of at most width columns, where its
// words allow, continuation lines indented by two spaces.
func wrapWords(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = " "
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

// joinInts lists at most max numbers, with "..." when there are more.
func joinInts(v []int, max int) string {
	var parts []string
	for i, n := range v {
		if i == max {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, strconv.Itoa(n))
	}
	return strings.Join(parts, ", ")
}

// validProbe reports whether mode is a -probe hltrace knows (preflight).
func validProbe(mode string) bool {
	switch mode {
	case ProbeAuto, ProbeTracepoint, ProbeRaw, ProbeKprobe, ProbeFentry:
		return true
	}
	return false
}
