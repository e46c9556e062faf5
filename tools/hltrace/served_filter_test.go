package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/internal/hlsimtest"
)

// TestServedNodeSelection: served nodes are devices to hltrace as they
// are to every other command. GAUDI_ROOT=DIR with -device 1 names
// device 1's two served nodes, a served node's path names that node (a
// regular file on FUSE, known by its file system and inode since it has
// no device number), and GAUDI_ROOT=DIR alone names every served node.
func TestServedNodeSelection(t *testing.T) {
	requireRoot(t) // hlsim serve mounts FUSE
	s := hlsimtest.Serve(t, "gaudi2:2")
	t.Setenv("GAUDI_ROOT", s.Dir)
	for _, tc := range []struct {
		sel  string
		want []string
	}{
		{"1", []string{s.Node(1, false), s.Node(1, true)}},
		{s.Node(1, false), []string{s.Node(1, false)}},
		{"", []string{s.Node(0, false), s.Node(0, true), s.Node(1, false), s.Node(1, true)}},
	} {
		sel, err := cli.ParseSelection("-device", tc.sel)
		if err != nil {
			t.Fatal(err)
		}
		f, err := resolveDevices(sel, sysfsRoot)
		if err != nil {
			t.Errorf("GAUDI_ROOT=%s -device %q: %v", s.Dir, tc.sel, err)
			continue
		}
		var got []string
		for _, n := range f.nodes {
			if !n.Served || n.Ino == 0 || n.Dev == 0 || n.Rdev != 0 {
				t.Errorf("-device %q: node %+v is not a served node known by identity", tc.sel, n)
			}
			got = append(got, n.Path)
		}
		if !slicesEqual(got, tc.want) {
			t.Errorf("-device %q: nodes %q, want %q", tc.sel, got, tc.want)
		}
		// The banner says where the selection came from.
		banner := f.describe(bannerWidth)
		want := "(-device " + tc.sel
		if tc.sel == "" {
			want = "(GAUDI_ROOT=" + s.Dir + ")"
		}
		if len(banner) == 0 || !strings.HasPrefix(strings.TrimSpace(banner[len(banner)-1]), want) {
			t.Errorf("-device %q: banner %q, want its last line to start with %q", tc.sel, banner, want)
		}
	}
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestIntegrationServedNodeFilter traces one served node by its path:
// a program on it has its openat (whose path is far longer than a
// prefix), its ioctls and its close traced, and a program on the other
// served device, run before it, has nothing traced.
func TestIntegrationServedNodeFilter(t *testing.T) {
	requireRoot(t)
	s := hlsimtest.Serve(t, "gaudi2:2")
	dir := t.TempDir()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to build examples/dma: %v", err)
	}
	// One program under two names (comm), one per device.
	on0, on1 := filepath.Join(dir, "hlt-served0"), filepath.Join(dir, "hlt-served1")
	if out, err := exec.Command(gocmd, "build", "-o", on0, "github.com/gaudi-go/gaudi/examples/dma").CombinedOutput(); err != nil {
		t.Fatalf("go build examples/dma: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(on0); err != nil || os.WriteFile(on1, b, 0o755) != nil {
		t.Fatal("copy the example", err)
	}

	tr := startTracer(t, "-device", s.Node(1, false))
	for _, run := range []struct {
		prog, device string
	}{{on0, "0"}, {on1, "1"}} {
		cmd := exec.Command(run.prog, "-size", "65536")
		cmd.Env = append(s.Env(), "GAUDI_DEVICE="+run.device)
		if b, err := cmd.CombinedOutput(); err != nil || !bytes.Contains(b, []byte("verified")) {
			t.Fatalf("examples/dma on served device %s: %v\n%s", run.device, err, b)
		}
	}
	got := tr.interrupt(t)
	t.Logf("hltrace:\n%s", got)
	for _, c := range []struct{ what, re string }{
		{"the openat of the served node", `hlt-served1\s+openat\s.*` + regexp.QuoteMeta(s.Node(1, false)) + `.*= \d+`},
		{"a CS on it", `hlt-served1\s+CS\s+fd=\d+`},
		{"its close", `hlt-served1\s+close\s+fd=\d+`},
	} {
		if !regexp.MustCompile(c.re).MatchString(got) {
			t.Errorf("no %s (%s)", c.what, c.re)
		}
	}
	// The program on device 0 ran first, so its events, had any been
	// sent, were read before device 1's, which are there.
	if strings.Contains(got, "hlt-served0") {
		t.Error("a call of the program on the other served device was traced")
	}
}
