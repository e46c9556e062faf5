package main

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/simdevice"
)

// parse parses and checks args as hlperf does.
func parse(args ...string) (*config, string, error) {
	cfg, cmd := newConfig()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Parse(args)
	if err == nil {
		err = cfg.check(cmd)
	}
	return cfg, errOut.String(), err
}

// TestSizeFlags are the stumbles of issue 15: -min 4KB and -min 4k ran
// at 4 bytes and -min 1.5M at 1 MiB.
func TestSizeFlags(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		min, max uint64
	}{
		{nil, 4096, 64 << 20},
		{[]string{"-min", "4KB"}, 4000, 64 << 20},
		{[]string{"-min", "4k"}, 4096, 64 << 20},
		{[]string{"-min", "4kB", "-max", "1MB"}, 4000, 1e6},
		{[]string{"-min", "1.5M", "-max", "1.5M"}, 1572864, 1572864},
		{[]string{"-min", "1", "-max", "16GiB"}, 1, 16 << 30},
		{[]string{"-max", "64 MiB"}, 4096, 64 << 20},
	} {
		cfg, msg, err := parse(tc.args...)
		if err != nil || uint64(cfg.min) != tc.min || uint64(cfg.max) != tc.max {
			t.Errorf("%q: min %d max %d, %v %s; want %d %d", tc.args, cfg.min, cfg.max, err, msg, tc.min, tc.max)
		}
	}
}

// TestBadFlags checks that every bad command line is a usage error
// (exit status 2) with a message, before any device is opened.
func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-min", "4KX"}, `bad size "4KX": unknown unit "KX"`},
		{[]string{"-min", "-4K"}, `bad size "-4K": negative`},
		{[]string{"-max", "0.1K"}, "not a whole number of bytes"},
		{[]string{"-max", "17179869184G"}, "more than 2^64-1 bytes"},
		{[]string{"-min", "0"}, "-min must be at least 1 byte"},
		{[]string{"-min", "1M", "-max", "4K"}, "-max 4 KiB is below -min 1 MiB"},
		{[]string{"-warmup", "-1"}, "-warmup -1 is negative"},
		{[]string{"-json", "-csv"}, "-json and -csv exclude each other"},
		{[]string{"-streams", "5"}, "-streams 5: the DMA engines take 1 to 4 streams"},
		{[]string{"-streams", "0"}, "-streams 0"},
		{[]string{"-iters", "0"}, "-iters 0: need at least 1 timed copy"},
		{[]string{"-iters", "5", "-duration", "1s"}, "-iters and -duration exclude each other"},
		{[]string{"-duration", "-1s"}, "-duration -1s: want a positive duration"},
		{[]string{"-parallel"}, "-parallel runs several devices at once: it needs -all"},
		{[]string{"-pass-fraction", "0"}, "-pass-fraction 0 outside (0, 1]"},
		{[]string{"-pass-fraction", "1.5"}, "-pass-fraction 1.5 outside"},
		{[]string{"-dir", "h2d,up"}, `-dir: unknown direction "up"`},
		{[]string{"-dir", "h2d,h2d"}, `direction "h2d" given twice`},
		{[]string{"-dir", ""}, `unknown direction ""`},
		{[]string{"-device", "sim:x"}, `bad device selector "sim:x"`},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-plot", "20"}, "-plot 20: a plot needs 40 columns or more (0 for none)"},
		{[]string{"-plot", "-1"}, "-plot -1: a plot needs 40 columns or more"},
		{[]string{"-plot", "80", "-json"}, "-plot draws in the table: not with -json or -csv"},
	} {
		_, msg, err := parse(tc.args...)
		if !errors.Is(err, cli.ErrUsage) || cli.ExitCode(err) != 2 || !strings.Contains(msg, tc.msg) || !strings.Contains(msg, "run hlperf -h") {
			t.Errorf("%q: %v (exit %d), stderr %q; want a usage error with %q", tc.args, err, cli.ExitCode(err), msg, tc.msg)
		}
	}
}

func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		min, max uint64
		want     []uint64
	}{
		{4 << 10, 1 << 20, []uint64{4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20}},
		{4 << 10, 100 << 10, []uint64{4 << 10, 16 << 10, 64 << 10, 100 << 10}},
		{4096, 4096, []uint64{4096}},
		{1000, 5000, []uint64{1000, 4000, 5000}},
		{1 << 62, 1<<64 - 1, []uint64{1 << 62, 1<<64 - 1}},
	} {
		c := &config{min: cli.Size(tc.min), max: cli.Size(tc.max)}
		if got := c.sizes(); !slices.Equal(got, tc.want) {
			t.Errorf("sizes(%d, %d) = %v, want %v", tc.min, tc.max, got, tc.want)
		}
	}
}

// TestBuffersPerDirection: only what the directions need is allocated
// (today -max 16G took two host and two device buffers whatever the
// direction).
func TestBuffersPerDirection(t *testing.T) {
	for _, tc := range []struct {
		dirs        []string
		hosts, devs int
	}{
		{[]string{"h2d"}, 1, 1},
		{[]string{"d2h"}, 1, 1},
		{[]string{"h2d", "d2h"}, 1, 1},
		{[]string{"d2d"}, 0, 2},
		{[]string{"h2d", "d2d"}, 1, 2},
		{[]string{"bidir"}, 2, 2},
		{allDirs, 2, 2},
	} {
		c := &config{dirs: tc.dirs}
		if h, d := c.buffers(); h != tc.hosts || d != tc.devs {
			t.Errorf("%v: %d host and %d device buffers, want %d and %d", tc.dirs, h, d, tc.hosts, tc.devs)
		}
	}
	// And allocate takes that much.
	d, err := simdevice.Open("sim")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b, err := allocate(&config{dirs: []string{"d2d"}, max: 8 << 20}, m)
	if err != nil {
		t.Fatal(err)
	}
	u, err := d.DRAMUsage()
	if err != nil {
		t.Fatal(err)
	}
	page := d.HWIPInfo().DRAMPageSize
	if len(b.hosts) != 0 || len(b.devs) != 2 || u.Context != 2*((8<<20+page-1)/page*page) {
		t.Errorf("d2d allocated %d host and %d device buffers, %d bytes of DRAM", len(b.hosts), len(b.devs), u.Context)
	}
}

// TestTooBig checks that runs beyond the device's memory or the host's
// are refused before any buffer is allocated, with the sizes involved.
func TestTooBig(t *testing.T) {
	old := memAvailable
	memAvailable = func() (uint64, error) { return 10 << 30, nil }
	t.Cleanup(func() { memAvailable = old })
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-max", "16G"}, "-max 16 GiB: the run needs 64 GiB of host memory (2 host buffers of 16 GiB and 2 simulated device buffers of 16 GiB, which the simulator keeps in host memory); this machine has 10 GiB available (MemAvailable)"},
		{[]string{"-max", "6G", "-dir", "h2d"}, "-max 6 GiB: the run needs 12 GiB of host memory (1 host buffer of 6 GiB and 1 simulated device buffer of 6 GiB"},
		{[]string{"-max", "3G", "-dir", "h2d", "-all", "-parallel"}, "the run needs 12 GiB of host memory (1 host buffer of 3 GiB and 1 simulated device buffer of 3 GiB, which the simulator keeps in host memory, for each of 2 devices at once)"},
		{[]string{"-max", "64G", "-dir", "d2d"}, "-max 64 GiB: the run needs 129 GiB of device memory (2 device buffers of 64 GiB, in pages of 768 MiB); GAUDI2 module 0 (sim:accel0) has 95.2 GiB free"},
		{[]string{"-max", "1T", "-dir", "h2d"}, "-max 1 TiB: the run needs 1 TiB of device memory (1 device buffer of 1 TiB, in pages of 768 MiB)"},
		{[]string{"-streams", "3"}, "-streams 3: GAUDI2 has 2 DMA streams per direction for users"},
	} {
		args := append([]string{"-device", "sim", "-iters", "1"}, tc.args...)
		code, out, errOut := runHlperf(t, args...)
		if code != 1 || out != "" || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %q", tc.args, code, out, errOut, tc.msg)
		}
	}
	// Nothing was left allocated or owned.
	d, err := simdevice.Open("sim:0")
	if err != nil {
		t.Fatal(err)
	}
	if u, err := d.DRAMUsage(); err != nil || u.Context != 0 || simdevice.Sim(d).ResidentDRAM() > 64<<20 {
		t.Errorf("after refused runs: %+v, %v", u, err)
	}
	d.Close()
}
