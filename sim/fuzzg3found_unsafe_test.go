package sim

import (
	"sync"
	"testing"
	"time"

	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"golang.org/x/sys/unix"
)

// Regressions for what FuzzProgramGaudi3 found or what its programs
// exercise. Each input is also kept as a seed in testdata/fuzz.

// TestPQMResetBesideBlockMmap: a hard reset clears every channel's
// registers and the state its goroutine keeps (MSQ_CI, the last MSQ_PI
// read, the halt). An mmap of a channel block beside the reset may start
// the channel's goroutine between the end of the reset's halt and that
// clearing, which then wrote the goroutine's state under it (a data race
// under go test -race) and zeroed the registers of a channel the user had
// just set up.
func TestPQMResetBesideBlockMmap(t *testing.T) {
	_, d, f := openSim(t, Gaudi3)
	h, size, err := mapBlock(f, g3.PDMAChannelBlock(4))
	if err != nil {
		t.Fatal(err)
	}
	for range 200 {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.Reset()
		}()
		win, err := f.Mmap(int64(h), int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if err := f.Munmap(win); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPQMResetBesideRelease: the release of a file that runs PDMA channels
// stops them (stopFile). It used to stop them with the queues' halt flag,
// which belongs to device resets, and to clear that flag when done; beside
// a reset halting the engines, a channel block mapped by the next file
// then started a goroutine that never saw the halt, and the reset waited
// for it forever. Found by FuzzProgramGaudi3 (a reopen and a channel set
// up beside an async reset); seed d5c34da5de387031.
func TestPQMResetBesideRelease(t *testing.T) {
	s := newTestSystem(t, Default(Gaudi3, 1))
	t.Cleanup(func() { s.Close() })
	d := s.Device(0)
	for range 100 {
		f, err := d.Open()
		if err != nil {
			t.Fatal(err)
		}
		h, size, err := mapBlock(f, g3.PDMAChannelBlock(2))
		if err != nil {
			t.Fatal(err)
		}
		win, err := f.Mmap(int64(h), int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			d.Reset()
		}()
		f.Munmap(win)
		f.Close()
		start := time.Now()
		f2, err := d.Open()
		for err != nil && time.Since(start) < time.Second { // the release may not have ended
			f2, err = d.Open()
		}
		if err != nil {
			t.Fatal(err)
		}
		var win2 []byte
		if h, size, err = mapBlock(f2, g3.PDMAChannelBlock(2)); err == nil {
			win2, _ = f2.Mmap(int64(h), int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("a reset beside a release and a new mapping has not returned after 5 s\n%s", allStacks())
		}
		if win2 != nil {
			f2.Munmap(win2) // a mapping holds the file: unmapped before the next open
		}
		f2.Close()
	}
}
