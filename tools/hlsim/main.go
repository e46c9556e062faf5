// Command hlsim serves simulated Gaudis as device nodes that any process
// opens, in any language: the software Gaudi of package sim behind a FUSE
// filesystem, with a sysfs-like tree that describes the devices.
//
// Usage:
//
//	hlsim serve -dir DIR [-sim gaudi2:8] [-force] [-v]
//	hlsim run [-sim gaudi2:8] [-v] -- COMMAND [ARG...]
//	hlsim ctl -dir DIR COMMAND...
//
// serve mounts the nodes and the tree on DIR (made when missing) until
// SIGINT or SIGTERM, then removes the devices (their files answer ENODEV,
// as the driver's after a device's removal; clients get up to 5 s to
// close them) and unmounts it:
//
//	DIR/dev/accel/accelN           compute node of device N
//	DIR/dev/accel/accel_controlDN  its control node
//	DIR/sys/...                    the sysfs tree discovery reads
//	DIR/sys/dev/char/0:0           the directory of the node the reading
//	                               process opened last (see below)
//	DIR/hlsim/pid                  the server's process id
//
// Programs built on this module find the devices with GAUDI_ROOT=DIR (see
// device.RootEnv); others open DIR/dev/accel/accelN. The simulated server
// has the shape of GAUDI_SIM (gaudi2:8 by default; -sim overrides it).
//
// The nodes behave as the habanalabs driver's: INFO, CB, CS, WAIT_CS,
// MEMORY and DEBUG with the client's pointers read and written with
// process_vm_readv and process_vm_writev, one compute open per device
// across processes (EBUSY for the next), any number of control opens, and
// mmap of command buffers coherent with what the engines execute. Serving
// needs root: the mount, reaching clients' memory, and the kernel's FUSE
// passthrough for mmap (Linux 6.9 or later).
//
// A node is a regular file, not a character device: CUSE, which serves
// character devices from user space, cannot map them (fs/fuse/cuse.c has
// no mmap; mmap(2) answers ENODEV). Its st_rdev is therefore 0:0, for every
// node; DIR/sys/dev/char/0:0 leads each process to the node it opened
// last among those it holds, so that a C program going from fstat of its
// descriptor to GAUDI_ROOT/sys/dev/char/MAJ:MIN finds its device
// (devchar.go); in hlsim run the links are in /sys/dev/char. On a server
// of several devices a process that holds no node finds nothing there
// (ENOENT). sys/dev/char/261:N and 508:N, the numbers the driver's nodes
// have, lead to device N's directories.
//
// A second hlsim on the same directory is refused; a mount left by an
// hlsim that died is reported, and -force unmounts it first.
//
// run serves the devices for one command, in a private mount namespace
// where they are /dev/accel/accelN and /sys/class/accel/accelN, so that
// unmodified programs (hl-thunk, a C program, hltrace's target) find them
// where the driver puts them; nothing of it is visible on the host (see
// run.go). It exits with the command's status.
//
// ctl sends a running server a command (ctl.go): reset a device, read or
// change its state, make its next calls fail, list and clear those faults,
// raise notifier events. The server's reply, or why it refused the
// command, comes back to ctl. Every command and subcommand takes -h and
// -version, and exits 2 for a bad command line.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

const usage = `usage: hlsim serve -dir DIR [-sim gaudi2:8] [-force] [-v]
       hlsim run [-sim gaudi2:8] [-v] -- COMMAND [ARG...]
       hlsim ctl -dir DIR COMMAND...

Serves simulated Gaudis as device nodes under DIR until interrupted:
DIR/dev/accel/accelN and accel_controlDN, and a sysfs tree in DIR/sys.
Programs of this module find them with GAUDI_ROOT=DIR.

run runs COMMAND in a private mount namespace where the devices are
/dev/accel/accelN and /sys/class/accel/accelN, as the driver makes them, so
unmodified programs find them; it exits with COMMAND's status.

ctl drives a running server's devices while clients use them.

Environment:
  GAUDI_SIM   shape of the simulated server: ASIC, count and driver, such as
              gaudi2:8 (the default), gaudi:2, gaudi3:4 or gaudi2:8:oot (as
              Intel's out-of-tree driver); -sim overrides it

` + ctlUsage

func main() {
	code, err := run(os.Args[1:], os.Stdout, os.Stderr)
	if err != nil && cli.ExitCode(err) == 1 {
		// Usage errors, -h and -version said what they had to.
		fmt.Fprintln(os.Stderr, "hlsim:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// run runs a command line and returns the exit status: 2 for a bad
// command line, as every command of the module.
func run(args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2, fmt.Errorf("%w: no command", cli.ErrUsage)
	}
	switch args[0] {
	case "serve":
		return serveCmd(args[1:], stdout, stderr)
	case "run":
		return runCmd(args[1:], stdout, stderr)
	case "run-inner":
		return runInner(args[1:], stderr)
	case "ctl":
		return ctlCmd(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0, flag.ErrHelp
	case "-version", "--version", "version":
		fmt.Fprintf(stdout, "hlsim %s\n", cli.Version())
		return 0, cli.ErrVersion
	}
	fmt.Fprintf(stderr, "hlsim: unknown command %q (want serve, run or ctl)\nhlsim: run hlsim -h for usage\n", args[0])
	return 2, fmt.Errorf("%w: unknown command %q", cli.ErrUsage, args[0])
}

// subcommand is the command line of "hlsim NAME": -h and -version as
// every command of the module has them, and the same exit statuses.
func subcommand(name, synopsis, doc string, stdout, stderr io.Writer) *cli.Command {
	c := cli.NewPlain("hlsim "+name, synopsis, doc)
	c.Stdout, c.Stderr = stdout, stderr
	return c
}

// simFlag reads the simulated server's shape: -sim, else GAUDI_SIM.
func simConfig(spec string) (sim.Config, error) {
	if spec != "" {
		os.Setenv("GAUDI_SIM", spec)
	}
	cfg, err := sim.FromEnv()
	cfg.ServedMemoryLimit = clientMemoryLimit()
	return cfg, err
}

// clientMemoryLimit is the device memory one client file may hold
// allocated (sim.Config.ServedMemoryLimit): a quarter of the machine's
// memory, since the simulated DRAM is the server's host memory; 0 (no
// bound) when the machine's memory is unknown.
func clientMemoryLimit() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit) / 4
}

func serveCmd(args []string, stdout, stderr io.Writer) (int, error) {
	c := subcommand("serve", "hlsim serve -dir DIR [-sim gaudi2:8] [-force] [-v]",
		"Serves simulated Gaudis as device nodes under DIR until interrupted (see hlsim -h).", stdout, stderr)
	c.Env = []cli.Env{cli.EnvNamed("GAUDI_SIM"), cli.EnvNamed("GAUDI_SIM_DRIVER")}
	fl := c.Flags
	dir := fl.String("dir", "", "directory to serve the devices under (required)")
	spec := fl.String("sim", "", "shape of the simulated server, as GAUDI_SIM (gaudi2:8)")
	force := fl.Bool("force", false, "unmount a stale hlsim mount on the directory first")
	verbose := fl.Bool("v", false, "log FUSE requests")
	if err := c.Parse(args); err != nil {
		return cli.ExitCode(err), err
	}
	if *dir == "" || fl.NArg() != 0 {
		return 2, c.UsageError("-dir DIR is required, and nothing else")
	}
	cfg, err := simConfig(*spec)
	if err != nil {
		return 2, c.UsageError("-sim: %v", err)
	}
	return 0, serve(*dir, cfg, *force, *verbose, stdout, stderr)
}

// serve serves the devices of cfg on dir until SIGINT or SIGTERM.
func serve(dir string, cfg sim.Config, force, verbose bool, stdout, stderr io.Writer) error {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	m, err := mount(dir, cfg, force, verbose, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "hlsim: serving %d %v devices under %s (GAUDI_ROOT=%s)\n", len(cfg.Devices), cfg.Devices[0].ASIC, m.dir, m.dir)
	stopped := false
	select {
	case <-sigs:
		stopped = true
	case <-m.done:
	}
	go func() {
		<-sigs
		fmt.Fprintln(stderr, "hlsim: second signal: exiting without cleanup")
		os.Exit(2)
	}()
	if stopped {
		m.s.remove(removalGrace) // removal.go
	}
	return m.close()
}

// mounted is a running server.
type mounted struct {
	dir     string
	s       *server
	sys     *sim.System
	fs      *fuse.Server
	lockDir string
	done    chan struct{} // closed when the server stops serving (unmounted from outside)
	stderr  io.Writer
}

// mount builds the simulated system of cfg and serves it on dir.
func mount(dir string, cfg sim.Config, force, verbose bool, stderr io.Writer) (*mounted, error) {
	abs, err := checkMountpoint(dir, force)
	if err != nil {
		return nil, err
	}
	// The devices are this server's alone: their compute locks do not
	// meet those of in-process simulators.
	lockDir, err := os.MkdirTemp("", "hlsim-locks-")
	if err != nil {
		return nil, err
	}
	cfg.LockDir = lockDir
	sys, err := sim.New(cfg)
	if err != nil {
		os.RemoveAll(lockDir)
		return nil, err
	}
	s, err := newServer(sys, abs, stderr)
	if err != nil {
		sys.Close()
		os.RemoveAll(lockDir)
		return nil, err
	}
	fs, err := fuse.NewServer(s, abs, &fuse.MountOptions{
		DirectMountStrict: true, // mount(2) itself: no fusermount
		AllowOther:        true, // any user may open the nodes
		// ... as the modes shown allow: the kernel checks them (ctl and
		// hard_reset are 0200 root, the nodes 0666, attributes 0444).
		Options:            []string{"default_permissions"},
		Name:               "hlsim",
		FsName:             "hlsim",
		DisableReadDirPlus: true,
		Debug:              verbose,
	})
	if err != nil {
		s.closeFiles()
		sys.Close()
		os.RemoveAll(lockDir)
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("mount %s: %w (serving needs root)", abs, err)
		}
		return nil, fmt.Errorf("mount %s: %w", abs, err)
	}
	m := &mounted{dir: abs, s: s, sys: sys, fs: fs, lockDir: lockDir, done: make(chan struct{}), stderr: stderr}
	go func() {
		fs.Serve()
		close(m.done)
	}()
	go s.reap(100*time.Millisecond, m.done)
	if err := fs.WaitMount(); err != nil {
		m.close()
		return nil, fmt.Errorf("mount %s: %w", abs, err)
	}
	return m, nil
}

// close unmounts and releases everything. When clients still hold nodes
// open the mount is detached from the directory instead; the files they
// hold fail with ENOTCONN once the process exits.
func (m *mounted) close() error {
	var err error
	unmounted := make(chan error, 1)
	go func() { unmounted <- m.fs.Unmount() }()
	select {
	case uerr := <-unmounted:
		if uerr != nil {
			fmt.Fprintf(m.stderr, "hlsim: unmount %s: %v: detaching it\n", m.dir, uerr)
			if derr := unix.Unmount(m.dir, unix.MNT_DETACH); derr != nil && !errors.Is(derr, unix.EINVAL) {
				err = fmt.Errorf("unmount %s: %w", m.dir, derr)
			}
		}
	case <-time.After(5 * time.Second):
		// Unmounted, but bind mounts of the tree elsewhere keep the
		// filesystem: the connection ends when this process exits.
		fmt.Fprintf(m.stderr, "hlsim: %s is still mounted elsewhere (bind mounts): its files fail once hlsim exits\n", m.dir)
	}
	m.s.closeFiles()
	m.sys.Close()
	os.RemoveAll(m.lockDir)
	return err
}
