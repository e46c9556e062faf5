package sim

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// packPage returns the DRAM offset of the first page of allocation h.
func packPage(t *testing.T, d *Device, h uint64) uint64 {
	t.Helper()
	d.vm.mu.Lock()
	defer d.vm.mu.Unlock()
	pk := d.vm.packs[uint32(h)]
	if pk == nil {
		t.Fatalf("no allocation %d", h)
	}
	return pk.pages[0] - d.prof.dramBase
}

// TestFreedMemoryScrubbed: a secret client A wrote into its allocation is
// not handed to client B, whose fresh allocation gets the same pages,
// whether A freed it or its context ended; and the pages go back to the
// machine (the DRAM memfd's resident size drops).
func TestFreedMemoryScrubbed(t *testing.T) {
	secret := bytes.Repeat([]byte("SECRET!!"), 2<<20/8)
	for _, how := range []string{"free", "exit"} {
		t.Run(how, func(t *testing.T) {
			_, d, a := openCompute(t, Gaudi2)
			h, err := memAllocFlags(a, 2<<20, 0)
			if err != nil {
				t.Fatal(err)
			}
			off := packPage(t, d, h)
			if err := d.dram.WriteAt(secret, off); err != nil {
				t.Fatal(err)
			}
			written := d.ResidentDRAM()
			if written < uint64(len(secret)) {
				t.Fatalf("resident %d after writing %d bytes", written, len(secret))
			}
			if how == "free" {
				if err := memFree(a, h); err != nil {
					t.Fatal(err)
				}
			}
			a.Close()
			if r := d.ResidentDRAM(); r >= written {
				t.Errorf("resident device memory %d after A's memory was freed (%s), %d before: the pages stay with the server", r, how, written)
			}
			b, err := d.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			h2, err := memAllocFlags(b, 2<<20, 0)
			if err != nil {
				t.Fatal(err)
			}
			if off2 := packPage(t, d, h2); off2 != off {
				t.Fatalf("B's allocation is at %#x, A's was at %#x: the test needs the same pages", off2, off)
			}
			got := make([]byte, len(secret))
			if err := d.dram.ReadAt(got, off); err != nil {
				t.Fatal(err)
			}
			if i := bytes.IndexFunc(got, func(r rune) bool { return r != 0 }); i >= 0 {
				t.Fatalf("B's fresh allocation reads %q at byte %d: A's secret after A's memory was freed (%s)", got[i:i+8], i, how)
			}
		})
	}
}

// TestServedMemoryLimit: a file opened for another process (a client of
// tools/hlsim) holds at most Config.ServedMemoryLimit of device memory;
// beyond, ALLOC answers ENOMEM; freeing gives room back.
func TestServedMemoryLimit(t *testing.T) {
	cfg := Default(Gaudi2, 1)
	cfg.ServedMemoryLimit = 2 * g2Page
	s := newTestSystem(t, cfg)
	defer s.Close()
	d := s.Device(0)
	f, err := d.OpenFor(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := memAllocFlags(f, g2Page, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := memAllocFlags(f, g2Page, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := memAllocFlags(f, g2Page, 0); !errors.Is(err, unix.ENOMEM) {
		t.Fatalf("allocation beyond ServedMemoryLimit: %v, want ENOMEM", err)
	}
	if _, err := memAllocFlags(f, 1<<62, 0); !errors.Is(err, unix.ENOMEM) {
		t.Fatalf("huge allocation: %v, want ENOMEM", err)
	}
	if err := memFree(f, h); err != nil {
		t.Fatal(err)
	}
	if _, err := memAllocFlags(f, g2Page, 0); err != nil {
		t.Fatalf("allocation after a free: %v", err)
	}
}

// TestScrubBeforeReuse: freed pages return to the allocator only after
// their scrub. Before, FREE and the end of a context gave the pages back
// first, so an allocation made by another goroutine in between had its
// fresh bytes zeroed by the scrub (stream's TestSignalWaitParallel read
// back zeros on Gaudi2 about once in 15 runs).
func TestScrubBeforeReuse(t *testing.T) {
	for _, how := range []string{"free", "exit"} {
		t.Run(how, func(t *testing.T) {
			_, d, a := openCompute(t, Gaudi2)
			h, err := memAllocFlags(a, 2<<20, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.dram.WriteAt([]byte("old bytes"), packPage(t, d, h)); err != nil {
				t.Fatal(err)
			}
			d.vm.mu.Lock()
			pages := append([]uint64(nil), d.vm.packs[uint32(h)].allocated()...)
			d.vm.mu.Unlock()
			scrubs := 0
			d.dram.scrubbing = func(runs []dramRun) {
				if len(runs) == 0 {
					return // the end of a context that had nothing left
				}
				scrubs++
				d.vm.mu.Lock()
				defer d.vm.mu.Unlock()
				for _, pa := range pages {
					if d.vm.free[(pa-d.vm.base)/d.vm.pageSize] {
						t.Errorf("page %#x is free for a new allocation before its scrub (%s)", pa, how)
					}
				}
			}
			if how == "free" {
				if err := memFree(a, h); err != nil {
					t.Fatal(err)
				}
			}
			a.Close()
			if scrubs == 0 {
				t.Fatalf("no scrub after %s", how)
			}
			d.vm.mu.Lock()
			defer d.vm.mu.Unlock()
			for _, pa := range pages {
				if !d.vm.free[(pa-d.vm.base)/d.vm.pageSize] {
					t.Errorf("page %#x not free after %s", pa, how)
				}
			}
		})
	}
}
