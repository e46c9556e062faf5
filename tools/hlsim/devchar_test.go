package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/internal/hlsimtest"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// TestDevCharLookup runs testdata/devchar_lookup.c, which does what C
// programs do to find the sysfs directory of a node they hold: fstat the
// descriptor and open GAUDI_ROOT/sys/dev/char/MAJOR:MINOR. A served node
// is a regular file of a FUSE mount, so its st_rdev is whatever the
// kernel gives such a file (0:0), for every node; that link leads to the
// node the calling process opened last, so the program finds the device
// it holds (its dev attribute and its PCI function). The kernel's own
// numbers (261:N, 508:N) lead to their devices too, and a process that
// holds no node of a server of several devices finds nothing.
func TestDevCharLookup(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:2")
	bin := buildDevCharLookup(t)
	var st unix.Stat_t
	if err := unix.Stat(s.Node(1, false), &st); err != nil {
		t.Fatal(err)
	}
	rdev := fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	pci := func(i int) string {
		b, err := os.ReadFile(fmt.Sprintf("%s/sys/class/accel/accel%d/device/pci_addr", s.Dir, i))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}

	cmd := exec.Command(bin, s.Node(1, false), s.Node(0, true), s.Node(0, false))
	cmd.Env = s.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("devchar_lookup: %v\n%s", err, out)
	}
	want := fmt.Sprintf("%s %s dev=261:1 pci=%s\n%s %s dev=508:0 pci=-\n%s %s dev=261:0 pci=%s\n",
		s.Node(1, false), rdev, pci(1), s.Node(0, true), rdev, s.Node(0, false), rdev, pci(0))
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Errorf("lookup from fstat (-want +got):\n%s\n%s", diff, s.Log())
	}

	for _, c := range []struct{ num, dev string }{{"261:1", "261:1"}, {"508:1", "508:1"}, {"261:0", "261:0"}} {
		b, err := os.ReadFile(filepath.Join(s.Dir, "sys/dev/char", c.num, "dev"))
		if got := strings.TrimSpace(string(b)); err != nil || got != c.dev {
			t.Errorf("sys/dev/char/%s/dev: %q, %v; want %q", c.num, got, err, c.dev)
		}
	}

	// This process holds no node: on a server of two devices, which one
	// it means cannot be told.
	if _, err := os.Readlink(filepath.Join(s.Dir, "sys/dev/char", rdev)); !errors.Is(err, unix.ENOENT) {
		t.Errorf("sys/dev/char/%s from a process that holds no node: %v, want ENOENT", rdev, err)
	}
}

// TestDevCharLookupRun runs testdata/devchar_lookup.c inside "hlsim run",
// where the nodes are /dev/accel and the lookup goes to /sys/dev/char.
func TestDevCharLookupRun(t *testing.T) {
	hlsimtest.Skip(t)
	bin := buildDevCharLookup(t)
	out, code := hlsimtest.Run(t, "gaudi2:2", nil, bin, "/dev/accel/accel1", "/dev/accel/accel_controlD0")
	want := "/dev/accel/accel1 0:0 dev=261:1 pci=0000:1a:00.0\n/dev/accel/accel_controlD0 0:0 dev=508:0 pci=-\n"
	if diff := cmp.Diff(want, out); code != 0 || diff != "" {
		t.Errorf("lookup from fstat in hlsim run: status %d (-want +got):\n%s", code, diff)
	}
}

// buildDevCharLookup compiles testdata/devchar_lookup.c; a missing
// compiler fails the test.
func buildDevCharLookup(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "devchar_lookup")
	if out, err := exec.Command("gcc", "-std=gnu11", "-Wall", "-Werror", "-O1", "-o", bin,
		filepath.Join("testdata", "devchar_lookup.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc (is it installed?): %v\n%s", err, out)
	}
	return bin
}
