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
//	hltrace [-p pid] [-c comm] [-d /dev/accel/accel0] [-json] [-summary]
//	        [-transfers] [-decode-cb] [-duration 10s]
//	        [-probe auto|tracepoint|raw|kprobe|fentry] [-func f1,f2]
//
// By default it prints one line per call: time, pid, tid, comm, call,
// decoded arguments, "->" decoded results, "=" the return value or errno
// name, and the duration. -transfers pairs each command submission with
// the waits that saw it complete and prints the submit-to-completion
// latency, the submissions still outstanding and a latency histogram.
// -summary prints counts and latency percentiles per call and op at the
// end. -json writes all of it as JSON lines. -decode-cb decodes the
// LIN_DMA packets of Gaudi2 command buffers from the caller's memory.
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
// All filters run in the kernel: the ioctl request (the habanalabs
// requests in both encodings, RDMA_VERBS_IOCTL, the dma-buf ioctls), -p
// (thread group id), -c (comm) and -d (the device number of the inode
// behind the ioctl's fd, read through task->files with CO-RE). openat is
// reported for paths under the Gaudi, uverbs and dma-buf device
// directories (or the -d path); mmap and close for file descriptors that
// were opened so, answered a traced ioctl, or came from EXPORT_DMABUF_FD.
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
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	var (
		opts Options
		out  outputOptions
		dur  time.Duration
		ring int
	)
	flag.IntVar(&opts.PID, "p", 0, "trace only this process id")
	flag.StringVar(&opts.Comm, "c", "", "trace only tasks with this command name")
	flag.StringVar(&opts.Device, "d", "", "trace only ioctls on this device node (and report its openat)")
	flag.StringVar(&opts.Probe, "probe", ProbeAuto, "probes: auto, tracepoint (syscall tracepoints), raw (raw sys_enter/sys_exit), kprobe or fentry (on the ioctl functions, see -func)")
	flag.Func("func", "comma-separated ioctl entry functions for -probe kprobe and fentry (default hl_ioctl,hl_ioctl_control,drm_ioctl, those present)", func(v string) error {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				opts.IoctlFuncs = append(opts.IoctlFuncs, f)
			}
		}
		return nil
	})
	flag.BoolVar(&opts.NoFuncs, "no-funcs", false, "do not time driver and dma-buf functions with fentry/fexit")
	flag.IntVar(&ring, "ringbuf", 8, "ring buffer size in MiB (a power of two)")
	flag.BoolVar(&out.JSON, "json", false, "write JSON lines")
	flag.BoolVar(&out.Summary, "summary", false, "print counts and latency percentiles per call and op at the end, instead of each call")
	flag.BoolVar(&out.Transfers, "transfers", false, "pair each CS with the waits that saw it complete, instead of printing each call")
	flag.BoolVar(&out.DecodeCB, "decode-cb", false, "decode the LIN_DMA packets of Gaudi2 command buffers submitted in a CS")
	flag.DurationVar(&dur, "duration", 0, "stop after this long (default: until interrupted)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "hltrace: unexpected arguments:", flag.Args())
		os.Exit(2)
	}
	opts.RingSize = ring << 20

	if err := run(os.Stdout, os.Stderr, opts, out, dur); err != nil {
		fmt.Fprintln(os.Stderr, "hltrace:", err)
		os.Exit(1)
	}
}

// run traces until dur passes or a signal arrives, writing to w and
// diagnostics to diag.
func run(w, diag io.Writer, opts Options, out outputOptions, dur time.Duration) error {
	t, err := Open(opts)
	if err != nil {
		return err
	}
	defer t.Close()
	fmt.Fprintf(diag, "hltrace: %s; Ctrl-C to stop\n", t.Describe())

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(stop)
	var timeout <-chan time.Time
	if dur > 0 {
		timeout = time.After(dur)
	}
	// Read wakes up at least every tick to notice a stop; after a stop,
	// events already in the ring still reach the reader for a short grace
	// period, and then the loop ends even under steady traffic.
	const tick, grace = 100 * time.Millisecond, 50 * time.Millisecond
	var stopAt atomic.Int64
	done := make(chan struct{})
	go func() {
		select {
		case <-stop:
		case <-timeout:
		case <-done:
			return
		}
		stopAt.Store(time.Now().Add(grace).UnixNano())
	}()
	defer close(done)

	p := newPrinter(w, out, t.Wall)
	var ev Event
	for {
		now := time.Now()
		if at := stopAt.Load(); at != 0 && now.UnixNano() > at {
			break
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
			break
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
	c, err := t.Counters()
	if err != nil {
		return err
	}
	if c.Lost > 0 || c.InflightFull > 0 {
		fmt.Fprintf(diag, "hltrace: lost %d events (ring buffer full; try a larger -ringbuf), %d calls untraced (too many in flight)\n", c.Lost, c.InflightFull)
	}
	return p.finish(c)
}
