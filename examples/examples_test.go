// Package examples_test runs every example program on the simulator, so
// that none of them rots.
package examples_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(filepath.Join(bin, name))
			cmd.Env = append(os.Environ(), "GAUDI_DEVICE=sim", "GAUDI_SIM_LOCKDIR="+t.TempDir())
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
			// The safety nets print this when a collection finds an object
			// the program did not close (device.SetLeakReporter).
			if strings.Contains(stderr.String(), "garbage-collected without Close") {
				t.Errorf("%s dropped an object without Close:\n%s", name, stderr.String())
			}
		})
	}
}
