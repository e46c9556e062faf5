package ipc

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

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
	// its own goroutine: wait for that rather than racing it. Left: the
	// import, and the two ends of the Cache's watch of the exporter.
	waitFDs(t, withExports+3)
	if c.Watching() != 1 || e.Watchers() != 1 {
		t.Errorf("cache watches %d exporters, exporter has %d watchers; want 1 and 1", c.Watching(), e.Watchers())
	}

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
	waitFDs(t, withExports+4)

	// A revocation reaches the cache by itself: the held reference is told,
	// stays usable until released, and the next Get is refused.
	held, err := c.Get(ctx, e.Addr(), hs[2])
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Revoke(hs[2]); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Revoked():
	case <-time.After(10 * time.Second):
		t.Fatal("the cache was not told of the revocation")
	}
	if _, err := c.Get(ctx, e.Addr(), hs[2]); !errors.Is(err, ErrRevoked) {
		t.Errorf("Get after revoke: %v", err)
	}
	if err := checkPattern(held.Imported); err != nil {
		t.Errorf("reference held across the revocation: %v", err)
	}
	held.Release()
	// Invalidate by hand drops an idle entry and closes its descriptor.
	n := c.Len()
	c.Invalidate(hs[1])
	if c.Len() != n-1 {
		t.Errorf("Invalidate: %d entries, want %d", c.Len(), n-1)
	}
	c.Close()
	c.Close() // idempotent
	if _, err := c.Get(ctx, e.Addr(), hs[0]); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
	e.Close()
	waitFDs(t, base)
}

// TestCacheExporterGone: when the exporter closes, every entry of it is
// invalidated, held ones included, and the cache stops watching it.
func TestCacheExporterGone(t *testing.T) {
	e, h := newTestExporter(t)
	c := NewCache(4)
	defer c.Close()
	ctx := context.Background()
	ci, err := c.Get(ctx, e.Addr(), h)
	if err != nil {
		t.Fatal(err)
	}
	defer ci.Release()
	e.Close()
	select {
	case <-ci.Revoked():
	case <-time.After(10 * time.Second):
		t.Fatal("entry of a closed exporter not invalidated")
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.Watching() != 0 || c.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after the exporter closed: watching %d, %d entries", c.Watching(), c.Len())
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := c.Get(ctx, e.Addr(), h); !errors.Is(err, ErrExporterGone) {
		t.Errorf("Get from a closed exporter: %v, want ErrExporterGone", err)
	}
}
