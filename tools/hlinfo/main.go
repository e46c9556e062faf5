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
//	hlinfo -version
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
// -device selects devices in the grammar of GAUDI_DEVICE, which is its
// default: an index, a PCI address, module:N, a node path or a chip name
// for hardware; sim or sim:N for the simulator (see devstat.Collect). Listing
// opens control nodes only, so it works while other processes own the
// devices; seeing other users' processes needs root.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/tools/internal/devstat"
)

const usage = `usage: hlinfo [-device SEL] [-v] [-engines] [-json | -query-device FIELDS [-noheader]] [-l SECONDS [-count N]]
       hlinfo -version

Reports the Gaudi devices of this machine (or the simulator's): a table
that fits 80 columns by default, JSON with -json, chosen fields as CSV with
-query-device (hl-smi -Q names; "-query-device help" lists them).

Environment:
  GAUDI_DEVICE       default for -device: N, PCI address, module:N, /dev path,
                     chip name (gaudi2), sim or sim:N
  GAUDI_SIM          shape of the simulator, such as gaudi2:8 (the default)
  GAUDI_SIM_LOCKDIR  lock directory shared by processes using the simulator

Flags:
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Stdout, os.Stderr, os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hlinfo:", err)
		os.Exit(1)
	}
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
	interval time.Duration
	count    int
	root     string
}

// parse reads the command line; getenv supplies GAUDI_DEVICE.
func parse(args []string, stderr io.Writer, getenv func(string) string) (*config, bool, error) {
	fs := flag.NewFlagSet("hlinfo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	c := &config{}
	fs.StringVar(&c.Selector, "device", getenv("GAUDI_DEVICE"), "devices to report, in GAUDI_DEVICE's grammar (default $GAUDI_DEVICE; empty: all)")
	fs.BoolVar(&c.Details, "v", false, "report every value of each device")
	fs.BoolVar(&c.Engines, "engines", false, "print the driver's engine status of each device")
	fs.BoolVar(&c.json, "json", false, "print JSON (one line per report with -l)")
	query := fs.String("query-device", "", "print these comma-separated fields as CSV (\"help\" lists them)")
	fs.StringVar(query, "Q", "", "short for -query-device")
	fs.BoolVar(&c.noHeader, "noheader", false, "with -query-device, leave out the header line")
	loop := fs.String("l", "", "repeat every interval: seconds (5) or a duration (500ms)")
	fs.StringVar(loop, "loop", "", "same as -l")
	fs.IntVar(&c.count, "count", 0, "with -l, stop after this many reports (0: until interrupted)")
	version := fs.Bool("version", false, "print the version and exit")
	// -root is for tests and for reading a copied machine's sysfs.
	fs.StringVar(&c.root, "root", "", "read sys/ and proc/ below this directory instead of /")
	if err := fs.Parse(args); err != nil {
		return nil, false, err
	}
	if fs.NArg() > 0 {
		return nil, false, fmt.Errorf("unexpected argument %q (see -h)", fs.Arg(0))
	}
	if *version {
		return c, true, nil
	}
	c.Root = c.root
	c.OpenControl = openControl
	if *query != "" {
		if *query == "help" {
			return nil, false, fmt.Errorf("-query-device fields:\n%s", fieldHelp())
		}
		if c.json {
			return nil, false, errors.New("-json and -query-device are two outputs: choose one")
		}
		f, err := parseFields(*query)
		if err != nil {
			return nil, false, err
		}
		c.query = f
	} else if c.noHeader {
		return nil, false, errors.New("-noheader goes with -query-device")
	}
	if *loop != "" {
		d, err := parseInterval(*loop)
		if err != nil {
			return nil, false, err
		}
		c.interval = d
	}
	if c.count < 0 {
		return nil, false, fmt.Errorf("-count %d: want 0 or more", c.count)
	}
	if c.count > 0 && c.interval == 0 {
		return nil, false, errors.New("-count goes with -l")
	}
	return c, false, nil
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

// run is hlinfo with its command line, output and environment.
func run(ctx context.Context, stdout, stderr io.Writer, args []string, getenv func(string) string) error {
	c, version, err := parse(args, stderr, getenv)
	if err != nil {
		return err
	}
	if version {
		_, err := fmt.Fprintf(stdout, "hlinfo %s (JSON schema %d)\n", device.Version(), devstat.SchemaVersion)
		return err
	}
	var t *time.Ticker
	if c.interval > 0 {
		t = time.NewTicker(c.interval)
		defer t.Stop()
	}
	for n := 1; ; n++ {
		if err := report(stdout, c, n); err != nil {
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
	case c.query != nil:
		return writeCSV(w, s, c.query, n == 1 && !c.noHeader)
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
