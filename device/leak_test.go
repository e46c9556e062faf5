package device_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/sim"
)

// catchLeaks installs a leak reporter for the test, restores the default
// at its end, and returns the channel it reports on.
func catchLeaks(t *testing.T) <-chan device.Leak {
	t.Helper()
	c := make(chan device.Leak, 16)
	device.SetLeakReporter(func(l device.Leak) { c <- l })
	t.Cleanup(func() { device.SetLeakReporter(nil) })
	return c
}

// collect runs the garbage collector until a report arrives, for at most
// five seconds.
func collect(t *testing.T, c <-chan device.Leak) (device.Leak, bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		runtime.GC()
		select {
		case l := <-c:
			return l, true
		case <-time.After(10 * time.Millisecond):
		}
	}
	return device.Leak{}, false
}

func leakSystem(t *testing.T) *sim.System {
	t.Helper()
	s, err := sim.New(sim.Config{Devices: sim.Default(sim.Gaudi2, 2).Devices, LockDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openUnclosed opens a Device over f that nothing keeps: the caller's
// reference ends when it returns.
func openUnclosed(t *testing.T, f *sim.File, path string) {
	t.Helper()
	if _, err := device.FromFile(f, device.FileOptions{Path: path}); err != nil {
		t.Fatal(err)
	}
}

// TestLeakReported drops a Device without Close and expects one report
// naming it and where it was opened; the file stays open, since the safety
// net only reports.
func TestLeakReported(t *testing.T) {
	c := catchLeaks(t)
	sd := leakSystem(t).Device(0)
	f, err := sd.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	openUnclosed(t, f, "sim:leaked")
	l, ok := collect(t, c)
	if !ok {
		t.Fatal("a Device dropped without Close was not reported")
	}
	if l.Type != "*device.Device" || l.Device != "sim:leaked" || l.VA != 0 || l.Size != 0 || l.FD != -1 {
		t.Errorf("report %+v", l)
	}
	var funcs []string
	for frames := l.Frames(); ; {
		f, more := frames.Next()
		funcs = append(funcs, f.Function)
		if !more {
			break
		}
	}
	if len(funcs) < 2 || funcs[0] != "github.com/gaudi-go/gaudi/device.FromFile" || !strings.HasSuffix(funcs[1], "device_test.openUnclosed") {
		t.Errorf("created at %q, want FromFile called by openUnclosed", funcs)
	}
	s := l.String()
	if !strings.HasPrefix(s, "gaudi: *device.Device garbage-collected without Close: device sim:leaked; created at:\n") || !strings.Contains(s, "device_test.openUnclosed") {
		t.Errorf("String() = %q", s)
	}
	// Nothing was released: the compute context is still this file's.
	if _, err := sd.Open(); err == nil {
		t.Error("the device could be opened again: the collection closed the leaked Device's file")
	}
}

// TestClosedNotReported: a Device closed before it is dropped is not
// reported.
func TestClosedNotReported(t *testing.T) {
	c := catchLeaks(t)
	sd := leakSystem(t).Device(0)
	func() {
		f, err := sd.Open()
		if err != nil {
			t.Fatal(err)
		}
		d, err := device.FromFile(f, device.FileOptions{Path: "sim:closed"})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	// A leaked Device of the other simulated device marks the point by
	// which the collector has run the cleanups.
	f, err := leakSystem(t).Device(1).Open()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	openUnclosed(t, f, "sim:marker")
	for {
		l, ok := collect(t, c)
		if !ok {
			t.Fatal("no report of the marker")
		}
		if l.Device == "sim:marker" {
			break
		}
		t.Errorf("report of a closed Device: %+v", l)
	}
	// Cleanups of one collection may run in any order: give the others a
	// moment.
	runtime.GC()
	select {
	case l := <-c:
		t.Errorf("report of a closed Device: %+v", l)
	case <-time.After(50 * time.Millisecond):
	}
}
