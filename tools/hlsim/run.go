package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gaudi-go/gaudi/internal/cli"
	"golang.org/x/sys/unix"
)

// hlsim run: a command in a private mount namespace where the served
// devices are where the kernel would put them.
//
// The outer process starts itself again ("run-inner") in a new mount
// namespace (Go's exec unshares it in the child and makes every mount
// private, so nothing below reaches the host). The inner one serves the
// devices on a private directory, then puts them in place:
//
//   - /dev/accel is the served dev/accel. Without a /dev/accel on the host
//     (no accel driver), /dev in the namespace becomes a tmpfs that holds
//     the host's /dev entries (bound, with their submounts) and accel, so
//     the host's /dev is left as it is;
//   - /sys/class and /sys/devices become tmpfs directories holding the
//     host's entries and the served class "accel" and "hlsim" (the PCI
//     functions the class links point into), and /sys/dev/char one
//     holding the host's links and the served ones (devchar.go); the rest
//     of /sys is the host's.
//
// Then it runs the command there, forwards SIGINT and SIGTERM to it, and
// when it exits stops serving and exits with its status. A host /dev/accel
// or /sys/class/accel (another accel driver's) is hidden inside the
// namespace.

// runCmd is the outer "hlsim run".
func runCmd(args []string, stdout, stderr io.Writer) (int, error) {
	c := subcommand("run", "hlsim run [-sim gaudi2:8] [-v] -- COMMAND [ARG...]",
		"Runs COMMAND in a private mount namespace where the simulated devices are /dev/accel/accelN\n"+
			"and /sys/class/accel/accelN, as the driver makes them; exits with COMMAND's status.", stdout, stderr)
	c.Env = []cli.Env{cli.EnvNamed("GAUDI_SIM"), cli.EnvNamed("GAUDI_SIM_DRIVER")}
	fl := c.Flags
	spec := fl.String("sim", "", "shape of the simulated server, as GAUDI_SIM (gaudi2:8)")
	verbose := fl.Bool("v", false, "log FUSE requests")
	if err := c.Parse(args); err != nil {
		return cli.ExitCode(err), err
	}
	if fl.NArg() == 0 {
		return 2, c.UsageError("no command to run")
	}
	inner := []string{"run-inner", "-sim", *spec}
	if *verbose {
		inner = append(inner, "-v")
	}
	inner = append(append(inner, "--"), fl.Args()...)
	cmd := exec.Command("/proc/self/exe", inner...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 1, fmt.Errorf("run: new mount namespace: %w (hlsim run needs root)", err)
	}
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exitCode(exit.ProcessState), nil
	}
	if err != nil {
		return 1, err
	}
	return 0, nil
}

// exitCode is the status a shell reports for ps: the exit code, or 128
// plus the signal that ended it.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// runInner is "hlsim run-inner", in the new mount namespace.
func runInner(args []string, stderr io.Writer) (int, error) {
	fl := flag.NewFlagSet("hlsim run-inner", flag.ContinueOnError)
	fl.SetOutput(stderr)
	spec := fl.String("sim", "", "")
	verbose := fl.Bool("v", false, "")
	if err := fl.Parse(args); err != nil {
		return 2, err
	}
	cfg, err := simConfig(*spec)
	if err != nil {
		return 1, err
	}
	work, err := os.MkdirTemp("", "hlsim-run-")
	if err != nil {
		return 1, err
	}
	defer os.Remove(work)
	// Everything below lives on a tmpfs of this namespace only.
	if err := unix.Mount("tmpfs", work, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=700"); err != nil {
		return 1, fmt.Errorf("run: mount tmpfs: %w", err)
	}
	defer unix.Unmount(work, unix.MNT_DETACH)
	root := filepath.Join(work, "root")
	m, err := mount(root, cfg, false, *verbose, stderr)
	if err != nil {
		return 1, err
	}
	placed, err := placeNodes(work, root)
	defer func() {
		// The bindings of the tree go first, or the filesystem would
		// outlive its unmount.
		for i := len(placed) - 1; i >= 0; i-- {
			unix.Unmount(placed[i], unix.MNT_DETACH)
		}
		m.close()
	}()
	if err != nil {
		return 1, fmt.Errorf("run: %w", err)
	}

	cmd := exec.Command(fl.Arg(0), fl.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, stderr
	for _, e := range os.Environ() {
		// The devices are where the kernel puts them: discovery needs
		// no other root.
		if !strings.HasPrefix(e, "GAUDI_ROOT=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// None of the server's descriptors reaches the command: go-fuse opens
	// /dev/fuse without O_CLOEXEC (fuse/mount_linux.go), and a command
	// holding it could read and answer other clients' requests, and kept
	// the connection alive after the server died, its clients' waits
	// hanging in D state.
	if err := closeOnExec(); err != nil {
		return 1, fmt.Errorf("run: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return 127, fmt.Errorf("run: %w", err)
	}
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exitCode(exit.ProcessState), nil
	}
	if err != nil {
		return 1, err
	}
	return 0, nil
}

// placeNodes puts the served tree at root where the kernel puts devices:
// /dev/accel, /sys/class/accel and the PCI functions it links to. It
// returns the directories it mounted on, in order, for the unmount.
func placeNodes(work, root string) ([]string, error) {
	var placed []string
	accel := filepath.Join(root, "dev", "accel")
	if fi, err := os.Stat("/dev/accel"); err == nil && fi.IsDir() {
		if err := unix.Mount(accel, "/dev/accel", "", unix.MS_BIND, ""); err != nil {
			return placed, fmt.Errorf("bind /dev/accel: %w", err)
		}
		placed = append(placed, "/dev/accel")
	} else {
		placed = append(placed, "/dev")
		if err := rebuildDir(work, "/dev", map[string]string{"accel": accel}); err != nil {
			return placed, err
		}
	}
	placed = append(placed, "/sys/class")
	if err := rebuildDir(work, "/sys/class", map[string]string{"accel": filepath.Join(root, "sys", "class", "accel")}); err != nil {
		return placed, err
	}
	placed = append(placed, "/sys/devices")
	if err := rebuildDir(work, "/sys/devices", map[string]string{"hlsim": filepath.Join(root, "sys", "devices", "hlsim")}); err != nil {
		return placed, err
	}
	placed = append(placed, "/"+devCharDir)
	return placed, placeDevChar(work, root)
}

// placeDevChar puts the served sys/dev/char links (devchar.go) among the
// host's in /sys/dev/char: those of the devices' numbers as they are (they
// lead into /sys/devices/hlsim), and that of servedRdev to the served one,
// which answers each process for itself.
func placeDevChar(work, root string) error {
	dir := "/" + devCharDir
	if err := rebuildDir(work, dir, nil); err != nil {
		return err
	}
	served := filepath.Join(root, devCharDir)
	ents, err := os.ReadDir(served)
	if err != nil {
		return err
	}
	for _, e := range ents {
		target := filepath.Join(served, e.Name())
		if e.Name() != servedRdev {
			if target, err = os.Readlink(target); err != nil {
				return err
			}
		}
		dst := filepath.Join(dir, e.Name())
		os.Remove(dst) // a host device of the same number is hidden, as in /sys/class
		if err := os.Symlink(target, dst); err != nil {
			return err
		}
	}
	return nil
}

// rebuildDir covers dir with a tmpfs that holds what dir held (entries
// bound from the original, with their submounts; symbolic links copied)
// and, under the names of extra, bindings of the directories they name,
// which replace entries of the same name.
func rebuildDir(work, dir string, extra map[string]string) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return err
	}
	orig := filepath.Join(work, "orig"+strings.ReplaceAll(dir, "/", "_"))
	if err := os.Mkdir(orig, 0o700); err != nil {
		return err
	}
	if err := unix.Mount(dir, orig, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", dir, err)
	}
	defer func() {
		unix.Unmount(orig, unix.MNT_DETACH)
		os.Remove(orig)
	}()
	mode := fmt.Sprintf("mode=%o", st.Mode&0o7777)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID, mode); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	ents, err := os.ReadDir(orig)
	if err != nil {
		return err
	}
	for _, e := range ents {
		name := e.Name()
		if _, ok := extra[name]; ok {
			continue
		}
		src, dst := filepath.Join(orig, name), filepath.Join(dir, name)
		fi, err := os.Lstat(src)
		if err != nil {
			continue // went away meanwhile
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(src)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, dst); err != nil {
				return err
			}
			continue
		case fi.IsDir():
			if err := os.Mkdir(dst, fi.Mode().Perm()); err != nil {
				return err
			}
		default:
			f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			f.Close()
		}
		if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			// An entry the namespace cannot have (it vanished, or the
			// kernel refuses to bind it) is left out rather than
			// failing the command.
			fmt.Fprintf(os.Stderr, "hlsim run: %s left out: %v\n", filepath.Join(dir, name), err)
			os.Remove(dst)
		}
	}
	for name, src := range extra {
		dst := filepath.Join(dir, name)
		if err := os.Mkdir(dst, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", dst, err)
		}
	}
	return nil
}
