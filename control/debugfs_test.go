package control_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/control"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/sim"
)

// debugfsDir writes a directory of plain files standing in for the
// driver's debugfs attributes, with the given contents.
func debugfsDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDebugFS(t *testing.T) {
	dir := debugfsDir(t, map[string]string{
		"addr":     "",
		"data32":   "0x0000abcd\n",
		"data64":   "0x0000000100000002\n",
		"clk_gate": "1\n",
	})
	f, err := control.OpenDebugFSDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "clk_gate"); !strings.HasPrefix(got, "0") {
		t.Errorf("clk_gate while open: %q, want clock gating off", got)
	}
	if v, err := f.Read32(0x1234); err != nil || v != 0xabcd {
		t.Errorf("Read32: %#x %v", v, err)
	}
	if got := readFile(t, dir, "addr"); got != "0x1234\n" {
		t.Errorf("addr after Read32: %q", got)
	}
	if v, err := f.Read64(0x10000); err != nil || v != 0x100000002 {
		t.Errorf("Read64: %#x %v", v, err)
	}
	if err := f.Write32(0x1000007ff8000000, 0xff); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "addr"); got != "0x1000007ff8000000\n" {
		t.Errorf("addr after Write32: %q", got)
	}
	if got := readFile(t, dir, "data32"); !strings.HasPrefix(got, "0xff\n") {
		t.Errorf("data32 after Write32: %q", got)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "clk_gate"); !strings.HasPrefix(got, "1") {
		t.Errorf("clk_gate after Close: %q, want restored", got)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := f.Read32(0); !errors.Is(err, ioctl.ErrClosed) {
		t.Errorf("Read32 after Close: %v", err)
	}
}

func TestDebugFSErrors(t *testing.T) {
	// A driver without data64 and clk_gate, whose data32 gives nothing
	// (as while the device is in reset).
	dir := debugfsDir(t, map[string]string{"addr": "", "data32": ""})
	f, err := control.OpenDebugFSDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Read64(0); !errors.Is(err, control.ErrNotSupported) {
		t.Errorf("Read64 without data64: %v", err)
	}
	if _, err := f.Read32(0); !errors.Is(err, ioctl.ErrNotOperational) || errors.Is(err, ioctl.ErrDeviceBusy) {
		t.Errorf("Read32 of an empty answer: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data32"), []byte("zz\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Read32(0); err == nil {
		t.Error("Read32 accepted a malformed value")
	}
	if _, err := control.OpenDebugFSDir(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("empty directory: %v", err)
	}
}

func TestDebugFSSimulator(t *testing.T) {
	d := open(t, sim.Gaudi2)
	if _, err := control.OpenDebugFS(d); !errors.Is(err, control.ErrNotSupported) {
		t.Fatalf("simulator: %v", err)
	}
}
