// Package examples_test runs every example program on the simulator, so
// that none of them rots: in the example's process, and served as device
// nodes by tools/hlsim (when the test runs as root with /dev/fuse).
package examples_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/internal/hlsimtest"
)

// wants lists, per example, lines its output must contain. An example not
// listed must still build, exit 0 and print something.
var wants = map[string][]string{
	"dma":    {"verified: 67108864 bytes identical after host -> device -> device -> host"},
	"alloc":  {"after Close:"},
	"export": {"export closed, buffer freed"},
	"signal": {"verified: 16777216 bytes ordered across two queues by one signal/wait pair"},
	"ipc": {
		"importer: all 4194304 bytes match the pattern",
		"exporter: closed the dma-buf, which revoked the export (0 exports left)",
		"importer: told that buffer",
		"importer: a new import is refused as revoked",
		"exporter: freed the device buffer; done",
	},
}

func TestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs every example (-short)")
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(e.Name(), "main.go")); e.IsDir() && err == nil {
			names = append(names, e.Name())
		}
	}
	for name := range wants {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+name+" ") {
			t.Errorf("example %s is listed here but has no directory", name)
		}
	}
	bin := t.TempDir()
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to build the examples: %v", err)
	}
	build := exec.Command(gocmd, "build", "-o", bin+string(filepath.Separator), "./...")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/...: %v\n%s", err, out)
	}
	// One suite, two backends: the simulator inside each example's
	// process, and the same simulator served by tools/hlsim as device
	// nodes the examples open through the kernel (the library's real
	// file-descriptor path).
	t.Run("in-process", func(t *testing.T) {
		for _, name := range names {
			t.Run(name, func(t *testing.T) {
				runExample(t, bin, name, append(os.Environ(), "GAUDI_DEVICE=sim", "GAUDI_SIM_LOCKDIR="+t.TempDir()))
			})
		}
	})
	t.Run("served", func(t *testing.T) {
		s := hlsimtest.Serve(t, "gaudi2:2")
		for _, name := range names {
			t.Run(name, func(t *testing.T) {
				out := runExample(t, bin, name, s.Env())
				if !strings.Contains(out, s.Dir+"/dev/accel/accel") {
					t.Errorf("%s did not use a served node:\n%s", name, out)
				}
			})
		}
		if t.Failed() {
			t.Logf("hlsim:\n%s", s.Log())
		}
	})
}

// runExample runs example name with env and checks its output; it returns
// the output.
func runExample(t *testing.T, bin, name string, env []string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(bin, name))
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", name, err, stdout.String(), stderr.String())
	}
	t.Logf("%s ran in %v", name, time.Since(start).Round(time.Millisecond))
	if stdout.Len() == 0 {
		t.Errorf("%s printed nothing", name)
	}
	for _, w := range wants[name] {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("%s output lacks %q:\n%s", name, w, stdout.String())
		}
	}
	return stdout.String() + stderr.String()
}
