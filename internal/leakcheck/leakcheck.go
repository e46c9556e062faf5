// Package leakcheck fails a package's tests when they leave kernel objects
// or goroutines behind. A test package that opens devices, maps memory or
// starts goroutines uses it as its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(leakcheck.Run(m)) }
//
// Run takes a snapshot before the tests and one after them, and reports
// what the second has that the first did not:
//
//   - file descriptors, from /proc/self/fd, named by their link (memfd:,
//     anon_inode:[eventfd], /dmabuf:, socket:[...], /dev/...);
//   - memory mappings of files, from /proc/self/maps (memfds of the
//     simulator, dma-bufs, device nodes), compared by address range,
//     offset, inode and path;
//   - memory mappings the library made that are still mapped, from the
//     record of package internal/leak: mmaps of a device file (command
//     buffers, timestamp stores, hardware blocks) and anonymous host
//     memory (memory.AllocHost). Anonymous mappings cannot be told from
//     the Go runtime's own in /proc/self/maps, so the library's are
//     counted where they are made, and the runtime's growth is never
//     reported;
//   - goroutines, from a dump of every stack, by goroutine id, less those
//     of the runtime and of os/signal;
//   - objects of the module (device.Device, memory.Manager,
//     memory.Buffer, memory.HostBuffer, memory.DMABuf) that the garbage
//     collector found unclosed, from their safety nets (internal/leak).
//     A test that leaks one on purpose installs its own reporter with
//     device.SetLeakReporter, and the check does not see it.
//
// Before it compares, Run collects garbage (so that the cleanups of
// os.File and the module's safety nets run) and gives goroutines and
// descriptors a few seconds to go away, retrying with growing pauses, so a
// clean run is not slowed and a slow exit is not a leak.
//
// The check is skipped while fuzzing, when only listing tests, and when
// the environment sets GAUDI_LEAKCHECK=off.
package leakcheck

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/internal/leak"
)

// Option adjusts Run.
type Option func(*config)

type config struct {
	after  []func()
	settle time.Duration
	out    io.Writer
}

// AfterRun adds f to what runs after the tests and before the check: it
// releases what the tests share on purpose for the whole process, such as
// the simulated server of package simdevice.
func AfterRun(f func()) Option { return func(c *config) { c.after = append(c.after, f) } }

// Settle sets how long Run waits for goroutines and descriptors to go
// away before it reports them; the default is 5 seconds.
func Settle(d time.Duration) Option { return func(c *config) { c.settle = d } }

// Run runs m's tests and benchmarks and then checks that they left nothing
// behind. It returns the code for os.Exit: m.Run's when the tests failed,
// else 1 when something leaked (described on stderr) and 0 when nothing
// did.
func Run(m *testing.M, opts ...Option) int {
	c := config{settle: 5 * time.Second, out: os.Stderr}
	for _, o := range opts {
		o(&c)
	}
	if os.Getenv("GAUDI_LEAKCHECK") == "off" {
		return m.Run()
	}
	leak.Enable()
	var (
		mu      sync.Mutex
		objects []leak.Info
	)
	remove := leak.SetObserver(func(i leak.Info) {
		mu.Lock()
		objects = append(objects, i)
		mu.Unlock()
	})
	defer remove()
	warmUp()
	before, err := take()
	if err != nil {
		fmt.Fprintf(c.out, "leakcheck: %v\n", err)
		return 2
	}
	code := m.Run()
	for _, f := range c.after {
		f()
	}
	if skip() {
		return code
	}
	r, err := settle(before, c.settle, func() []leak.Info {
		mu.Lock()
		defer mu.Unlock()
		return append([]leak.Info(nil), objects...)
	})
	if err != nil {
		fmt.Fprintf(c.out, "leakcheck: %v\n", err)
		return max(code, 2)
	}
	if r.empty() {
		return code
	}
	fmt.Fprint(c.out, r.String())
	if code == 0 {
		code = 1
	}
	return code
}

// skip reports whether the run was one whose leaks are not checked: a
// fuzzing coordinator or worker, or a listing of tests.
func skip() bool {
	for _, name := range []string{"test.fuzz", "test.list"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return true
		}
	}
	f := flag.Lookup("test.fuzzworker")
	return f != nil && f.Value.String() == "true"
}

// warmUp makes the runtime open what it opens lazily and keeps for the
// life of the process, so that the first snapshot already has it: the
// network poller's epoll and eventfd descriptors, which the first
// pollable os.File creates.
func warmUp() {
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	runtime.GC()
}

// settle compares snapshots with before until nothing is left over, or
// until wait has passed, collecting garbage and running cleanups before
// each, and returns the last comparison.
func settle(before *snapshot, wait time.Duration, objects func() []leak.Info) (*report, error) {
	deadline := time.Now().Add(wait)
	pause := 5 * time.Millisecond
	for {
		flushCleanups()
		after, err := take()
		if err != nil {
			return nil, err
		}
		r := diff(before, after)
		r.objects = objects()
		if r.transientEmpty() || time.Now().After(deadline) {
			return r, nil
		}
		time.Sleep(pause)
		pause = min(2*pause, 250*time.Millisecond)
	}
}

// flushCleanups collects garbage and waits, for at most a second, until
// the cleanups it queued ran: a cleanup of its own, queued by the same
// collection, marks that point. It does so twice, for objects that only
// the first round's cleanups made unreachable.
func flushCleanups() {
	for range 2 {
		done := make(chan struct{})
		s := new([64]byte) // not tiny: it gets a block of its own
		runtime.AddCleanup(s, func(c chan struct{}) { close(c) }, done)
		s = nil
		runtime.GC()
		select {
		case <-done:
		case <-time.After(time.Second):
		}
		runtime.KeepAlive(s)
	}
}

// report is what an after-snapshot has that the before-snapshot lacked.
type report struct {
	fds        []fdEntry
	fileMaps   []mapEntry
	libMaps    []libMapping
	goroutines []goroutine
	objects    []leak.Info
}

// libMapping is a mapping of the library's record with the line of
// /proc/self/maps that covers its start, if any.
type libMapping struct {
	leak.Mapping
	line string
}

// transientEmpty reports whether nothing is left that waiting could still
// make go away.
func (r *report) transientEmpty() bool {
	return len(r.fds) == 0 && len(r.fileMaps) == 0 && len(r.libMaps) == 0 && len(r.goroutines) == 0
}

func (r *report) empty() bool { return r.transientEmpty() && len(r.objects) == 0 }

// String describes the leaks for people.
func (r *report) String() string {
	var b strings.Builder
	b.WriteString("leakcheck: the tests left these behind:\n")
	if len(r.fds) > 0 {
		fmt.Fprintf(&b, "  file descriptors (%d):\n", len(r.fds))
		for _, f := range r.fds {
			fmt.Fprintf(&b, "    fd %d -> %s\n", f.fd, f.target)
		}
	}
	if len(r.fileMaps) > 0 {
		fmt.Fprintf(&b, "  mappings of files (%d):\n", len(r.fileMaps))
		for _, m := range r.fileMaps {
			fmt.Fprintf(&b, "    %s\n", m.line)
		}
	}
	if len(r.libMaps) > 0 {
		fmt.Fprintf(&b, "  mappings the library made and never unmapped (%d):\n", len(r.libMaps))
		for _, m := range r.libMaps {
			fmt.Fprintf(&b, "    %#x-%#x (%d bytes): %s\n", m.Start, m.End, m.End-m.Start, m.What)
			if m.line != "" {
				fmt.Fprintf(&b, "      %s\n", m.line)
			}
		}
	}
	if len(r.goroutines) > 0 {
		fmt.Fprintf(&b, "  goroutines (%d):\n", len(r.goroutines))
		for _, g := range r.goroutines {
			for _, l := range strings.Split(strings.TrimRight(g.stack, "\n"), "\n") {
				fmt.Fprintf(&b, "    %s\n", l)
			}
			b.WriteString("\n")
		}
	}
	if len(r.objects) > 0 {
		fmt.Fprintf(&b, "  objects garbage-collected without Close (%d):\n", len(r.objects))
		for _, o := range r.objects {
			for _, l := range strings.Split(o.String(), "\n") {
				fmt.Fprintf(&b, "    %s\n", l)
			}
		}
	}
	return b.String()
}

// diff returns what after has that before lacked.
func diff(before, after *snapshot) *report {
	r := &report{}
	for fd, target := range after.fds {
		if t, ok := before.fds[fd]; !ok || t != target {
			r.fds = append(r.fds, fdEntry{fd, target})
		}
	}
	sort.Slice(r.fds, func(i, j int) bool { return r.fds[i].fd < r.fds[j].fd })
	old := map[mapKey]bool{}
	for _, m := range before.maps {
		old[m.key] = true
	}
	for _, m := range after.maps {
		if m.fileBacked() && !old[m.key] {
			r.fileMaps = append(r.fileMaps, m)
		}
	}
	live := map[leak.Mapping]bool{}
	for _, m := range before.lib {
		live[m] = true
	}
	for _, m := range after.lib {
		if live[m] {
			continue
		}
		l := libMapping{Mapping: m}
		for _, e := range after.maps {
			if e.key.start <= m.Start && m.Start < e.key.end {
				l.line = e.line
				break
			}
		}
		r.libMaps = append(r.libMaps, l)
	}
	sort.Slice(r.libMaps, func(i, j int) bool { return r.libMaps[i].Start < r.libMaps[j].Start })
	for id, g := range after.goroutines {
		if _, ok := before.goroutines[id]; !ok && !longLived(g.stack) {
			r.goroutines = append(r.goroutines, g)
		}
	}
	sort.Slice(r.goroutines, func(i, j int) bool { return r.goroutines[i].id < r.goroutines[j].id })
	return r
}

// longLived lists goroutines that are started once for the life of the
// process, not by a test: the signal loop (os/signal.Notify) and the
// background goroutine of package unique.
var longLivedFuncs = []string{
	"os/signal.loop",
	"os/signal.signal_recv",
	"runtime.ensureSigM",
	"unique.registerCleanup",
}

// longLived reports whether a goroutine's stack is the runtime's own
// (shown only with GOTRACEBACK=system) or one of longLivedFuncs.
func longLived(stack string) bool {
	for _, f := range longLivedFuncs {
		if strings.Contains(stack, f) {
			return true
		}
	}
	return strings.Contains(stack, "\ncreated by runtime.") || !strings.Contains(stack, "\ncreated by ")
}
