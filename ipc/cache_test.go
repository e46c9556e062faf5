package ipc

import (
	"context"
	"errors"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCache(t *testing.T) {
	base := countFDs(t)
	e, err := NewExporter("", ExporterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var hs []Handle
	for i := range 3 {
		fd, err := newMemfd()
		if err != nil {
			t.Fatal(err)
		}
		h, err := e.ExportFD(fd, testDev, uint64(0x1000*(i+1)), testSize, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	withExports := countFDs(t)
	ctx := context.Background()
	c := NewCache(2)

	// Concurrent Gets of one handle share one import.
	var wg sync.WaitGroup
	got := make([]*CachedImport, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ci, err := c.Get(ctx, e.Addr(), hs[0])
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = ci
		}()
	}
	wg.Wait()
	for _, ci := range got[1:] {
		if ci != nil && got[0] != nil && ci.File != got[0].File {
			t.Fatal("two imports of one handle")
		}
	}
	if err := checkPattern(got[0].Imported); err != nil {
		t.Fatal(err)
	}
	for _, ci := range got {
		ci.Release()
		ci.Release() // idempotent
	}
	// The exporter closes its side of each connection after replying, on
	// its own goroutine: wait for that rather than racing it.
	waitFDs(t, withExports+1)

	// The LRU keeps two idle imports.
	for _, h := range hs {
		ci, err := c.Get(ctx, e.Addr(), h)
		if err != nil {
			t.Fatal(err)
		}
		ci.Release()
	}
	if c.Len() != 2 {
		t.Errorf("cache holds %d, want 2", c.Len())
	}
	waitFDs(t, withExports+2)

	// Invalidation after a revoke: the next Get asks again and is refused.
	held, err := c.Get(ctx, e.Addr(), hs[2])
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Revoke(hs[2]); err != nil {
		t.Fatal(err)
	}
	c.Invalidate(hs[2])
	if _, err := c.Get(ctx, e.Addr(), hs[2]); !errors.Is(err, ErrRevoked) {
		t.Errorf("Get after revoke and Invalidate: %v", err)
	}
	if err := checkPattern(held.Imported); err != nil {
		t.Errorf("reference held across Invalidate: %v", err)
	}
	held.Release()
	c.Close()
	if _, err := c.Get(ctx, e.Addr(), hs[0]); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
	e.Close()
	waitFDs(t, base)
}
