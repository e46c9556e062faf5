package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/uapi/dmabuf"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// TestFlagErrors checks that bad command lines are refused before
// anything is loaded, with exit status 2 and a message in the terms of
// the flag.
func TestFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-ringbuf", "3"}, "-ringbuf 3: the size is in MiB and must be a power of two from 1 to 1024"},
		{[]string{"-ringbuf", "0"}, "-ringbuf 0: the size is in MiB"},
		{[]string{"-ringbuf", "2048"}, "-ringbuf 2048: the size is in MiB"},
		{[]string{"-ringbuf", "-8"}, "-ringbuf -8: the size is in MiB"},
		{[]string{"-p", "12", "--", "true"}, "-p and a command exclude each other"},
		{[]string{"-p", "-3"}, "-p -3: not a process id"},
		{[]string{"-errors", "-transfers"}, "-errors select calls, and -transfers shows every transfer"},
		{[]string{"-slower", "1ms", "-transfers"}, "-slower 1ms select calls"},
		{[]string{"-slower", "-1ms"}, "-slower -1ms: the duration must not be negative"},
		{[]string{"-slower", "fast"}, `invalid value "fast" for flag -slower`},
		{[]string{"-duration", "-1s"}, "-duration -1s: the duration must not be negative"},
		{[]string{"-asic", "gaudi3"}, `-asic "gaudi3": want gaudi or gaudi2`},
		{[]string{"-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"-device", "sim"}, "-device sim: hltrace sees only the kernel's devices, and a program on the simulator makes no system call"},
		{[]string{"-device", "sim:1", "--", "true"}, "-device sim:1: hltrace sees only the kernel's devices"},
		{[]string{"-d", "sim"}, "-device sim: hltrace sees only the kernel's devices"},
		{[]string{"-device", "bogus"}, `invalid value "bogus" for flag -device`},
		{[]string{"-device", "0", "-d", "/dev/null"}, "-d is the old name of -device: give one"},
	} {
		var stdout, stderr bytes.Buffer
		code := hltrace(tc.args, nil, &stdout, &stderr)
		if want := cli.ExitCode(cli.ErrUsage); code != want || !strings.Contains(stderr.String(), tc.want) || !strings.Contains(stderr.String(), "hltrace -h") {
			t.Errorf("hltrace %q: status %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), want, tc.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("hltrace %q wrote to stdout: %q", tc.args, stdout.String())
		}
	}
}

func TestParseArgs(t *testing.T) {
	_, cfg, err := parseArgs([]string{"-ringbuf", "16", "-errors", "-slower", "2ms", "-asic", "Gaudi2", "-o", "f", "-device", "gaudi2",
		"--", "prog", "-x", "--", "y"}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.opts.RingSize != 16<<20 || !cfg.out.Errors || cfg.out.Slower != 2*time.Millisecond || cfg.out.ASIC != device.Gaudi2 ||
		cfg.output != "f" || !slices.Equal(cfg.argv, []string{"prog", "-x", "--", "y"}) || cfg.device.String() != "gaudi2" || cfg.oldD {
		t.Errorf("parsed %+v", cfg)
	}
	// Without "--", the first argument that is not a flag starts the command.
	_, cfg, err = parseArgs([]string{"-summary", "prog", "-summary"}, io.Discard, io.Discard)
	if err != nil || !slices.Equal(cfg.argv, []string{"prog", "-summary"}) || !cfg.out.Summary {
		t.Errorf("parsed %+v, %v", cfg, err)
	}
	// -d is -device's old name.
	_, cfg, err = parseArgs([]string{"-d", "/dev/null"}, io.Discard, io.Discard)
	if err != nil || cfg.device.String() != "/dev/null" || !cfg.oldD {
		t.Errorf("-d: parsed %+v, %v", cfg, err)
	}
}

func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := hltrace([]string{"-h"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("-h: status %d, stderr %q", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"Usage:\n  hltrace [flags] -- command [args...]\n  hltrace [flags]\n", "Flags:", "-errors", "-slower duration", "-ringbuf MiB", "-o file",
		"-device SEL", "as GAUDI_DEVICE does", "sim:N are refused", "-d SEL\n    \tdeprecated: the same as -device SEL", "-version",
		"Environment:\n  GAUDI_DEVICE", "Exit status:\n  With a command:", "128+N", "125", "126", "127", "2 for a bad flag",
		"Examples:\n  sudo hltrace", "-device 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("-h output lacks %q:\n%s", want, out)
		}
	}
	// The sections come in the shared order.
	last := -1
	for _, h := range []string{"Usage:", "Flags:", "Environment:", "Exit status:", "Examples:"} {
		i := strings.Index(out, "\n"+h)
		if h == "Usage:" {
			i = strings.Index(out, h)
		}
		if i <= last {
			t.Errorf("-h: %s is out of place:\n%s", h, out)
		}
		last = i
	}
	if stderr.Len() != 0 {
		t.Errorf("-h wrote to stderr: %q", stderr.String())
	}
}

func TestVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := hltrace([]string{"-version"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("-version: status %d, stderr %q", code, stderr.String())
	}
	out := stdout.String()
	if !strings.HasPrefix(out, "hltrace ") || !strings.Contains(out, runtime.Version()) || strings.Count(out, "\n") != 1 {
		t.Errorf("-version printed %q", out)
	}
}

// TestBannerLines checks that the banner of a tracer with every function
// list filled fits 80 columns, one statement per line, and loses no name.
func TestBannerLines(t *testing.T) {
	var names []string
	for _, f := range funcTargets {
		names = append(names, f.Name)
	}
	tr := &Tracer{Mode: ProbeKprobe, IoctlFuncs: []string{"hl_ioctl_control", "drm_ioctl"}, IoctlFuncsAbsent: []string{"hl_ioctl"},
		Funcs: names[:3], NoFuncs: names[3:8], FuncRefused: names[8:], FuncErrs: []string{"x: attach: boom"}}
	lines := tr.DescribeLines(bannerWidth)
	joined := strings.Join(lines, "\n")
	for _, l := range lines {
		if n := len("hltrace: " + l); n > 80 {
			t.Errorf("banner line of %d columns: %q", n, l)
		}
	}
	for _, n := range append(names, "hl_ioctl_control", "drm_ioctl", "hl_ioctl", "x: attach: boom") {
		if !strings.Contains(joined, n) {
			t.Errorf("banner lacks %s:\n%s", n, joined)
		}
	}
	if len(lines) < 6 {
		t.Errorf("banner of %d lines:\n%s", len(lines), joined)
	}
}

func TestWrap(t *testing.T) {
	got := wrapList("head:", []string{"aaaa", "bbbb", "cccc"}, 11)
	if want := []string{"head: aaaa,", "  bbbb,", "  cccc"}; !slices.Equal(got, want) {
		t.Errorf("wrapList = %q, want %q", got, want)
	}
	got = wrapWords("one two three four", 9)
	if want := []string{"one two", "  three", "  four"}; !slices.Equal(got, want) {
		t.Errorf("wrapWords = %q, want %q", got, want)
	}
}

// TestFilters runs failed, quick and slow calls through -errors and
// -slower, in the call view and the summary.
func TestFilters(t *testing.T) {
	evs := []*Event{
		synth(bpfCallCALL_HL_INFO, hl.DRM_IOCTL_HL_INFO, 0, 0, 10_000, &bpfInfoBody{Op: hl.HL_INFO_DRAM_USAGE}),                         // ok, 10µs
		synth(bpfCallCALL_HL_WAIT_CS, hl.DRM_IOCTL_HL_WAIT_CS, -int64(unix.ETIMEDOUT), 0, 5_000_000, &bpfWaitBody{Seq: 4}),              // failed, 5ms
		synth(bpfCallCALL_HL_MEMORY, hl.DRM_IOCTL_HL_MEMORY, 0, 0, 3_000_000, &bpfMemBody{Op: hl.HL_MEM_OP_ALLOC, In: [3]uint64{4096}}), // ok, 3ms
		synth(bpfCallCALL_HL_CB, hl.DRM_IOCTL_HL_CB, -int64(unix.EINVAL), 0, 2_000, &bpfCbBody{Op: hl.HL_CB_OP_CREATE}),                 // failed, 2µs
	}
	wall := func(ns uint64) time.Time { return t0.Add(time.Duration(ns)) }
	for _, tc := range []struct {
		opts outputOptions
		want []string // calls printed, in order
	}{
		{outputOptions{}, []string{"INFO", "WAIT_CS", "MEMORY", "CB"}},
		{outputOptions{Errors: true}, []string{"WAIT_CS", "CB"}},
		{outputOptions{Slower: time.Millisecond}, []string{"WAIT_CS", "MEMORY"}},
		{outputOptions{Errors: true, Slower: time.Millisecond}, []string{"WAIT_CS"}},
		{outputOptions{Slower: 10 * time.Millisecond}, nil},
	} {
		var buf bytes.Buffer
		p := newPrinter(&buf, tc.opts, wall)
		for _, e := range evs {
			if err := p.event(e); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.finish(Counters{}); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			if f := strings.Fields(l); len(f) > 4 {
				got = append(got, f[4])
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: printed %q, want %q:\n%s", tc.opts.filters(), got, tc.want, buf.String())
		}
		if p.matched != uint64(len(tc.want)) || p.calls != 4 || p.ioctls != 4 {
			t.Errorf("%s: matched %d calls %d ioctls %d", tc.opts.filters(), p.matched, p.calls, p.ioctls)
		}

		// The summary counts the calls that pass.
		buf.Reset()
		so := tc.opts
		so.Summary = true
		p = newPrinter(&buf, so, wall)
		for _, e := range evs {
			p.event(e)
		}
		p.finish(Counters{})
		for _, call := range []string{"INFO", "WAIT_CS", "MEMORY", "CB"} {
			row := regexpRow(buf.String(), call)
			if in := slices.Contains(tc.want, call); in != (row != "") {
				t.Errorf("%s: summary row for %s: %q (want one: %v):\n%s", tc.opts.filters(), call, row, in, buf.String())
			}
		}
		if tc.opts.filtered() && !strings.Contains(buf.String(), "matched "+tc.opts.filters()) {
			t.Errorf("%s: the summary does not say what matched:\n%s", tc.opts.filters(), buf.String())
		}
	}
}

// regexpRow returns the summary line for call, or "".
func regexpRow(out, call string) string {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == call {
			return l
		}
	}
	return ""
}

// TestNothingSeen checks what hltrace says about an empty trace.
func TestNothingSeen(t *testing.T) {
	wall := func(ns uint64) time.Time { return t0 }
	for _, tc := range []struct {
		name string
		opts outputOptions
		evs  []*Event
		lost uint64
		want string // "" for nothing said
	}{
		{"none", outputOptions{}, nil, 0, "saw no Gaudi, RDMA or dma-buf ioctl from the test. A program on the in-process simulator"},
		{"only openat", outputOptions{}, []*Event{synth[bpfOpenBody](bpfCallCALL_OPENAT, 0, 3, 0, 1, nil)}, 0,
			"saw no Gaudi, RDMA or dma-buf ioctl from the test (only 1 openat, mmap or close calls)"},
		{"filtered out", outputOptions{Errors: true}, []*Event{synth[bpfInfoBody](bpfCallCALL_HL_INFO, hl.DRM_IOCTL_HL_INFO, 0, 0, 1, nil)}, 0,
			"saw 1 calls; none matched -errors"},
		{"seen", outputOptions{}, []*Event{synth[bpfInfoBody](bpfCallCALL_HL_INFO, hl.DRM_IOCTL_HL_INFO, 0, 0, 1, nil)}, 0, ""},
		{"lost", outputOptions{}, nil, 5, ""},
	} {
		var out, diag bytes.Buffer
		p := newPrinter(&out, tc.opts, wall)
		for _, e := range tc.evs {
			p.event(e)
		}
		p.finish(Counters{Lost: tc.lost})
		writeNothingSeen(&diag, p, Counters{Lost: tc.lost}, "the test")
		got := strings.Join(strings.Fields(strings.ReplaceAll(diag.String(), "hltrace:", "")), " ")
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: said %q, want %q", tc.name, got, tc.want)
		}
		for _, l := range strings.Split(strings.TrimSpace(diag.String()), "\n") {
			if len(l) > 80 {
				t.Errorf("%s: line of %d columns: %q", tc.name, len(l), l)
			}
		}
	}
}

func TestSyncFlags(t *testing.T) {
	for _, tc := range []struct {
		v    uint64
		want string
	}{
		{0, "START"},
		{dmabuf.DMA_BUF_SYNC_END, "END"},
		{dmabuf.DMA_BUF_SYNC_READ, "START|READ"},
		{dmabuf.DMA_BUF_SYNC_END | dmabuf.DMA_BUF_SYNC_READ | dmabuf.DMA_BUF_SYNC_WRITE, "END|READ|WRITE"},
		{dmabuf.DMA_BUF_SYNC_END | 1<<10, "END|0x400"},
	} {
		if got := syncFlags(tc.v); got != tc.want {
			t.Errorf("syncFlags(%#x) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// fakeSysfs writes a sysfs tree with a Gaudi2 on the accel layout
// (char 511:0) and a first-generation Gaudi on the legacy layout (char
// 240:0), and a char device of another vendor (1:3).
func fakeSysfs(t *testing.T) string {
	root := t.TempDir()
	write := func(path, v string) {
		t.Helper()
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sys/dev/char/511:0/device/vendor", "0x1da3")
	write("sys/dev/char/511:0/device/device", "0x1020")
	write("sys/dev/char/511:0/device/revision", "0x02")
	write("sys/dev/char/240:0/pci_addr", "0000:19:00.0")
	write("sys/bus/pci/devices/0000:19:00.0/vendor", "0x1da3")
	write("sys/bus/pci/devices/0000:19:00.0/device", "0x1000")
	write("sys/bus/pci/devices/0000:19:00.0/revision", "0x01")
	write("sys/dev/char/1:3/device/vendor", "0x8086")
	write("sys/dev/char/1:3/device/device", "0x1020")
	return root
}

func dev(major, minor uint32) uint32 { return major<<20 | minor }

func TestASICResolver(t *testing.T) {
	root := fakeSysfs(t)
	r := newASICResolver(root, device.ASICUnknown)
	for _, tc := range []struct {
		rdev uint32
		want device.ASIC
	}{
		{dev(511, 0), device.Gaudi2},
		{dev(240, 0), device.Gaudi},
		{dev(1, 3), device.ASICUnknown}, // not Habana's
		{dev(9, 9), device.ASICUnknown}, // not in sysfs
		{0, device.ASICUnknown},
	} {
		if got := r.of(tc.rdev); got != tc.want {
			t.Errorf("of(%d:%d) = %v, want %v", tc.rdev>>20, tc.rdev&0xfffff, got, tc.want)
		}
	}

	// An answer to HW_IP_INFO names a device sysfs does not know; a
	// refused call's does not.
	answered := func(ret int64, rdev, id uint32, rev uint8) *Event {
		return synth(bpfCallCALL_HL_INFO, hl.DRM_IOCTL_HL_INFO, ret, 0, 1,
			&bpfInfoBody{Op: hl.HL_INFO_HW_IP_INFO, ReturnSize: 4096, Rdev: rdev, DeviceId: id, Revision: rev, Answered: 1})
	}
	r = newASICResolver(root, device.ASICUnknown)
	r.observe(answered(-int64(unix.ENOTTY), dev(7, 1), device.PCIDeviceGaudi2, 1))
	if got := r.of(dev(7, 1)); got != device.ASICUnknown {
		t.Errorf("a refused HW_IP_INFO made 7:1 a %v", got)
	}
	r = newASICResolver(root, device.ASICUnknown)
	r.observe(answered(0, dev(7, 2), device.PCIDeviceGaudi2, 9)) // a revision the table lacks
	r.observe(answered(0, dev(7, 3), device.PCIDeviceGaudiSec, 1))
	r.observe(answered(0, dev(1, 3), device.PCIDeviceGaudi, 1)) // the answer wins over sysfs
	for rdev, want := range map[uint32]device.ASIC{dev(7, 2): device.Gaudi2, dev(7, 3): device.Gaudi, dev(1, 3): device.Gaudi} {
		if got := r.of(rdev); got != want {
			t.Errorf("after HW_IP_INFO: of(%d:%d) = %v, want %v", rdev>>20, rdev&0xfffff, got, want)
		}
	}

	// -asic names what nothing else identifies, and only that.
	r = newASICResolver(root, device.Gaudi)
	if a, b := r.of(dev(9, 9)), r.of(dev(511, 0)); a != device.Gaudi || b != device.Gaudi2 {
		t.Errorf("with -asic gaudi: unknown device %v, sysfs Gaudi2 %v", a, b)
	}
}

// TestNames decodes CSs on devices of each ASIC: queue, engine and engine
// core names where the ASIC is known, numbers where it is not.
func TestNames(t *testing.T) {
	root := fakeSysfs(t)
	chunks := &bpfCsBody{NumExecute: 2, Nchunks: 2, Rdev: dev(511, 0)}
	chunks.Chunk[0] = bpfChunk{CbHandle: 0x1000, Queue: uint32(hl.GAUDI2_QUEUE_ID_PDMA_0_0), CbSize: 64}
	chunks.Chunk[1] = bpfChunk{CbHandle: 0x2000, Queue: uint32(hl.GAUDI2_QUEUE_ID_DCORE0_EDMA_0_0), CbSize: 64}
	onGaudi := *chunks
	onGaudi.Rdev = dev(240, 0)
	unknown := *chunks
	unknown.Rdev = dev(9, 9)
	unnamed := *chunks
	unnamed.Chunk[1].Queue = 100000

	cores := &bpfCsIdsBody{Flags: hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND, NumIds: 3, Nids: 3, Command: uint32(hl.HL_ENGINE_CORE_HALT), Rdev: dev(511, 0)}
	copy(cores.Id[:], []uint32{0, 6, 68})
	engines := &bpfCsIdsBody{Flags: hl.HL_CS_FLAGS_ENGINES_COMMAND, NumIds: 30, Nids: 2, Command: uint32(hl.HL_ENGINE_STALL), Rdev: dev(511, 0)}
	copy(engines.Id[:], []uint32{uint32(hl.GAUDI2_DCORE0_ENGINE_ID_TPC_0), 9999})
	coll := &bpfCsBody{Flags: hl.HL_CS_FLAGS_COLLECTIVE_WAIT, NumExecute: 1, Nchunks: 1, Rdev: dev(240, 0)}
	coll.Chunk[0] = bpfChunk{Queue: uint32(hl.GAUDI_QUEUE_ID_DMA_5_0), Engine: uint32(hl.GAUDI_ENGINE_ID_TPC_7)}
	reserve := &bpfCsBody{Flags: hl.HL_CS_FLAGS_RESERVE_SIGNALS_ONLY, InSeq: uint64(hl.GAUDI2_QUEUE_ID_PDMA_1_0)<<32 | 16, Rdev: dev(511, 0)}

	for _, tc := range []struct {
		name string
		e    *Event
		asic device.ASIC // -asic
		text []string
		json []string
	}{
		{"gaudi2 by sysfs", synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 0, 1, chunks), 0,
			[]string{"chunk0={queue=PDMA_0_0 cb=0x1000", "chunk1={queue=DCORE0_EDMA_0_0 cb=0x2000"},
			[]string{`"queue":0,"queue_name":"PDMA_0_0"`, `"queue":` + itoa(hl.GAUDI2_QUEUE_ID_DCORE0_EDMA_0_0) + `,"queue_name":"DCORE0_EDMA_0_0"`}},
		{"gaudi by sysfs", synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 0, 1, &onGaudi), 0,
			[]string{"chunk0={queue=DMA_0_0 cb=0x1000", "chunk1={queue=" + hl.GaudiQueueIDNames[hl.GaudiQueueID(hl.GAUDI2_QUEUE_ID_DCORE0_EDMA_0_0)] + " "},
			[]string{`"queue_name":"DMA_0_0"`}},
		{"unknown device", synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 0, 1, &unknown), 0,
			[]string{"chunk0={queue=0 cb=0x1000", "chunk1={queue=" + itoa(hl.GAUDI2_QUEUE_ID_DCORE0_EDMA_0_0) + " cb="},
			[]string{`"queue":0,"cb"`}},
		{"unknown device, -asic gaudi2", synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 0, 1, &unknown), device.Gaudi2,
			[]string{"chunk0={queue=PDMA_0_0 cb=0x1000"}, nil},
		{"a queue without a name", synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 0, 1, &unnamed), 0,
			[]string{"chunk0={queue=PDMA_0_0 ", "chunk1={queue=100000 cb="}, nil},
		{"engine cores", synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 0, 1, cores), 0,
			[]string{"flags=ENGINE_CORE_COMMAND cores=[SCHED_ARC0 TPC_QMAN_ARC0 NIC_QMAN_ARC23] n=3 command=CORE_HALT"},
			[]string{`"cores":[0,6,68],"cores_names":["SCHED_ARC0","TPC_QMAN_ARC0","NIC_QMAN_ARC23"]`}},
		{"engines", synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 0, 1, engines), 0,
			[]string{"flags=ENGINES_COMMAND engines=[DCORE0_TPC_0 9999] n=30 command=STALL"},
			[]string{`"engines_names":["DCORE0_TPC_0",""]`}},
		{"collective wait", synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 0, 1, coll), 0,
			[]string{"chunk0={queue=DMA_5_0 cb=0x0 size=0 flags=0 engine=TPC_7}"}, nil},
		{"signal reservation", synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 0, 1, reserve), 0,
			[]string{"flags=RESERVE_SIGNALS_ONLY restore=0 exec=0 signals=16 queue=PDMA_1_0"}, nil},
	} {
		var text, js bytes.Buffer
		p := newPrinter(&text, outputOptions{ASIC: tc.asic, SysFS: root}, func(uint64) time.Time { return t0 })
		p.event(tc.e)
		p.flush()
		p = newPrinter(&js, outputOptions{ASIC: tc.asic, SysFS: root, JSON: true}, func(uint64) time.Time { return t0 })
		p.event(tc.e)
		p.flush()
		for _, w := range tc.text {
			if !strings.Contains(text.String(), w) {
				t.Errorf("%s: text\n%s\nlacks %q", tc.name, text.String(), w)
			}
		}
		for _, w := range tc.json {
			if !strings.Contains(js.String(), w) {
				t.Errorf("%s: JSON\n%s\nlacks %q", tc.name, js.String(), w)
			}
		}
	}
}

func itoa[T ~uint32](v T) string { return strconv.FormatUint(uint64(v), 10) }
