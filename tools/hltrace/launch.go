package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// hltrace starts a command in two steps so that none of its calls happens
// before the probes see it: it starts itself (/proc/self/exe) as a
// launcher, with launchEnv naming the command's executable and a pipe on
// releaseFD; it adds the launcher's pid to the processes the BPF side
// follows; then it writes releaseByte to the pipe, and the launcher, which
// has been blocked reading it, execs the command with the same pid. The
// launcher is a few milliseconds of Go runtime start-up and makes no call
// hltrace traces.

const (
	// launchEnv, in the launcher's environment, names the executable to
	// run; the launcher removes it before the exec.
	launchEnv = "HLTRACE_LAUNCH"
	// releaseFD is the read end of the release pipe in the launcher
	// (the first of exec.Cmd.ExtraFiles).
	releaseFD = 3
	// releaseByte tells the launcher to exec; end of file, to give up.
	releaseByte = 'g'
)

// Exit statuses of hltrace with a command, after the shells (126 and 127)
// and coreutils' env, nice and timeout (125).
const (
	exitTraceFailed = 125 // hltrace failed; the command did not run, or ran untraced
	exitNotRunnable = 126 // the command exists but cannot be executed
	exitNotFound    = 127 // the command does not exist
)

// launchIfAsked turns this process into the launcher when hltrace started
// it as one, and returns otherwise. main and TestMain call it first.
func launchIfAsked() {
	path, ok := os.LookupEnv(launchEnv)
	if !ok {
		return
	}
	os.Unsetenv(launchEnv)
	var b [1]byte
	for {
		n, err := unix.Read(releaseFD, b[:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if n != 1 || b[0] != releaseByte {
			os.Exit(exitTraceFailed) // hltrace gave up, and says why
		}
		break
	}
	unix.Close(releaseFD)
	err := unix.Exec(path, os.Args, os.Environ())
	fmt.Fprintf(os.Stderr, "hltrace: %s: %v\n", os.Args[0], err)
	if errors.Is(err, unix.ENOENT) {
		os.Exit(exitNotFound)
	}
	os.Exit(exitNotRunnable)
}

// findCommand looks the command up as a shell would (in PATH unless it
// holds a slash) and returns its path, or an error and the exit status
// that reports it.
func findCommand(name string) (string, int, error) {
	path, err := exec.LookPath(name)
	switch {
	case err == nil, errors.Is(err, exec.ErrDot) && path != "":
		return path, 0, nil
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return "", exitNotFound, fmt.Errorf("%s: command not found", name)
	}
	return "", exitNotRunnable, fmt.Errorf("%s: cannot run: %w", name, err)
}

// A command is a process hltrace started through the launcher.
type command struct {
	name    string // argv[0]
	cmd     *exec.Cmd
	release *os.File // write end of the release pipe; nil once used
	done    chan struct{}
	state   *os.ProcessState // set when done is closed
}

// startCommand starts the launcher for argv, whose executable is path,
// blocked until release or abort. The command inherits stdin, stdout,
// stderr and this process's environment, with env's NAME=value settings
// added (replacing those of the same name).
func startCommand(argv []string, path string, env []string, stdin *os.File, stdout, stderr io.Writer) (*command, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	c := &command{
		name: argv[0],
		cmd: &exec.Cmd{
			Path:       "/proc/self/exe",
			Args:       argv,
			Env:        append(append(os.Environ(), env...), launchEnv+"="+path),
			Stdout:     stdout,
			Stderr:     stderr,
			ExtraFiles: []*os.File{r},
		},
		release: w,
		done:    make(chan struct{}),
	}
	if stdin != nil { // not a typed nil in the interface
		c.cmd.Stdin = stdin
	}
	err = c.cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	go func() {
		c.cmd.Wait() // the status is in ProcessState; copy errors do not matter here
		c.state = c.cmd.ProcessState
		close(c.done)
	}()
	return c, nil
}

// pid is the command's process id (the launcher's, which the exec keeps).
func (c *command) pid() int { return c.cmd.Process.Pid }

// run lets the launcher exec the command.
func (c *command) run() error {
	_, err := c.release.Write([]byte{releaseByte})
	c.release.Close()
	c.release = nil
	if err != nil {
		return fmt.Errorf("start %s: %w", c.name, err)
	}
	return nil
}

// abort makes the launcher exit without running the command, and waits.
func (c *command) abort() {
	if c.release != nil {
		c.release.Close()
		c.release = nil
	}
	<-c.done
}

// forward passes a signal hltrace received on to the command. A SIGINT
// that the terminal sent (Ctrl-C) went to its whole foreground process
// group, the command included, and is not sent twice.
func (c *command) forward(sig os.Signal) {
	if sig == os.Interrupt && terminalSignalsUs() {
		return
	}
	c.cmd.Process.Signal(sig)
}

// terminalSignalsUs reports whether this process is in the foreground
// process group of its controlling terminal, which receives the
// terminal's SIGINT; the command, started in the same group, receives it
// too.
func terminalSignalsUs() bool {
	tty, err := os.Open("/dev/tty")
	if err != nil {
		return false // no controlling terminal
	}
	defer tty.Close()
	pgrp, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

// exitStatus is the command's status as a shell reports it: its exit
// code, or 128+N when signal N ended it.
func exitStatus(st *os.ProcessState) int {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}

// describeExit says how the command ended, for the last line of the banner.
func describeExit(st *os.ProcessState) string {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		s := fmt.Sprintf("was killed by signal %d (%s)", int(ws.Signal()), unix.SignalName(ws.Signal()))
		if ws.CoreDump() {
			s += ", core dumped"
		}
		return s
	}
	return fmt.Sprintf("exited with status %d", st.ExitCode())
}
