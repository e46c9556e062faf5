package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/hlsimproto"
	"github.com/gaudi-go/gaudi/internal/hlsimtest"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The tests run hlsim as a program (hlsimtest builds it) and reach the
// nodes through the kernel. Clients in other processes are this test
// binary run again with hlsimChildEnv set: see TestMain.

const hlsimChildEnv = "HLSIM_TEST_CHILD"

func TestMain(m *testing.M) {
	if cmd := os.Getenv(hlsimChildEnv); cmd != "" {
		os.Exit(child(cmd))
	}
	os.Exit(m.Run())
}

// child runs a client command in a process of its own and prints its
// result: "open PATH" opens a node and prints "ok" or the errno's number;
// "info FD" runs INFO HW_IP_INFO on inherited descriptor FD.
func child(cmd string) int {
	f := strings.Fields(cmd)
	switch f[0] {
	case "open":
		fd, err := unix.Open(f[1], unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			fmt.Println(int(err.(unix.Errno)))
			return 0
		}
		fmt.Println("ok")
		unix.Close(fd)
	case "info":
		fd, _ := strconv.Atoi(f[1])
		fmt.Println(hwIPInfo(fd))
	case "openexec":
		// Open a node keeping the descriptor across exec, check it works,
		// then become another program image (same pid, new address
		// space) that runs "info FD" on the descriptor it inherited.
		fd, err := unix.Open(f[1], unix.O_RDWR, 0)
		if err != nil {
			fmt.Println("open:", err)
			return 1
		}
		if got := hwIPInfo(fd); got != "ok" {
			fmt.Println("INFO before exec:", got)
			return 1
		}
		exe, err := os.Executable()
		if err != nil {
			fmt.Println(err)
			return 1
		}
		var env []string
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, hlsimChildEnv+"=") {
				env = append(env, e)
			}
		}
		env = append(env, hlsimChildEnv+"=info "+strconv.Itoa(fd))
		err = unix.Exec(exe, []string{exe}, env)
		fmt.Println("exec:", err)
		return 1
	case "block":
		// Submit a CS that never completes (a FENCE nothing satisfies)
		// with a 1 s timeout, then wait to be killed.
		if err := blockDevice(f[1]); err != nil {
			fmt.Println("error:", err)
			return 1
		}
		fmt.Println("submitted")
		time.Sleep(time.Minute)
		fmt.Println("still alive")
	case "fds":
		// The descriptors this process was given beyond stdio.
		for _, l := range openFDs() {
			fmt.Println(l)
		}
		fmt.Println("end")
	case "hold":
		fd, _ := strconv.Atoi(f[1])
		return holdDMABuf(fd)
	case "waitmany":
		return waitMany(f[1])
	case "discover":
		// Unmodified discovery: /sys and /dev as the kernel has them.
		d, err := device.Open("")
		if err != nil {
			fmt.Println(err)
			return 1
		}
		defer d.Close()
		addr, _ := d.PCIAddress()
		fmt.Println(d.Path(), d.ASIC(), addr, d.Simulated())
	default:
		return orphanChild(f) // orphan_test.go
	}
	return 0
}

// hwIPInfo runs INFO HW_IP_INFO on fd and returns "ok" or the errno's
// number.
func hwIPInfo(fd int) string {
	var r hl.InfoHWIPInfo
	a := hl.InfoArgs{ReturnPointer: hl.NewPointer(unsafe.Pointer(&r)), ReturnSize: uint32(unsafe.Sizeof(r)), Op: hl.HL_INFO_HW_IP_INFO}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(hl.DRM_IOCTL_HL_INFO), uintptr(unsafe.Pointer(&a)))
	if e != 0 {
		return strconv.Itoa(int(e))
	}
	if r.DeviceID != 0x1020 {
		return fmt.Sprintf("device id %#x", r.DeviceID)
	}
	return "ok"
}

// registerEventfd registers efd on the compute file fd (INFO
// REGISTER_EVENTFD).
func registerEventfd(fd, efd int) error {
	a := hl.InfoArgs{Op: hl.HL_INFO_REGISTER_EVENTFD}
	a.SetEventfd(uint32(efd))
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(hl.DRM_IOCTL_HL_INFO), uintptr(unsafe.Pointer(&a)))
	if e != 0 {
		return fmt.Errorf("register eventfd: %w", e)
	}
	return nil
}

// runChild runs cmd in a child process and returns what it printed.
func runChild(t *testing.T, cmd string, files ...*os.File) string {
	t.Helper()
	c := childCommand(t, cmd)
	c.ExtraFiles = files
	out, err := c.Output()
	if err != nil {
		t.Fatalf("child %q: %v: %s", cmd, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestDiscovery lists and opens the served devices through GAUDI_ROOT.
func TestDiscovery(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:2")
	nodes, err := device.SysFS{Root: s.Dir}.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 2 {
		t.Fatalf("%d nodes, want 2: %+v", len(nodes), nodes)
	}
	for i, n := range nodes {
		if n.Index != i || n.Path != fmt.Sprintf("/dev/accel/accel%d", i) || n.ControlPath == "" ||
			n.DeviceID != 0x1020 || n.Status != "Operational" || n.ModuleID != i || n.PCIAddress == "" {
			t.Errorf("node %d: %+v", i, n)
		}
	}
	t.Setenv(device.RootEnv, s.Dir)
	d, err := device.Open("module:1")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Path() != s.Node(1, false) || d.ASIC() != device.Gaudi2 {
		t.Fatalf("opened %s, %v", d.Path(), d.ASIC())
	}
	c, err := device.OpenControl("0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.DRAMUsage(); err != nil {
		t.Fatal(err)
	}
}

// TestComputeExclusive keeps one compute open per device across processes,
// any number of control opens, and no spurious EBUSY when a process closes
// and opens again at once (the kernel releases asynchronously).
func TestComputeExclusive(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:1")
	f, err := ioctl.OpenFile(s.Node(0, false))
	if err != nil {
		t.Fatal(err)
	}
	if got := runChild(t, "open "+s.Node(0, false)); got != strconv.Itoa(int(unix.EBUSY)) {
		t.Fatalf("second compute open from another process: %s, want EBUSY (%d)", got, unix.EBUSY)
	}
	if got := runChild(t, "open "+s.Node(0, true)); got != "ok" {
		t.Fatalf("control open while the compute node is held: %s", got)
	}
	if _, err := ioctl.OpenFile(s.Node(0, false)); !errors.Is(err, unix.EBUSY) {
		t.Fatalf("second compute open in the same process: %v, want EBUSY", err)
	}
	f.Close()
	for i := range 1000 {
		fd, err := unix.Open(s.Node(0, false), unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatalf("open %d after close: %v\n%s", i, err, s.Log())
		}
		unix.Close(fd)
	}
	if got := runChild(t, "open "+s.Node(0, false)); got != "ok" {
		t.Fatalf("compute open from another process once free: %s", got)
	}
}

// TestOtherProcessRefused refuses ioctls from a process the file was
// passed to: its pointers would be read in the opener's memory.
func TestOtherProcessRefused(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:1")
	f, err := os.OpenFile(s.Node(0, true), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := hwIPInfo(int(f.Fd())); got != "ok" {
		t.Fatalf("INFO from the opener: %s", got)
	}
	if got := runChild(t, "info 3", f); got != strconv.Itoa(int(unix.EPERM)) {
		t.Fatalf("INFO from a process the descriptor was passed to: %s, want EPERM", got)
	}
	if !s.WaitLog("did not open it", 30*time.Second) {
		t.Fatalf("no message for the refused ioctl:\n%s", s.Log())
	}
}

// TestSecondInstanceAndStaleMount refuses a second server on a served
// directory, reports the mount of a server that died, and takes it over
// with -force. A stopped server leaves no mount.
func TestSecondInstanceAndStaleMount(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:1")
	bin := hlsimtest.Binary(t)
	out, err := exec.Command(bin, "serve", "-dir", s.Dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "already served by hlsim (process "+strconv.Itoa(s.Pid)+")") {
		t.Fatalf("second server: %v\n%s", err, out)
	}

	s.Kill()
	out, err = exec.Command(bin, "serve", "-dir", s.Dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "stale hlsim mount") || !strings.Contains(string(out), "-force") {
		t.Fatalf("server on a stale mount: %v\n%s", err, out)
	}
	s2, err := hlsimtest.Start(bin, s.Dir, "gaudi2:1", "-force")
	if err != nil {
		t.Fatal(err)
	}
	if got := hwIPInfoAt(t, s2.Node(0, true)); got != "ok" {
		t.Fatalf("INFO on the new server: %s", got)
	}
	if err := s2.Stop(); err != nil {
		t.Fatal(err)
	}
	if typ, err := mountAt(s.Dir); err != nil || typ != "" {
		t.Fatalf("after SIGTERM: %q mounted on %s (%v)", typ, s.Dir, err)
	}
}

func hwIPInfoAt(t *testing.T, path string) string {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return hwIPInfo(int(f.Fd()))
}

// TestTSAlias checks that the server keeps timestamp buffers where the
// library maps them.
func TestTSAlias(t *testing.T) {
	for _, off := range []uint64{7<<12 | hlsimproto.TSBit, 3<<12 | 2<<59} {
		want := off
		if off&hlsimproto.TSBit != 0 {
			want = off&^hlsimproto.TSBit | hlsimproto.TSAliasBit
		}
		if got := sim.MmapFileOffset(off); got != want {
			t.Errorf("MmapFileOffset(%#x) = %#x, want %#x", off, got, want)
		}
	}
}

// TestRun runs commands where the devices are /dev/accel and
// /sys/class/accel, with the command's exit status, and leaves nothing on
// the host.
func TestRun(t *testing.T) {
	hostAccel := exists("/dev/accel")
	hostClass := exists("/sys/class/accel")
	before := runMounts(t)

	out, code := hlsimtest.Run(t, "gaudi2:2", nil, "sh", "-c",
		"ls /dev/accel; cat /sys/class/accel/accel1/device/pci_addr /sys/class/accel/accel0/device/status; ls /dev/null /dev/pts >/dev/null && echo host-dev; exit 7")
	if code != 7 {
		t.Errorf("exit status %d, want 7", code)
	}
	for _, w := range []string{"accel0\naccel1\naccel_controlD0\naccel_controlD1\n", "0000:1a:00.0\nOperational\n", "host-dev"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, code = hlsimtest.Run(t, "gaudi2:1", append(os.Environ(), hlsimChildEnv+"=discover"), exe)
	if code != 0 || strings.TrimSpace(out) != "/dev/accel/accel0 GAUDI2 0000:19:00.0 true" {
		t.Errorf("discovery in hlsim run: %q, status %d", out, code)
	}

	if exists("/dev/accel") != hostAccel || exists("/sys/class/accel") != hostClass {
		t.Error("hlsim run changed /dev/accel or /sys/class/accel on the host")
	}
	if after := runMounts(t); len(after) > len(before) {
		t.Errorf("hlsim run left a mount on the host: %q (before: %q)", after, before)
	}
}

// runMounts lists the mount points of this mount namespace that only a
// leaking hlsim run makes: its work directory (os.TempDir()/hlsim-run-*)
// and the device directories it covers in its own namespace. Counting
// every fuse.hlsim mount instead made the test fail when another test of
// the same run (an hlsim serve of its own) mounted at the same time.
func runMounts(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(os.TempDir(), "hlsim-run-")
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		switch mp := f[4]; {
		case strings.HasPrefix(mp, work), mp == "/dev/accel", mp == "/sys/class/accel", mp == "/sys/dev/char":
			out = append(out, mp)
		}
	}
	return out
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestRunGaudi3DMA runs examples/dma on a served Gaudi3: the library maps
// PDMA channel blocks through the node, rings their MSQs in its own memory
// and waits for the user interrupt, and the example verifies its bytes.
func TestRunGaudi3DMA(t *testing.T) {
	hlsimtest.Skip(t)
	bin := filepath.Join(t.TempDir(), "dma")
	gocmd, err := exec.LookPath("go")
	if err != nil {
		gocmd = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	if out, err := exec.Command(gocmd, "build", "-o", bin, "github.com/gaudi-go/gaudi/examples/dma").CombinedOutput(); err != nil {
		t.Fatalf("go build examples/dma: %v\n%s", err, out)
	}
	out, code := hlsimtest.Run(t, "gaudi3:2", nil, bin)
	if code != 0 {
		t.Fatalf("examples/dma exited %d:\n%s", code, out)
	}
	for _, w := range []string{"device: GAUDI3 module 0 (/dev/accel/accel0)", "verified: 67108864 bytes identical"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// TestExecRefused binds a file to the address space of the process that
// opened it, not to its pid: after the opener execs another image (same
// pid, new address space, as a setuid program would be), an ioctl from
// the new image on the descriptor it inherited is refused and its memory
// is not written (the INFO answer would land in it).
func TestExecRefused(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:1")
	for _, ctl := range []bool{false, true} {
		got := runChild(t, "openexec "+s.Node(0, ctl))
		if got != strconv.Itoa(int(unix.EPERM)) {
			t.Fatalf("INFO from a new image of the opener (control %v): %q, want EPERM (%d)\n%s", ctl, got, unix.EPERM, s.Log())
		}
	}
}
