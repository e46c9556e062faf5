package scenario

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/internal/hlsimtest"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/ipc"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
)

// The importer of TestTwoProcesses is this test binary run again with
// these variables set (see TestMain).
const (
	envImporter = "SCENARIO_IMPORTER" // the served directory
	envSocket   = "SCENARIO_SOCKET"
	envHandle   = "SCENARIO_HANDLE"
)

const shared = 4 << 20 // bytes exported

func TestMain(m *testing.M) {
	if dir := os.Getenv(envImporter); dir != "" {
		if err := importer(dir); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestTwoProcesses has two processes share device memory of one served
// simulated server, each with its own device: the exporter holds device 0,
// whose compute node the importer cannot open (EBUSY across processes);
// the importer opens device 1, receives the exporter's dma-buf through
// ipc, and reads the bytes through the simulator's test hook (a Gaudi
// dma-buf cannot be mapped). It reads them twice, before and after the
// exporter rewrites them on its device, so the dma-buf provably is that
// device memory, not a copy of it.
func TestTwoProcesses(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:2")
	d, err := device.Open(s.Node(0, false))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	e, err := dma.New(m, dma.Options{}) // Buffer.WriteAt copies with it
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	buf, err := m.Alloc(2*shared, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first, second := make([]byte, shared), make([]byte, shared)
	pattern(first, 1)
	pattern(second, 2)
	if _, err := buf.WriteAt(first, shared); err != nil {
		t.Fatal(err)
	}
	x, err := buf.Export(shared, shared, memory.ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	srv, err := ipc.NewExporter("", ipc.ExporterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	h, err := srv.Export(x, ipc.DeviceIDOf(d))
	if err != nil {
		t.Fatal(err)
	}

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envImporter+"="+s.Dir, envSocket+"="+srv.Addr(), envHandle+"="+h.String())
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer in.Close()
	lines := bufio.NewScanner(out)
	next := func() string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("importer stopped\nhlsim:\n%s", s.Log())
		}
		if l := lines.Text(); !strings.HasPrefix(l, "error:") {
			return l
		}
		t.Fatalf("importer: %s\nhlsim:\n%s", lines.Text(), s.Log())
		return ""
	}
	if got := next(); got != "device 0 busy" {
		t.Fatalf("importer on the exporter's device: %q", got)
	}
	if got := next(); got != "device 1" {
		t.Fatalf("importer's device: %q", got)
	}
	if got, want := next(), fmt.Sprint(crc32.ChecksumIEEE(first)); got != want {
		t.Fatalf("importer read checksum %s, want %s (the exported bytes)", got, want)
	}
	// The exporter rewrites the exported range on its device; the
	// importer's dma-buf shows the new bytes.
	if _, err := buf.WriteAt(second, shared); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(in, "again")
	if got, want := next(), fmt.Sprint(crc32.ChecksumIEEE(second)); got != want {
		t.Fatalf("importer read checksum %s after the rewrite, want %s", got, want)
	}
}

// importer is the second process of TestTwoProcesses. It prints one line
// per step.
func importer(dir string) error {
	if _, err := device.Open(dir + "/dev/accel/accel0"); !errors.Is(err, ioctl.ErrDeviceBusy) {
		return fmt.Errorf("open of the exporter's device: %v, want EBUSY", err)
	}
	fmt.Println("device 0 busy")
	d, err := device.Open(dir + "/dev/accel/accel1")
	if err != nil {
		return err
	}
	defer d.Close()
	if !d.Simulated() {
		return errors.New("the served device does not say it is simulated")
	}
	fmt.Println("device 1")
	h, err := ipc.ParseHandle(os.Getenv(envHandle))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	im, err := ipc.Import(ctx, os.Getenv(envSocket), h)
	if err != nil {
		return err
	}
	defer im.Close()
	read := func() error {
		b := make([]byte, im.Size)
		if _, err := sim.TestHookReadDMABuf(int(im.File.Fd()), 0, b); err != nil {
			return err
		}
		fmt.Println(crc32.ChecksumIEEE(b))
		return nil
	}
	if err := read(); err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "again" {
		return errors.New("no second round")
	}
	return read()
}
