package control

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/ioctl"
	"golang.org/x/sys/unix"
)

// DebugFS reads and writes device addresses (registers, SRAM, DRAM, host
// memory through the device MMU) with the driver's debugfs files: the
// address goes to addr, the value comes from or goes to data32 or data64.
// It needs root (debugfs) and a driver built with debugfs. On the
// simulator there is none.
//
// A DebugFS is safe for concurrent use: each access holds a lock for its
// address and data steps. Close is idempotent.
type DebugFS struct {
	dir string

	mu      sync.Mutex
	closed  bool
	addr    *os.File
	data32  *os.File
	data64  *os.File // nil when the driver has no data64
	clkGate *os.File // nil when the driver has no clk_gate
	saved   string   // clk_gate's value at open
}

// debugFSRoot is where debugfs is mounted.
const debugFSRoot = "/sys/kernel/debug"

// OpenDebugFS opens the debugfs directory of the device d is open on. The
// directory is accel/<PCI address> on 6.12 kernels (the DRM device's
// unique name), accel/<index> on the first accel kernels, and
// habanalabs/hl<index> before them; the first that exists is used. It
// replaces hlthunk_debugfs_open, which knows the accel/<index> form only.
func OpenDebugFS(d *device.Device) (*DebugFS, error) {
	if d.Simulated() {
		return nil, fmt.Errorf("debugfs of %s: %w", d.Path(), ErrNotSupported)
	}
	addr, err := d.PCIAddress()
	if err != nil {
		return nil, fmt.Errorf("debugfs of %s: %w", d.Path(), err)
	}
	n, err := device.SysFS{}.NodeByPCIAddress(addr)
	if err != nil {
		return nil, fmt.Errorf("debugfs of %s: %w", d.Path(), err)
	}
	dir, err := findDebugFSDir(debugFSDirs(debugFSRoot, n))
	if err != nil {
		return nil, fmt.Errorf("debugfs of %s: %w", d.Path(), err)
	}
	return OpenDebugFSDir(dir)
}

// debugFSDirs lists where the driver may have put node n's debugfs files
// below root, newest kernels first.
func debugFSDirs(root string, n device.Node) []string {
	index := strconv.Itoa(n.Index)
	if n.Layout == device.LayoutLegacy {
		return []string{filepath.Join(root, "habanalabs", "hl"+index)}
	}
	var dirs []string
	if n.PCIAddress != "" {
		dirs = append(dirs, filepath.Join(root, "accel", n.PCIAddress))
	}
	return append(dirs, filepath.Join(root, "accel", index))
}

// findDebugFSDir returns the first of dirs that holds a data32 file.
func findDebugFSDir(dirs []string) (string, error) {
	for _, dir := range dirs {
		_, err := os.Stat(filepath.Join(dir, "data32"))
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("no debugfs directory among %s: %w", strings.Join(dirs, ", "), ErrNotSupported)
}

// OpenDebugFSDir opens the driver's debugfs files in dir. Like hl-thunk it
// turns clock gating off while open (writes "0" to clk_gate) and puts the
// old value back in Close; 6.12 drivers accept and ignore clk_gate.
func OpenDebugFSDir(dir string) (*DebugFS, error) {
	f := &DebugFS{dir: dir}
	var err error
	open := func(name string, optional bool) *os.File {
		if err != nil {
			return nil
		}
		file, e := os.OpenFile(filepath.Join(dir, name), os.O_RDWR, 0)
		if e != nil && !(optional && errors.Is(e, fs.ErrNotExist)) {
			err = fmt.Errorf("open debugfs: %w", e)
		}
		return file
	}
	f.addr = open("addr", false)
	f.data32 = open("data32", false)
	f.data64 = open("data64", true)
	f.clkGate = open("clk_gate", true)
	if err == nil && f.clkGate != nil {
		buf := make([]byte, 32)
		n, e := pread(f.clkGate, buf)
		if e != nil {
			err = fmt.Errorf("read clk_gate: %w", e)
		} else {
			f.saved = strings.TrimSpace(string(buf[:n]))
			if _, e := pwrite(f.clkGate, []byte("0")); e != nil {
				err = fmt.Errorf("write clk_gate: %w", e)
			}
		}
	}
	if err != nil {
		return nil, errors.Join(err, f.closeFiles())
	}
	return f, nil
}

// Dir returns the debugfs directory.
func (f *DebugFS) Dir() string { return f.dir }

// Read32 reads the 32-bit value at device address addr. It replaces
// hlthunk_debugfs_read.
func (f *DebugFS) Read32(addr uint64) (uint32, error) {
	v, err := f.read(addr, f.data32, "data32", 32)
	return uint32(v), err
}

// Read64 reads the 64-bit value at device address addr.
func (f *DebugFS) Read64(addr uint64) (uint64, error) {
	return f.read(addr, f.data64, "data64", 64)
}

// Write32 writes the 32-bit value v at device address addr. It replaces
// hlthunk_debugfs_write.
func (f *DebugFS) Write32(addr uint64, v uint32) error {
	return f.write(addr, f.data32, "data32", uint64(v))
}

// Write64 writes the 64-bit value v at device address addr.
func (f *DebugFS) Write64(addr uint64, v uint64) error {
	return f.write(addr, f.data64, "data64", v)
}

// errInReset is the answer of a debugfs file that transfers nothing: the
// driver does so while the device is in reset.
var errInReset = fmt.Errorf("debugfs: nothing transferred (device in reset?): %w", ioctl.ErrNotOperational)

func (f *DebugFS) read(addr uint64, data *os.File, name string, bits int) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.setAddr(addr, data, name); err != nil {
		return 0, err
	}
	buf := make([]byte, 32)
	n, err := pread(data, buf)
	if err != nil {
		return 0, fmt.Errorf("debugfs read %#x: %w", addr, err)
	}
	if n == 0 {
		return 0, errInReset
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(buf[:n])), 0, bits)
	if err != nil {
		return 0, fmt.Errorf("debugfs read %#x: %s: %w", addr, name, err)
	}
	return v, nil
}

func (f *DebugFS) write(addr uint64, data *os.File, name string, v uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.setAddr(addr, data, name); err != nil {
		return err
	}
	s := "0x" + strconv.FormatUint(v, 16) + "\n"
	n, err := pwrite(data, []byte(s))
	if err != nil {
		return fmt.Errorf("debugfs write %#x: %w", addr, err)
	}
	if n == 0 {
		return errInReset
	}
	return nil
}

// setAddr writes the address, checking the file is usable. f.mu is held.
func (f *DebugFS) setAddr(addr uint64, data *os.File, name string) error {
	if f.closed {
		return fmt.Errorf("debugfs: %w", ioctl.ErrClosed)
	}
	if data == nil {
		return fmt.Errorf("debugfs: no %s in %s: %w", name, f.dir, ErrNotSupported)
	}
	n, err := pwrite(f.addr, []byte("0x"+strconv.FormatUint(addr, 16)+"\n"))
	if err != nil {
		return fmt.Errorf("debugfs address %#x: %w", addr, err)
	}
	if n == 0 {
		return errInReset
	}
	return nil
}

// Close restores clk_gate and closes the files. It replaces
// hlthunk_debugfs_close.
func (f *DebugFS) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	var err error
	if f.clkGate != nil && f.saved != "" {
		if _, e := pwrite(f.clkGate, []byte(f.saved)); e != nil {
			err = fmt.Errorf("restore clk_gate: %w", e)
		}
	}
	return errors.Join(err, f.closeFiles())
}

// closeFiles closes the open debugfs files and returns their errors.
func (f *DebugFS) closeFiles() error {
	var errs []error
	for _, file := range []*os.File{f.addr, f.data32, f.data64, f.clkGate} {
		if file != nil {
			if err := file.Close(); err != nil {
				errs = append(errs, fmt.Errorf("debugfs: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// pread reads once at offset 0. A debugfs attribute is read whole by one
// read; os.File.ReadAt would loop.
func pread(file *os.File, b []byte) (int, error) {
	return rawIO(file, func(fd int) (int, error) { return unix.Pread(fd, b, 0) })
}

// pwrite writes once at offset 0. The driver's data files answer 0 bytes
// written while the device is in reset, on which os.File.WriteAt would
// spin.
func pwrite(file *os.File, b []byte) (int, error) {
	return rawIO(file, func(fd int) (int, error) { return unix.Pwrite(fd, b, 0) })
}

// rawIO runs one system call on the file's descriptor, retrying EINTR.
func rawIO(file *os.File, call func(fd int) (int, error)) (int, error) {
	rc, err := file.SyscallConn()
	if err != nil {
		return 0, err
	}
	var (
		n    int
		cerr error
	)
	err = rc.Control(func(fd uintptr) {
		for {
			n, cerr = call(int(fd))
			if cerr != unix.EINTR {
				return
			}
		}
	})
	if err != nil {
		return 0, err
	}
	return n, cerr
}
