package sim

import (
	"sync"
	"testing"

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
