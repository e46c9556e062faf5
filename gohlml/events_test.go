package gohlml_test

import (
	"errors"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/gaudi-go/gaudi/gohlml"
	"github.com/gaudi-go/gaudi/internal/hlsimtest"
	"golang.org/x/sys/unix"
)

// serve serves spec's devices, initializes the library on them
// (GAUDI_ROOT) and returns the server and the devices' serials by index.
func serve(t *testing.T, spec string) (*hlsimtest.Server, []string) {
	t.Helper()
	srv := hlsimtest.Serve(t, spec)
	t.Setenv("GAUDI_ROOT", srv.Dir)
	if err := gohlml.Initialize(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := gohlml.Shutdown(); err != nil && !errors.Is(err, gohlml.ErrNotIntialized) {
			t.Errorf("Shutdown: %v", err)
		}
	})
	n, err := gohlml.DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	var serials []string
	for i := range n {
		d, err := gohlml.DeviceHandleByIndex(i)
		if err != nil {
			t.Fatal(err)
		}
		s, err := d.SerialNumber()
		if err != nil {
			t.Fatal(err)
		}
		serials = append(serials, s)
	}
	return srv, serials
}

// watchAll returns an event set with the critical events of the devices
// of serials, deleted at the end of the test.
func watchAll(t *testing.T, serials []string) gohlml.EventSet {
	t.Helper()
	es := gohlml.NewEventSet()
	t.Cleanup(func() { gohlml.DeleteEventSet(es) })
	for _, s := range serials {
		if err := gohlml.RegisterEventForDevice(es, gohlml.HlmlCriticalError, s); err != nil {
			t.Fatal(err)
		}
	}
	return es
}

// ctl runs "hlsim ctl" on srv.
func ctl(t *testing.T, srv *hlsimtest.Server, args ...string) {
	t.Helper()
	out, err := exec.Command(hlsimtest.Binary(t), append([]string{"ctl", "-dir", srv.Dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("hlsim ctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// waitEvent waits for the next critical event, through at most 60
// timeouts of 1 s.
func waitEvent(t *testing.T, es gohlml.EventSet) gohlml.Event {
	t.Helper()
	for range 60 {
		e, err := gohlml.WaitForEvent(es, 1000)
		if err != nil {
			t.Fatalf("WaitForEvent: %v", err)
		}
		if e.Etype == gohlml.HlmlCriticalError {
			return e
		}
		if e.Etype != 0 || e.Serial != "" {
			t.Fatalf("WaitForEvent: %+v, want a critical event or a timeout", e)
		}
	}
	t.Fatal("no critical event within 60 waits of 1 s")
	return gohlml.Event{}
}

// quiet checks that no event is pending: a short wait times out.
func quiet(t *testing.T, es gohlml.EventSet) {
	t.Helper()
	if e, err := gohlml.WaitForEvent(es, 0); err != nil || e != (gohlml.Event{}) {
		t.Fatalf("WaitForEvent(0) with nothing new = %+v, %v; want a timeout", e, err)
	}
}

// TestCriticalEvents provokes each critical event through "hlsim ctl" on
// device 1 of two and checks that it, and only it, is reported once.
func TestCriticalEvents(t *testing.T) {
	hlsimtest.Skip(t)
	for _, tc := range []struct {
		name   string
		inject []string
	}{
		{"reset", []string{"reset", "1"}},
		{"disabled", []string{"state", "1", "disabled"}},
		{"needs-reset", []string{"state", "1", "needs-reset"}},
		{"razwi", []string{"razwi", "1", "0x1000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, serials := serve(t, "gaudi2:2")
			es := watchAll(t, serials)
			quiet(t, es)
			ctl(t, srv, tc.inject...)
			if e := waitEvent(t, es); e.Serial != serials[1] {
				t.Fatalf("event %+v, want device 1 (%s)", e, serials[1])
			}
			quiet(t, es)
		})
	}
}

// TestDeviceLostEvent stops the server: the devices stop answering, and
// each is reported once.
func TestDeviceLostEvent(t *testing.T) {
	hlsimtest.Skip(t)
	srv, serials := serve(t, "gaudi2:1")
	es := gohlml.NewEventSet()
	defer gohlml.DeleteEventSet(es)
	if err := gohlml.RegisterEventForDevice(es, gohlml.HlmlCriticalError, serials[0]); err != nil {
		t.Fatal(err)
	}
	quiet(t, es)
	srv.Kill()
	if e := waitEvent(t, es); e.Serial != serials[0] {
		t.Fatalf("event %+v, want %s", e, serials[0])
	}
	quiet(t, es)
	// Closing a node whose server is gone reports it (FUSE: ENOTCONN).
	if err := gohlml.Shutdown(); err != nil && !errors.Is(err, unix.ENOTCONN) {
		t.Fatalf("Shutdown after the server died: %v", err)
	}
}

func TestRegisterErrors(t *testing.T) {
	hlsimtest.Skip(t)
	_, serials := serve(t, "gaudi2:1")
	es := gohlml.NewEventSet()
	if err := gohlml.RegisterEventForDevice(es, gohlml.HlmlCriticalError, "no such serial"); !errors.Is(err, gohlml.ErrNotFound) {
		t.Errorf("unknown serial: %v, want ErrNotFound", err)
	}
	if err := gohlml.RegisterEventForDevice(es, 1<<0, serials[0]); err != gohlml.ErrNotSupported {
		t.Errorf("ECC event: %v, want ErrNotSupported", err)
	}
	gohlml.DeleteEventSet(es)
	gohlml.DeleteEventSet(es)
	if _, err := gohlml.WaitForEvent(es, 10); err != gohlml.ErrInvalidArgument {
		t.Errorf("wait on a deleted set: %v, want ErrInvalidArgument", err)
	}
	if err := gohlml.RegisterEventForDevice(es, gohlml.HlmlCriticalError, serials[0]); err != gohlml.ErrInvalidArgument {
		t.Errorf("register on a deleted set: %v, want ErrInvalidArgument", err)
	}
	if _, err := gohlml.WaitForEvent(gohlml.EventSet{}, 10); err != gohlml.ErrInvalidArgument {
		t.Errorf("wait on the zero set: %v, want ErrInvalidArgument", err)
	}
	live := watchAll(t, serials)
	if err := gohlml.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if _, err := gohlml.WaitForEvent(live, 10); err != gohlml.ErrNotIntialized {
		t.Errorf("wait after Shutdown: %v, want ErrNotIntialized", err)
	}
}

// TestConcurrentWaiters has many goroutines wait on one set, and others
// read values, while device 0 is reset once: the event is delivered
// exactly once in all.
func TestConcurrentWaiters(t *testing.T) {
	hlsimtest.Skip(t)
	srv, serials := serve(t, "gaudi2:2")
	es := watchAll(t, serials)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		events []gohlml.Event
	)
	for g := range 16 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			e, err := gohlml.WaitForEvent(es, 200)
			if err != nil {
				t.Error(err)
			}
			if e.Etype != 0 {
				mu.Lock()
				events = append(events, e)
				mu.Unlock()
			}
		}()
		go func() {
			defer wg.Done()
			d, err := gohlml.DeviceHandleBySerial(serials[g%2])
			if err != nil {
				t.Error(err)
				return
			}
			if _, _, _, err := d.MemoryInfo(); err != nil && !errors.Is(err, gohlml.ErrAipIsLost) {
				t.Error(err)
			}
		}()
	}
	ctl(t, srv, "reset", "0")
	wg.Wait()
	if len(events) == 0 {
		// Every waiter timed out before a look saw the reset.
		events = append(events, waitEvent(t, es))
	}
	if len(events) != 1 || events[0].Serial != serials[0] {
		t.Fatalf("events %+v, want one of %s", events, serials[0])
	}
	quiet(t, es)
}
