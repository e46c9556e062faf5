package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/gaudi-go/gaudi/device"
)

// ErrVersion is returned by Command.Parse after it printed the version
// for -version: the command should exit 0 without doing anything else.
var ErrVersion = errors.New("version requested")

// ErrUsage wraps every error of Command.Parse that comes from the command
// line (an unknown flag, a bad value, a missing argument): exit status 2.
var ErrUsage = errors.New("usage")

// Env is an environment variable a command reads, for its -h.
type Env struct {
	Name, Doc string
}

// Section is a titled block of the text -h prints after the environment,
// such as a command's exit statuses or examples.
type Section struct {
	// Title heads the block, such as "Exit status".
	Title string
	// Text is the block's lines, printed indented by two spaces.
	Text string
}

// CommonEnv are the variables every command that opens a device reads.
var CommonEnv = []Env{
	{"GAUDI_DEVICE", "the device when -device is not given, in the grammar of -device"},
	{"GAUDI_ROOT", "DIR: find the devices under DIR instead of /sys and /dev (the nodes `hlsim serve -dir DIR` serves)"},
	{"GAUDI_SIM", `the simulator's devices: ASIC, count and driver, such as "gaudi2:8" (the default), "gaudi:2", ` +
		`"gaudi3:4" or "gaudi2:8:oot" (as Intel's out-of-tree driver; "gaudi2::oot" keeps the count)`},
	{"GAUDI_SIM_DRIVER", `the simulated driver when GAUDI_SIM names none: "upstream" (the default) or "oot"`},
	{"GAUDI_SIM_LOCKDIR", "where simulated devices keep their lock files (one owner per device across processes)"},
}

// EnvNamed returns the entry of CommonEnv for the variable name, for a
// command that lists some of them only; the zero Env when there is none.
func EnvNamed(name string) Env {
	for _, e := range CommonEnv {
		if e.Name == name {
			return e
		}
	}
	return Env{}
}

// Command is a command line: the flags of one command with those every
// command shares (-device, -version; -h comes with package flag), and the
// text -h prints. Fill Flags, then call Parse or ParseOrExit.
type Command struct {
	// Name is the command's name, used in messages ("hlperf: ...").
	Name string
	// Synopsis is one or more lines of usage, such as
	// "hlperf [-device SEL] [-dir h2d,d2h] [-min SIZE] [-max SIZE]".
	Synopsis string
	// Doc says what the command does, a paragraph or two.
	Doc string
	// Env lists the environment variables -h names; New sets CommonEnv.
	Env []Env
	// Sections follow the environment in -h, in order.
	Sections []Section
	// Flags is the command's flag set. New adds -device and -version.
	Flags *flag.FlagSet
	// Device is the -device flag; nil for a Command of NewPlain.
	Device *DeviceFlag
	// Stdout and Stderr are where -h, -version and messages go; New sets
	// os.Stdout and os.Stderr.
	Stdout, Stderr io.Writer
	// VersionNote, when set, follows the version on -version's line in
	// parentheses, such as "JSON schema 1".
	VersionNote string

	version bool
}

// New returns a Command with the shared flags registered.
func New(name, synopsis, doc string) *Command {
	c := NewPlain(name, synopsis, doc)
	c.Env = append([]Env(nil), CommonEnv...)
	c.Device = &DeviceFlag{}
	c.Flags.Var(c.Device, "device", "the device or devices, a selector `SEL`: an index (0), a PCI address (0000:19:00.0\n"+
		"or 19:00.0), module:N, a device node (/dev/accel/accel0), a chip (gaudi, gaudi2, gaudi3),\n"+
		"sim or sim:N (simulated devices); default $GAUDI_DEVICE, else every Gaudi, else the\n"+
		"simulator's devices. A command that uses one device takes the first free one a selector\n"+
		"names; one that reports devices takes all. A hardware selector never falls back to the\n"+
		"simulator.")
	return c
}

// NewPlain returns a Command with -version (and -h) but no -device and no
// environment: a command, or a subcommand such as "hlsim ctl", that does
// not open devices by selector.
func NewPlain(name, synopsis, doc string) *Command {
	c := &Command{
		Name:     name,
		Synopsis: synopsis,
		Doc:      doc,
		Flags:    flag.NewFlagSet(name, flag.ContinueOnError),
		Stdout:   os.Stdout,
		Stderr:   os.Stderr,
	}
	c.Flags.BoolVar(&c.version, "version", false, "print the version and exit")
	c.Flags.Usage = func() {}
	return c
}

// Usage writes the text -h prints: synopsis, description, flags,
// environment and Sections.
func (c *Command) Usage(w io.Writer) {
	fmt.Fprintf(w, "Usage:\n")
	for _, l := range strings.Split(strings.TrimSpace(c.Synopsis), "\n") {
		fmt.Fprintf(w, "  %s\n", strings.TrimSpace(l))
	}
	if c.Doc != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.Doc))
	}
	fmt.Fprintf(w, "\nFlags:\n")
	out := c.Flags.Output()
	c.Flags.SetOutput(w)
	c.Flags.PrintDefaults()
	c.Flags.SetOutput(out)
	if len(c.Env) > 0 {
		fmt.Fprintf(w, "\nEnvironment:\n")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, e := range c.Env {
			fmt.Fprintf(tw, "  %s\t%s\n", e.Name, e.Doc)
		}
		tw.Flush()
	}
	for _, s := range c.Sections {
		fmt.Fprintf(w, "\n%s:\n", s.Title)
		for _, l := range strings.Split(strings.Trim(s.Text, "\n"), "\n") {
			if l = strings.TrimRight(l, " "); l == "" {
				fmt.Fprintln(w)
				continue
			}
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
}

// Parse parses args, the command line without the program name. For -h
// (or -help) it writes Usage to Stdout and returns flag.ErrHelp; for
// -version it writes the version to Stdout and returns ErrVersion. A bad
// command line gives an error matching ErrUsage, after which Parse has
// written the message and a hint to Stderr.
func (c *Command) Parse(args []string) error {
	c.Flags.SetOutput(io.Discard)
	err := c.Flags.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.Usage(c.Stdout)
		return flag.ErrHelp
	case err != nil:
		fmt.Fprintf(c.Stderr, "%s: %v\n%s: run %s -h for usage\n", c.Name, err, c.Name, c.Name)
		return fmt.Errorf("%w: %w", ErrUsage, err)
	case c.version:
		v := Version()
		if c.VersionNote != "" {
			v += " (" + c.VersionNote + ")"
		}
		fmt.Fprintf(c.Stdout, "%s %s\n", c.Name, v)
		return ErrVersion
	}
	return nil
}

// ParseOrExit is Parse for main: it exits 0 after -h and -version and 2
// for a bad command line.
func (c *Command) ParseOrExit(args []string) {
	if err := c.Parse(args); err != nil {
		os.Exit(ExitCode(err))
	}
}

// UsageError reports a command line that parsed but makes no sense
// (-json with -csv, -min above -max): it prints "name: message" and the
// -h hint to Stderr and returns an error matching ErrUsage.
func (c *Command) UsageError(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	fmt.Fprintf(c.Stderr, "%s: %v\n%s: run %s -h for usage\n", c.Name, err, c.Name, c.Name)
	return fmt.Errorf("%w: %w", ErrUsage, err)
}

// Report reports err, unless it is nil, as "name: err" on Stderr (usage
// errors, -h and -version were reported by Parse or UsageError) and
// returns ExitCode(err).
func (c *Command) Report(err error) int {
	if err != nil && ExitCode(err) == 1 {
		fmt.Fprintf(c.Stderr, "%s: %s\n", c.Name, ErrorText(err))
	}
	return ExitCode(err)
}

// Fatal is Report, then os.Exit with its status, unless err is nil.
func (c *Command) Fatal(err error) {
	if err != nil {
		os.Exit(c.Report(err))
	}
}

// ExitCode is the exit status for err: 0 for nil, flag.ErrHelp and
// ErrVersion, 2 for ErrUsage, 1 otherwise.
func ExitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp), errors.Is(err, ErrVersion):
		return 0
	case errors.Is(err, ErrUsage):
		return 2
	}
	return 1
}

// OpenDevice opens the compute device of the -device flag (or
// GAUDI_DEVICE) and says on Stderr which one it chose and why.
func (c *Command) OpenDevice() (*device.Device, error) {
	sel, err := c.Device.Selection()
	if err != nil {
		return nil, err
	}
	d, err := sel.Open()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c.Stderr, "%s: using %s, %s\n", c.Name, d, sel.Why(d))
	return d, nil
}

// Version returns the version of the running program as the Go toolchain
// recorded it: the module version ("v1.2.0", or "(devel)" for a build
// from a work tree), then the VCS revision and time when the build
// recorded them, "+dirty" for uncommitted changes, and the Go version:
// "(devel) rev 0123456789ab+dirty 2026-01-02T15:04:05Z go1.26.0".
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information)"
	}
	return versionFrom(info)
}

// versionFrom is Version over given build information.
func versionFrom(info *debug.BuildInfo) string {
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, when string
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += " rev " + rev
		if dirty {
			v += "+dirty"
		}
		if when != "" {
			v += " " + when
		}
	}
	if info.GoVersion != "" {
		v += " " + info.GoVersion
	}
	return v
}
