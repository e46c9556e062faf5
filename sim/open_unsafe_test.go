package sim

import (
	"errors"
	"os"
	"os/exec"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// newTestSystem returns a System whose lock files live in a fresh
// directory. The test fails when, at its end, a device recorded strict
// mode violations it did not expect (Device.ExpectViolations) or take
// (Device.TakeViolations).
func newTestSystem(t *testing.T, cfg Config) *System {
	t.Helper()
	if cfg.LockDir == "" {
		cfg.LockDir = t.TempDir()
	}
	if cfg.Driver == 0 {
		// The package's tests are of the upstream driver unless they
		// ask, whatever GAUDI_SIM_DRIVER says.
		cfg.Driver = DriverUpstream
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.CheckStrict(); err != nil {
			t.Error(err)
		}
		s.Close()
	})
	return s
}

// takeViolations takes the device's strict mode violations and fails the
// test unless their kinds are want, in order. With strict mode off
// (GAUDI_SIM_STRICT=0) there is nothing to take.
func takeViolations(t *testing.T, d *Device, want ...ViolationKind) []Violation {
	t.Helper()
	if !d.Strict() {
		return nil
	}
	got := d.TakeViolations()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = got[i].Kind == want[i]
	}
	if !ok {
		t.Errorf("strict mode violations %v, want kinds %v", got, want)
	}
	return got
}

func info(f *File, op uint32, out []byte) error {
	a := hl.InfoArgs{Op: op, ReturnSize: uint32(len(out))}
	if len(out) > 0 {
		a.ReturnPointer = hl.SlicePointer(out)
	}
	return f.Ioctl(hl.DRM_IOCTL_HL_INFO, unsafe.Pointer(&a))
}

func TestOpenRules(t *testing.T) {
	s := newTestSystem(t, Default(Gaudi2, 2))
	d := s.Device(0)
	f, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Open(); !errors.Is(err, unix.EBUSY) {
		t.Fatalf("second compute open: %v, want EBUSY", err)
	}
	// Another device is independent.
	g, err := s.Device(1).Open()
	if err != nil {
		t.Fatalf("open of the second device: %v", err)
	}
	g.Close()
	// Control opens are unlimited and serve only INFO.
	var ctl []*File
	for i := 0; i < 4; i++ {
		c, err := d.OpenControl()
		if err != nil {
			t.Fatal(err)
		}
		ctl = append(ctl, c)
	}
	var cb hl.CBArgs
	if err := ctl[0].Ioctl(hl.DRM_IOCTL_HL_CB, unsafe.Pointer(&cb)); !errors.Is(err, unix.ENOTTY) {
		t.Errorf("CB on control: %v, want ENOTTY", err)
	}
	buf := make([]byte, unsafe.Sizeof(hl.InfoHWIPInfo{}))
	if err := info(ctl[1], hl.HL_INFO_HW_IP_INFO, buf); err != nil {
		t.Errorf("INFO on control: %v", err)
	}
	if err := info(ctl[1], hl.HL_INFO_GET_EVENTS, make([]byte, 8)); !errors.Is(err, unix.EOPNOTSUPP) {
		t.Errorf("GET_EVENTS on control: %v, want EOPNOTSUPP", err)
	}
	for _, c := range ctl {
		c.Close()
	}
	// Close is idempotent and frees the context.
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := info(f, hl.HL_INFO_HW_IP_INFO, buf); !errors.Is(err, unix.EBADF) {
		t.Errorf("INFO after Close: %v, want EBADF", err)
	}
	f2, err := d.Open()
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	f2.Close()
	// States.
	for _, tt := range []struct {
		state State
		want  unix.Errno
	}{{InReset, unix.EAGAIN}, {InResetAfterDeviceRelease, unix.EAGAIN}, {NeedsReset, unix.EPERM}, {Malfunction, unix.EPERM}} {
		d.SetState(tt.state)
		if _, err := d.Open(); !errors.Is(err, tt.want) {
			t.Errorf("open in state %v: %v, want %v", tt.state, err, tt.want)
		}
	}
	if _, err := d.OpenControl(); !errors.Is(err, unix.EPERM) {
		t.Errorf("control open while disabled: %v, want EPERM", err)
	}
	d.SetState(Operational)
}

// TestOpenAcrossProcesses holds the compute context in a child process and
// checks that this process gets EBUSY.
func TestOpenAcrossProcesses(t *testing.T) {
	if os.Getenv("SIM_TEST_CHILD") != "" {
		s, err := New(Config{Devices: Default(Gaudi2, 1).Devices, LockDir: os.Getenv("SIM_TEST_LOCKDIR")})
		if err != nil {
			os.Exit(2)
		}
		f, err := s.Device(0).Open()
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("open\n")
		var b [1]byte
		os.Stdin.Read(b[:]) // hold until the parent is done
		f.Close()
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenAcrossProcesses$")
	cmd.Env = append(os.Environ(), "SIM_TEST_CHILD=1", "SIM_TEST_LOCKDIR="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 5)
	if _, err := stdout.Read(line); err != nil || string(line) != "open\n" {
		t.Fatalf("child did not open: %q %v", line, err)
	}
	s := newTestSystem(t, Config{Devices: Default(Gaudi2, 1).Devices, LockDir: dir})
	if _, err := s.Device(0).Open(); !errors.Is(err, unix.EBUSY) {
		t.Errorf("open while another process owns the device: %v, want EBUSY", err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	f, err := s.Device(0).Open()
	if err != nil {
		t.Fatalf("open after the other process exited: %v", err)
	}
	f.Close()
}

func TestHWIPInfoGaudi2(t *testing.T) {
	s := newTestSystem(t, Default(Gaudi2, 1))
	f, err := s.Device(0).Open()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r hl.InfoHWIPInfo
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&r)), unsafe.Sizeof(r))
	if err := info(f, hl.HL_INFO_HW_IP_INFO, buf); err != nil {
		t.Fatal(err)
	}
	if r.DeviceID != 0x1020 || r.DRAMBaseAddress != 0x1001001800000000 || r.DRAMPageSize != 768<<20 || r.DRAMSize != 127*(768<<20) {
		t.Errorf("HW_IP_INFO = id %#x base %#x page %#x size %#x", r.DeviceID, r.DRAMBaseAddress, r.DRAMPageSize, r.DRAMSize)
	}
	// A bad pointer is EFAULT, not a crash.
	a := hl.InfoArgs{Op: hl.HL_INFO_HW_IP_INFO, ReturnSize: 8}
	setPointer(&a.ReturnPointer, 8)
	if err := f.Ioctl(hl.DRM_IOCTL_HL_INFO, unsafe.Pointer(&a)); !errors.Is(err, unix.EFAULT) {
		t.Errorf("bad return pointer: %v, want EFAULT", err)
	}
}

// TestDupHandle ports hl-thunk's duplicated-fd scenario: a duplicate keeps
// the context after the original is closed, and the last close frees it.
func TestDupHandle(t *testing.T) {
	s := newTestSystem(t, Default(Gaudi2, 1))
	d := s.Device(0)
	f, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	h, err := f.Dup()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if err := info(f, hl.HL_INFO_DEVICE_STATUS, buf); !errors.Is(err, unix.EBADF) {
		t.Errorf("INFO on the closed original: %v, want EBADF", err)
	}
	a := hl.InfoArgs{Op: hl.HL_INFO_DEVICE_STATUS, ReturnSize: 8, ReturnPointer: hl.SlicePointer(buf[:])}
	if err := h.Ioctl(hl.DRM_IOCTL_HL_INFO, unsafe.Pointer(&a)); err != nil {
		t.Errorf("INFO on the duplicate: %v", err)
	}
	if _, err := d.Open(); !errors.Is(err, unix.EBUSY) {
		t.Errorf("open while a duplicate holds the context: %v, want EBUSY", err)
	}
	if _, err := f.Dup(); !errors.Is(err, unix.EBADF) {
		t.Errorf("Dup of a closed handle: %v, want EBADF", err)
	}
	h.Close()
	h.Close()
	if err := h.Ioctl(hl.DRM_IOCTL_HL_INFO, unsafe.Pointer(&a)); !errors.Is(err, unix.EBADF) {
		t.Errorf("INFO on the closed duplicate: %v, want EBADF", err)
	}
	g, err := d.Open()
	if err != nil {
		t.Fatalf("open after the last handle closed: %v", err)
	}
	g.Close()
}
