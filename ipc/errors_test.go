package ipc

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestClosedObjects: calls on a closed Exporter, Cache or Watcher fail
// with an error matching os.ErrClosed (and ErrClosed, which is
// os.ErrClosed).
func TestClosedObjects(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tests := []struct {
		name string
		call func(t *testing.T, e *Exporter, h Handle) error
	}{
		{"Exporter.ExportFD", func(t *testing.T, e *Exporter, h Handle) error {
			fd, err := newMemfd()
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			e.Close()
			_, err = e.ExportFD(fd, testDev, 0x1000, testSize, 0)
			return err
		}},
		{"Cache.Get", func(t *testing.T, e *Exporter, h Handle) error {
			c := NewCache(1)
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			_, err := c.Get(ctx, e.Addr(), h)
			return err
		}},
		{"Watcher.Next", func(t *testing.T, e *Exporter, h Handle) error {
			w, err := Watch(ctx, e.Addr())
			if err != nil {
				t.Fatal(err)
			}
			w.Close()
			_, err = w.Next(ctx)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, h := newTestExporter(t)
			err := tt.call(t, e, h)
			if !errors.Is(err, os.ErrClosed) || !errors.Is(err, ErrClosed) {
				t.Errorf("%v, want an error matching os.ErrClosed", err)
			}
		})
	}
}

// TestCloseErrors: a descriptor that fails to close is reported by the
// call that closed it: Release, Invalidate, Cache.Close, Revoke,
// Exporter.Close. The failure is made by closing the descriptor behind
// the owner's back (an os.File closed twice answers os.ErrClosed), or by
// giving the Exporter a descriptor number that is not open (EBADF).
func TestCloseErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	get := func(t *testing.T, c *Cache, e *Exporter, h Handle) *CachedImport {
		t.Helper()
		ci, err := c.Get(ctx, e.Addr(), h)
		if err != nil {
			t.Fatal(err)
		}
		ci.Imported.File.Close() // behind the Cache's back
		return ci
	}
	tests := []struct {
		name string
		run  func(t *testing.T, e *Exporter, h Handle) error
	}{
		{"CachedImport.Release", func(t *testing.T, e *Exporter, h Handle) error {
			c := NewCache(1)
			defer c.Close()
			ci := get(t, c, e, h)
			if err := c.Invalidate(h); err != nil {
				t.Fatalf("Invalidate of a held import: %v", err)
			}
			return ci.Release()
		}},
		{"Cache.Invalidate", func(t *testing.T, e *Exporter, h Handle) error {
			c := NewCache(1)
			defer c.Close()
			if err := get(t, c, e, h).Release(); err != nil {
				t.Fatalf("Release into the cache: %v", err)
			}
			return c.Invalidate(h)
		}},
		{"Cache.Close", func(t *testing.T, e *Exporter, h Handle) error {
			c := NewCache(1)
			if err := get(t, c, e, h).Release(); err != nil {
				t.Fatalf("Release into the cache: %v", err)
			}
			return c.Close()
		}},
		{"Exporter.Revoke", func(t *testing.T, e *Exporter, h Handle) error {
			badFD(t, e, h)
			return e.Revoke(h)
		}},
		{"Exporter.Close", func(t *testing.T, e *Exporter, h Handle) error {
			badFD(t, e, h)
			return e.Close()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, h := newTestExporter(t)
			err := tt.run(t, e, h)
			if !errors.Is(err, os.ErrClosed) && !errors.Is(err, unix.EBADF) {
				t.Errorf("%v, want the failed close's error", err)
			}
		})
	}
}

// badFD replaces the Exporter's duplicate for h with a descriptor number
// that is not open, so that closing it fails with EBADF.
func badFD(t *testing.T, e *Exporter, h Handle) {
	t.Helper()
	e.mu.Lock()
	en := e.entries[h.BufferID]
	e.mu.Unlock()
	en.mu.Lock()
	defer en.mu.Unlock()
	if err := unix.Close(en.fd); err != nil {
		t.Fatal(err)
	}
	en.fd = 1 << 30
}
