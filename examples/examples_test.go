// Package examples_test runs every example program on the simulator, so
// that none of them rots, in the example's process and served as device
// nodes by tools/hlsim (when the test runs as root with /dev/fuse), and
// checks the command line they share with the tools (package
// internal/cli): -h, -version, -device and sizes.
package examples_test

import (
	"bytes"
	"errors"
	"github.com/gaudi-go/gaudi/internal/leakcheck"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/hlsimtest"
)

// wants lists, per example, lines its output must contain. An example not
// listed must still build, exit 0 and print something.
var wants = map[string][]string{
	"dma": {
		"verified: 67108864 bytes identical after host -> device -> device -> host",
		"first copy: includes the first touch of the destination; simulated HBM is host memory in ",
		"warm: the same copy again",
	},
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

// args are the command lines the examples run with: the ones their doc
// comments show.
var args = map[string][]string{
	"dma":    {"-size", "64M"},
	"signal": {"-size", "16M"},
}

var (
	buildOnce  sync.Once
	binDir     string
	buildErr   error
	exampleSet []string
)

// build builds every example once into a temporary directory and lists
// them.
func build(t *testing.T) (string, []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds every example (-short)")
	}
	buildOnce.Do(func() {
		entries, err := os.ReadDir(".")
		if err != nil {
			buildErr = err
			return
		}
		for _, e := range entries {
			if _, err := os.Stat(filepath.Join(e.Name(), "main.go")); e.IsDir() && err == nil {
				exampleSet = append(exampleSet, e.Name())
			}
		}
		binDir, buildErr = os.MkdirTemp("", "examples-bin-")
		if buildErr != nil {
			return
		}
		gocmd, err := exec.LookPath("go")
		if err != nil {
			buildErr = err
			return
		}
		out, err := exec.Command(gocmd, "build", "-o", binDir+string(filepath.Separator), "./...").CombinedOutput()
		if err != nil {
			buildErr = errors.New("go build ./examples/...: " + err.Error() + "\n" + string(out))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir, exampleSet
}

// TestMain removes the built examples and fails the run when the tests
// leave descriptors, mappings, goroutines or unclosed objects behind (see
// internal/leakcheck).
func TestMain(m *testing.M) {
	os.Exit(leakcheck.Run(m, leakcheck.AfterRun(func() {
		if binDir != "" {
			os.RemoveAll(binDir)
		}
	})))
}

// runExample runs an example binary with the simulator's lock files in a
// directory of the test's own.
func runExample(t *testing.T, bin string, env []string, arg ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, arg...)
	cmd.Env = append(append(os.Environ(), "GAUDI_SIM_LOCKDIR="+t.TempDir()), env...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

func TestExamples(t *testing.T) {
	bin, names := build(t)
	for name := range wants {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+name+" ") {
			t.Errorf("example %s is listed here but has no directory", name)
		}
	}
	// One suite, two backends: the simulator inside each example's
	// process, and the same simulator served by tools/hlsim as device
	// nodes the examples open through the kernel (the library's real
	// file-descriptor path).
	t.Run("in-process", func(t *testing.T) {
		runExamples(t, bin, names, []string{"GAUDI_DEVICE=sim"}, nil)
	})
	t.Run("served", func(t *testing.T) {
		s := hlsimtest.Serve(t, "gaudi2:2")
		runExamples(t, bin, names, s.Env(), func(t *testing.T, name, out string) {
			if !strings.Contains(out, s.Dir+"/dev/accel/accel") {
				t.Errorf("%s did not use a served node:\n%s", name, out)
			}
		})
		if t.Failed() {
			t.Logf("hlsim:\n%s", s.Log())
		}
	})
}

// runExamples runs every example with env added to the test's environment
// and checks its output; check, when not nil, looks at stdout and stderr
// too.
func runExamples(t *testing.T, bin string, names, env []string, check func(t *testing.T, name, out string)) {
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			code, stdout, stderr := runExample(t, filepath.Join(bin, name), env, args[name]...)
			if code != 0 {
				t.Fatalf("%s %q: exit %d\nstdout:\n%s\nstderr:\n%s", name, args[name], code, stdout, stderr)
			}
			t.Logf("%s ran in %v", name, time.Since(start).Round(time.Millisecond))
			if stdout == "" {
				t.Errorf("%s printed nothing", name)
			}
			for _, w := range wants[name] {
				if !strings.Contains(stdout, w) {
					t.Errorf("%s output lacks %q:\n%s", name, w, stdout)
				}
			}
			// The safety nets print this when a collection finds an object
			// the program did not close (device.SetLeakReporter).
			if strings.Contains(stderr, "garbage-collected without Close") {
				t.Errorf("%s dropped an object without Close:\n%s", name, stderr)
			}
			if check != nil {
				check(t, name, stdout+stderr)
			}
		})
	}
}

// TestSizes: examples take the sizes every tool takes (examples/dma
// -size 64M, as its doc comment shows, was refused).
func TestSizes(t *testing.T) {
	bin, _ := build(t)
	for _, tc := range []struct {
		example, size, want string
	}{
		{"dma", "1.5M", "verified: 1572864 bytes identical"},
		{"dma", "4KB", "verified: 4000 bytes identical"},
		{"dma", "4k", "verified: 4096 bytes identical"},
		{"signal", "64KiB", "verified: 65536 bytes ordered"},
	} {
		code, stdout, stderr := runExample(t, filepath.Join(bin, tc.example), []string{"GAUDI_DEVICE=sim"}, "-size", tc.size)
		if code != 0 || !strings.Contains(stdout, tc.want) {
			t.Errorf("%s -size %s: exit %d, want %q\nstdout:\n%s\nstderr:\n%s", tc.example, tc.size, code, tc.want, stdout, stderr)
		}
	}
	for _, size := range []string{"4KX", "-1", "0.1K", "1e6", ""} {
		code, _, stderr := runExample(t, filepath.Join(bin, "dma"), nil, "-size", size)
		if code != 2 || !strings.Contains(stderr, "bad size") || !strings.Contains(stderr, "run dma -h for usage") {
			t.Errorf("dma -size %s: exit %d, stderr %q", size, code, stderr)
		}
	}
}

// TestCommandLine checks what every example shares with the tools: -h
// with a synopsis and the environment, -version, usage errors with exit
// status 2, and the same device selection (a hardware selector on a
// machine without a Gaudi is one error everywhere, -device over
// GAUDI_DEVICE).
func TestCommandLine(t *testing.T) {
	bin, names := build(t)
	noGaudi := false
	if n, err := device.Nodes(); err == nil && len(n) == 0 {
		noGaudi = true
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(bin, name)
			code, stdout, stderr := runExample(t, path, nil, "-h")
			if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "Usage:\n  "+name+" [-device SEL]") {
				t.Errorf("-h: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
			}
			for _, want := range []string{"-device SEL", "-version", "Environment:", "GAUDI_DEVICE", "GAUDI_SIM"} {
				if !strings.Contains(stdout, want) {
					t.Errorf("-h lacks %q", want)
				}
			}
			if code, stdout, _ := runExample(t, path, nil, "-version"); code != 0 || !strings.HasPrefix(stdout, name+" ") {
				t.Errorf("-version: exit %d, %q", code, stdout)
			}
			if code, _, stderr := runExample(t, path, nil, "-nope"); code != 2 || !strings.Contains(stderr, "run "+name+" -h for usage") {
				t.Errorf("-nope: exit %d, stderr %q", code, stderr)
			}
			if code, _, stderr := runExample(t, path, nil, "-device", "sim:x"); code != 2 || !strings.Contains(stderr, `bad device selector "sim:x"`) {
				t.Errorf("-device sim:x: exit %d, stderr %q", code, stderr)
			}
			if !noGaudi {
				return
			}
			code, _, stderr = runExample(t, path, []string{"GAUDI_DEVICE=3"})
			if code == 0 || !strings.Contains(stderr, `GAUDI_DEVICE=3: no Gaudi on this machine to match "3" (the simulator's devices are sim and sim:N)`) {
				t.Errorf("GAUDI_DEVICE=3 without a Gaudi: exit %d, stderr %q", code, stderr)
			}
			code, _, stderr = runExample(t, path, []string{"GAUDI_DEVICE=sim"}, "-device", "7")
			if code == 0 || !strings.Contains(stderr, `-device 7: no Gaudi on this machine to match "7"`) {
				t.Errorf("-device 7 over GAUDI_DEVICE=sim: exit %d, stderr %q", code, stderr)
			}
		})
	}
}
