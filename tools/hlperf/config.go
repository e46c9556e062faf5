package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gaudi-go/gaudi/internal/cli"
)

// The directions hlperf measures, in the order it reports them.
var allDirs = []string{"h2d", "d2h", "d2d", "bidir"}

// config is the command line, checked.
type config struct {
	dirsText     string
	dirs         []string
	min, max     cli.Size
	iters        int
	duration     time.Duration
	warmup       int
	streams      int
	json, csv    bool
	verify       bool
	all          bool
	parallel     bool
	passFraction float64
	// plot is the width of the bandwidth plot under each device's table,
	// 0 for none: -plot, else the terminal's width (plotWidth).
	plot int

	progress bool // show progress on stderr
	// set records the flags given on the command line, for the report.
	set []string
}

const synopsis = `hlperf [-device SEL] [-all [-parallel]] [-dir h2d,d2h,d2d,bidir]
       [-min SIZE] [-max SIZE] [-iters N | -duration D] [-warmup N]
       [-streams N] [-verify] [-pass-fraction F] [-json | -csv | -plot COLUMNS]`

const doc = `hlperf measures DMA bandwidth and latency on a Gaudi, or on the simulator when
none is present, over a sweep of sizes from -min to -max (factors of four).
Each sample is one copy waited for; each point reports the sample count, the
latency (min, median, mean, P99 from 100 samples, max; nearest-rank) and the
bandwidth from the same samples (bytes over the median and over the mean
latency, GB/s = 1e9 bytes/s). Simulated results are labelled as such. The
verdict compares h2d and d2h at the largest size with -pass-fraction of the
PCIe link's bandwidth (sysfs current_link_speed and current_link_width).
With -all a summary gives each device's result (PASS, FAIL, NO VERDICT) on
one line, the devices skipped as busy and, with -parallel, the aggregate
bandwidth; a failed device makes the exit status 1. Ctrl-C prints the
results so far.

Sizes: K, M, G, T, KiB ... TiB are powers of 1024; KB, MB, GB, TB powers of
1000; any case; a fraction when the result is whole bytes (1.5M).`

// newConfig returns the command with hlperf's flags bound to a config.
func newConfig() (*config, *cli.Command) {
	cfg := &config{min: 4 << 10, max: 64 << 20}
	cmd := cli.New("hlperf", synopsis, doc)
	fs := cmd.Flags
	fs.StringVar(&cfg.dirsText, "dir", strings.Join(allDirs, ","), "directions to measure, comma-separated: h2d, d2h, d2d, bidir")
	fs.Var(&cfg.min, "min", "smallest `SIZE`")
	fs.Var(&cfg.max, "max", "largest `SIZE`")
	fs.IntVar(&cfg.iters, "iters", 20, "timed copies per point (direction and size)")
	cli.DurationVar(fs, &cfg.duration, "duration", 0, "time each point for this long instead of -iters copies (such as 10s)")
	fs.IntVar(&cfg.warmup, "warmup", 2, "untimed copies before each point's samples")
	fs.IntVar(&cfg.streams, "streams", 2, "DMA queues per direction a copy is striped over (Gaudi: up to 4; Gaudi2: up to 2; Gaudi3: PDMA channels, up to 4)")
	fs.BoolVar(&cfg.json, "json", false, "print one JSON document with the run's metadata")
	fs.BoolVar(&cfg.csv, "csv", false, "print CSV, one row per point, each with the run's metadata")
	fs.BoolVar(&cfg.verify, "verify", false, "check the destination's bytes after each point")
	fs.BoolVar(&cfg.all, "all", false, "run on every device -device selects (default: every Gaudi, else every simulated device), in turn")
	fs.BoolVar(&cfg.parallel, "parallel", false, "with -all, run on all the devices at once")
	fs.Float64Var(&cfg.passFraction, "pass-fraction", 0.7, "share of the PCIe link's bandwidth h2d and d2h must reach to pass")
	fs.IntVar(&cfg.plot, "plot", 0, "draw each device's bandwidth against size, `COLUMNS` wide, under its table; 0 for none\n(default: the terminal's width, up to 100, when stdout is a terminal of 60 columns or more)")
	return cfg, cmd
}

// maxStreams is the most -streams any ASIC takes (dma.Options.Streams).
const maxStreams = 4

// verdictMinSize is the smallest size the verdict judges: smaller copies
// spend too much of their time in submission to show the link's rate.
const verdictMinSize = 16 << 20

// check validates the parsed flags against each other, before any
// device is opened. Errors are usage errors, already reported.
func (c *config) check(cmd *cli.Command) error {
	cmd.Flags.Visit(func(f *flag.Flag) { c.set = append(c.set, f.Name) })
	given := func(name string) bool { return slices.Contains(c.set, name) }
	dirs, err := parseDirs(c.dirsText)
	if err != nil {
		return cmd.UsageError("-dir: %v", err)
	}
	c.dirs = dirs
	switch {
	case cmd.Flags.NArg() > 0:
		return cmd.UsageError("unexpected argument %q", cmd.Flags.Arg(0))
	case c.json && c.csv:
		return cmd.UsageError("-json and -csv exclude each other: choose one output")
	case c.min == 0:
		return cmd.UsageError("-min must be at least 1 byte")
	case c.max < c.min:
		return cmd.UsageError("-max %s is below -min %s", cli.FormatSize(uint64(c.max)), cli.FormatSize(uint64(c.min)))
	case c.warmup < 0:
		return cmd.UsageError("-warmup %d is negative", c.warmup)
	case given("duration") && c.duration <= 0:
		return cmd.UsageError("-duration %v: want a positive duration, such as 10s", c.duration)
	case given("duration") && given("iters"):
		return cmd.UsageError("-iters and -duration exclude each other: give a count or a time")
	case c.duration == 0 && c.iters < 1:
		return cmd.UsageError("-iters %d: need at least 1 timed copy", c.iters)
	case c.streams < 1 || c.streams > maxStreams:
		return cmd.UsageError("-streams %d: the DMA engines take 1 to %d streams per direction (Gaudi2 has 2)", c.streams, maxStreams)
	case c.parallel && !c.all:
		return cmd.UsageError("-parallel runs several devices at once: it needs -all")
	case !(c.passFraction > 0 && c.passFraction <= 1):
		return cmd.UsageError("-pass-fraction %v outside (0, 1]", c.passFraction)
	case c.plot != 0 && c.plot < minPlotWidth:
		return cmd.UsageError("-plot %d: a plot needs %d columns or more (0 for none)", c.plot, minPlotWidth)
	case c.plot != 0 && (c.json || c.csv):
		return cmd.UsageError("-plot draws in the table: not with -json or -csv")
	}
	return nil
}

// parseDirs reads a comma-separated list of directions, each once.
func parseDirs(s string) ([]string, error) {
	var out []string
	for _, d := range strings.Split(s, ",") {
		switch {
		case !slices.Contains(allDirs, d):
			return nil, fmt.Errorf("unknown direction %q (want h2d, d2h, d2d or bidir)", d)
		case slices.Contains(out, d):
			return nil, fmt.Errorf("direction %q given twice", d)
		}
		out = append(out, d)
	}
	return out, nil
}

// sizes returns the sweep: min, then factors of four, ending at max.
func (c *config) sizes() []uint64 {
	var out []uint64
	for s := uint64(c.min); s < uint64(c.max); s *= 4 {
		out = append(out, s)
		if s > uint64(c.max)/4 {
			break
		}
	}
	return append(out, uint64(c.max))
}

// buffers returns how many host and device buffers of -max bytes the
// chosen directions need: h2d and d2h one of each, d2d two device
// buffers, bidir two of each (one pair per direction, so the copies do not
// share memory).
func (c *config) buffers() (hosts, devs int) {
	for _, d := range c.dirs {
		switch d {
		case "h2d", "d2h":
			hosts, devs = max(hosts, 1), max(devs, 1)
		case "d2d":
			devs = 2
		case "bidir":
			hosts, devs = 2, 2
		}
	}
	return hosts, devs
}

// copies is how many copies one sample of direction dir makes.
func copies(dir string) int {
	if dir == "bidir" {
		return 2
	}
	return 1
}

// String is the configuration as flags, for the table's heading.
func (c *config) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "-dir %s -min %s -max %s", strings.Join(c.dirs, ","), cli.FormatSize(uint64(c.min)), cli.FormatSize(uint64(c.max)))
	if c.duration > 0 {
		fmt.Fprintf(&b, " -duration %v", c.duration)
	} else {
		fmt.Fprintf(&b, " -iters %d", c.iters)
	}
	fmt.Fprintf(&b, " -warmup %d -streams %d", c.warmup, c.streams)
	for _, f := range []struct {
		on   bool
		name string
	}{{c.verify, "-verify"}, {c.all, "-all"}, {c.parallel, "-parallel"}} {
		if f.on {
			b.WriteString(" " + f.name)
		}
	}
	return b.String()
}
