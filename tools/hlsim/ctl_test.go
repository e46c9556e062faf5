package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/hlsimtest"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/stream"
	"golang.org/x/sys/unix"
)

// ctl runs "hlsim ctl -dir dir args..." and returns its error and output.
func ctl(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(hlsimtest.Binary(t), append([]string{"ctl", "-dir", dir}, args...)...).CombinedOutput()
	return string(out), err
}

// TestCtl drives a served device from the command line while a client
// holds it: an injected fault, a hard reset, a state change, and a
// command the server refuses.
func TestCtl(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:1")
	d, err := device.Open(s.Node(0, false))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	if out, err := ctl(t, s.Dir, "fault", "0", "INFO", "EIO"); err != nil {
		t.Fatalf("ctl fault: %v\n%s", err, out)
	}
	if _, err := d.Status(); !errors.Is(err, unix.EIO) {
		t.Fatalf("INFO after the injected fault: %v, want EIO", err)
	}
	if _, err := d.Status(); err != nil {
		t.Fatalf("the fault fired twice: %v", err)
	}

	before, err := d.ResetCount()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := ctl(t, s.Dir, "reset", "0"); err != nil {
		t.Fatalf("ctl reset: %v\n%s", err, out)
	}
	if after, err := d.ResetCount(); err != nil || after.Hard != before.Hard+1 {
		t.Fatalf("hard resets %d -> %d (%v)", before.Hard, after.Hard, err)
	}
	// The driver's hard_reset attribute does the same.
	if err := os.WriteFile(filepath.Join(s.Dir, "sys/class/accel/accel0/device/hard_reset"), []byte("1\n"), 0); err != nil {
		t.Fatal(err)
	}
	if after, err := d.ResetCount(); err != nil || after.Hard != before.Hard+2 {
		t.Fatalf("hard resets %d -> %d after hard_reset (%v)", before.Hard, after.Hard, err)
	}

	status := filepath.Join(s.Dir, "sys/class/accel/accel0/device/status")
	if out, err := ctl(t, s.Dir, "state", "0", "disabled"); err != nil {
		t.Fatalf("ctl state: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(status); string(b) != "Disabled\n" {
		t.Errorf("status %q after disabling", b)
	}
	if _, err := device.OpenControl(s.Node(0, true)); !errors.Is(err, unix.EPERM) {
		t.Errorf("control open of a disabled device: %v, want EPERM", err)
	}
	if out, err := ctl(t, s.Dir, "state", "0", "operational"); err != nil {
		t.Fatalf("ctl state: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(status); string(b) != "Operational\n" {
		t.Errorf("status %q after enabling", b)
	}

	out, err := ctl(t, s.Dir, "explode", "0")
	if err == nil || !strings.Contains(out, "refused") || !strings.Contains(out, "unknown command") {
		t.Fatalf("a bad command: %v\n%s", err, out)
	}
	if !s.WaitLog(`"explode 0": unknown command`, 30*time.Second) {
		t.Errorf("the server did not say why:\n%s", s.Log())
	}
}

// blockDevice submits, on the compute node at path, a CS that never
// completes, with a 1 s timeout.
func blockDevice(path string) error {
	_, _, err := blockDeviceFor(path, time.Second)
	return err
}

// blockDeviceFor submits, on the compute node at path, a CS that never
// completes, with the given timeout, and returns its streams and sequence
// number.
func blockDeviceFor(path string, timeout time.Duration) (*stream.Streams, uint64, error) {
	d, err := device.Open(path)
	if err != nil {
		return nil, 0, err
	}
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		return nil, 0, err
	}
	h, err := m.AllocHost(4096, memory.HostOptions{})
	if err != nil {
		return nil, 0, err
	}
	b := packet.NewBuilder(packet.Gaudi2, h.Bytes()[:0])
	b.Fence(packet.Fence{ID: 1, Target: 1, Dec: 1})
	if b.Err() != nil {
		return nil, 0, b.Err()
	}
	q, err := d.Queue("PDMA_0_0")
	if err != nil {
		return nil, 0, err
	}
	s, err := stream.New(d)
	if err != nil {
		return nil, 0, err
	}
	seq, err := s.Submit(context.Background(), []stream.Chunk{{Queue: q, CB: h.VA(), Size: uint32(len(b.Bytes())), UserCB: true}},
		stream.SubmitOptions{Timeout: timeout})
	return s, seq, err
}

// TestKillOnHardReset has a client's CS time out: the driver resets the
// device and kills the process that holds it, and so does hlsim (SIGKILL);
// the device is then free again.
func TestKillOnHardReset(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), hlsimChildEnv+"=block "+s.Node(0, false))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "submitted" {
		cmd.Process.Kill()
		t.Fatalf("child: %q", sc.Text())
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("the client ended with %v, want SIGKILL", err)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the client was not killed 30 s after its CS timed out\n%s", s.Log())
	}
	if !s.WaitLog("kills process", 30*time.Second) {
		t.Errorf("the server did not say it killed the client:\n%s", s.Log())
	}
	// The killed client's release reaches the server after its exit (the
	// kernel sends FUSE's RELEASE without waiting for it): the device is
	// free once the server has taken it, within a bound.
	var d *device.Device
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		d, err = device.Open(s.Node(0, false))
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("the device after the reset: %v", err)
	}
	d.Close()
}
