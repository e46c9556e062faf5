// Command hlinfo reports the Gaudi devices of this machine, as hl-smi does:
// identity, state, memory, power, clocks, temperatures, the PCIe link,
// reset and error counters, the processes that hold each device, and the
// RDMA NICs with their PCIe distance to each Gaudi. With no Gaudi present,
// or with -device sim, it reports the simulator's devices in the same
// shape.
//
// Usage:
//
//	hlinfo [-device SEL] [-v] [-engines] [-json | -query-device FIELDS [-noheader]] [-l SECONDS [-count N]]
//	hlinfo -query-device help
//	hlinfo -h | -version
//
// Without flags it prints a table of every device that fits 80 columns,
// the processes that hold them and the RDMA NICs. -v adds every value of
// each device; -engines the driver's engine status dump. -json prints one
// JSON document (schema in tools/internal/devstat: numbers carry their
// unit in the key, absent values are null). -query-device prints the
// chosen fields as CSV, with hl-smi's -Q field names where hl-smi has
// the field (-query-device help lists them). -l repeats the report every
// interval until interrupted (or -count times); with -json each report is
// one line (JSON Lines), with -query-device the header is printed once.
//
// hl-smi's flags work where they cost nothing: -L lists the devices one
// per line, -q is -v (-d SECTIONS keeps some of its sections), -i is
// -device, and -f csv,noheader,nounits shapes -query-device's CSV.
//
// -device, and GAUDI_DEVICE without it, select devices as in every
// command of this module (internal/cli): an index, a PCI address,
// module:N, a node path or a chip name for hardware (a chip name selects
// every device of that chip); sim or sim:N for the simulator. A hardware
// selector on a machine without a Gaudi is an error, never a listing of
// the simulator. Listing opens control nodes only, so it works while
// other processes own the devices; seeing other users' processes needs
// root. -h prints the flags and the environment variables, -version the
// version and the JSON schema's.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/tools/internal/devstat"
)

const (
	synopsis = `hlinfo [-device SEL] [-v] [-engines] [-json | -query-device FIELDS [-noheader]] [-l SECONDS [-count N]]
hlinfo -query-device help`
	doc = `hlinfo reports the Gaudi devices -device names (by default every one, else the simulator's):
a table that fits 80 columns, the processes that hold the devices and the RDMA NICs; -json
prints typed JSON instead, -query-device chosen fields as CSV (hl-smi -Q names; "-query-device
help" lists them). It opens control nodes only, so it works while other processes own the
devices; seeing other users' processes needs root.`
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cmd, c := newCommand(os.Stdout, os.Stderr)
	code := cmd.Report(run(ctx, cmd, c, os.Args[1:]))
	stop()
	os.Exit(code)
}

// openControl opens hardware control nodes; nil is device.OpenControl.
// Tests over a fixture tree replace it.
var openControl func(path string) (*device.Device, error)

// config is what the command line asks for.
type config struct {
	devstat.Options
	json     bool
	query    []field
	noHeader bool
	noUnits  bool
	list     bool
	sections map[string]bool // -d: the -v sections to print; nil for all
	interval time.Duration
	count    int

	queryText, loopText, formatText, sectionsText string
}

// newCommand returns hlinfo's command line, writing to stdout and
// stderr, and the configuration its flags fill.
func newCommand(stdout, stderr io.Writer) (*cli.Command, *config) {
	cmd := cli.New("hlinfo", synopsis, doc)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.VersionNote = fmt.Sprintf("JSON schema %d", devstat.SchemaVersion)
	c := &config{}
	fs := cmd.Flags
	fs.BoolVar(&c.Details, "v", false, "report every value of each device (hl-smi calls this -q)")
	fs.BoolVar(&c.Details, "q", false, "the same as -v, as hl-smi -q")
	fs.StringVar(&c.sectionsText, "d", "", "with -v or -q, only these comma-separated `SECTIONS` (hl-smi -d): "+sectionNames())
	fs.BoolVar(&c.list, "L", false, "list the devices, one line each (hl-smi -L)")
	fs.Func("i", "the same as -device `SEL` (hl-smi -i: an index or a PCI bus id)", func(v string) error {
		return fs.Set("device", v)
	})
	fs.StringVar(&c.formatText, "f", "", "with -query-device, the CSV's `FORMAT` as hl-smi -f: csv, and noheader and nounits (csv,noheader,nounits)")
	fs.BoolVar(&c.Engines, "engines", false, "print the driver's engine status of each device")
	fs.BoolVar(&c.json, "json", false, "print JSON (one line per report with -l)")
	fs.StringVar(&c.queryText, "query-device", "", "print these comma-separated `FIELDS` as CSV (\"help\" lists them)")
	fs.StringVar(&c.queryText, "Q", "", "short for -query-device `FIELDS`")
	fs.BoolVar(&c.noHeader, "noheader", false, "with -query-device, leave out the header line")
	fs.StringVar(&c.loopText, "l", "", "repeat every `SECONDS` (5), or every duration (500ms)")
	fs.StringVar(&c.loopText, "loop", "", "the same as -l `SECONDS`")
	fs.IntVar(&c.count, "count", 0, "with -l, stop after this many reports (0: until interrupted)")
	// -root is for tests and for reading a copied machine's sysfs.
	fs.StringVar(&c.Root, "root", "", "read sys/ and proc/ below `DIR` instead of /")
	return cmd, c
}

// parse reads the command line into c. -query-device help prints the
// fields and returns flag.ErrHelp.
func parse(cmd *cli.Command, c *config, args []string) error {
	if err := cmd.Parse(args); err != nil {
		return err
	}
	if cmd.Flags.NArg() > 0 {
		return cmd.UsageError("unexpected argument %q", cmd.Flags.Arg(0))
	}
	sel, err := cmd.Device.Selection()
	if err != nil {
		return err // a bad GAUDI_DEVICE
	}
	c.Selection = sel
	c.OpenControl = openControl
	given := map[string]bool{}
	cmd.Flags.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["query-device"] || given["Q"] {
		if c.queryText == "" {
			return cmd.UsageError("-query-device \"\": want comma-separated fields (-query-device help lists them)")
		}
	}
	if c.queryText != "" {
		if c.queryText == "help" {
			fmt.Fprintf(cmd.Stdout, "-query-device fields:\n%s\n", fieldHelp())
			return flag.ErrHelp
		}
		if c.json {
			return cmd.UsageError("-json and -query-device are two outputs: choose one")
		}
		f, err := parseFields(c.queryText)
		if err != nil {
			return cmd.UsageError("%w", err)
		}
		c.query = f
		if c.formatText != "" {
			if err := c.parseFormat(); err != nil {
				return cmd.UsageError("%w", err)
			}
		}
	} else if c.noHeader {
		return cmd.UsageError("-noheader goes with -query-device")
	} else if c.formatText != "" {
		return cmd.UsageError("-f %s goes with -query-device (-Q)", c.formatText)
	}
	if c.sectionsText != "" {
		if !c.Details {
			return cmd.UsageError("-d %s chooses sections of -v (or -q): give one of them", c.sectionsText)
		}
		secs, err := parseSections(c.sectionsText)
		if err != nil {
			return cmd.UsageError("%w", err)
		}
		c.sections = secs
	}
	if c.list && (c.json || c.query != nil || c.Details) {
		return cmd.UsageError("-L lists the devices: it goes without -json, -query-device and -v")
	}
	if c.loopText != "" {
		d, err := parseInterval(c.loopText)
		if err != nil {
			return cmd.UsageError("%w", err)
		}
		c.interval = d
	}
	if c.count < 0 {
		return cmd.UsageError("-count %d: want 0 or more", c.count)
	}
	if c.count > 0 && c.interval == 0 {
		return cmd.UsageError("-count goes with -l")
	}
	return nil
}

// parseInterval reads -l: a number of seconds, as hl-smi -l takes, or a
// Go duration.
func parseInterval(s string) (time.Duration, error) {
	var d time.Duration
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		d = time.Duration(secs * float64(time.Second))
	} else if d, err = time.ParseDuration(s); err != nil {
		return 0, fmt.Errorf("-l %q: want seconds (5) or a duration (500ms)", s)
	}
	if d < 10*time.Millisecond || d > 24*time.Hour {
		return 0, fmt.Errorf("-l %q: want an interval from 10ms to 24h", s)
	}
	return d, nil
}

// run is hlinfo with its command line: it parses args and prints the
// reports on cmd.Stdout.
func run(ctx context.Context, cmd *cli.Command, c *config, args []string) error {
	if err := parse(cmd, c, args); err != nil {
		return err
	}
	var t *time.Ticker
	if c.interval > 0 {
		t = time.NewTicker(c.interval)
		defer t.Stop()
	}
	for n := 1; ; n++ {
		if err := report(cmd.Stdout, c, n); err != nil {
			return err
		}
		if t == nil || n == c.count {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// report prints the n-th report (from 1).
func report(w io.Writer, c *config, n int) error {
	s, err := devstat.Collect(c.Options)
	if err != nil {
		return err
	}
	nics, err := collectNICs(s)
	if err != nil {
		return err
	}
	switch {
	case c.list:
		return writeList(w, s)
	case c.query != nil:
		return writeCSV(w, s, c.query, n == 1 && !c.noHeader, !c.noUnits)
	case c.json:
		return writeJSON(w, s, nics, c.interval > 0)
	}
	if c.interval > 0 {
		if n > 1 {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, s.Timestamp.Format(time.RFC3339))
	}
	return writeText(w, s, nics, c)
}

// yesNo prints a bool for people.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// dash prints "-" for an empty string.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
