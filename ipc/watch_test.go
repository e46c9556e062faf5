package ipc

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// TestWatch: a watcher receives every revocation in order, ErrClosed after
// its own Close, ErrExporterGone when the exporter closes, and the
// exporter's count of watchers follows.
func TestWatch(t *testing.T) {
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
		h, err := e.ExportFD(fd, testDev, uint64(0x10000*(i+1)), testSize, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w1, err := Watch(ctx, e.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer w1.Close()
	w2, err := Watch(ctx, e.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if n := e.Watchers(); n != 2 {
		t.Errorf("exporter has %d watchers, want 2", n)
	}
	for _, i := range []int{2, 0} {
		if err := e.Revoke(hs[i]); err != nil {
			t.Fatal(err)
		}
	}
	for name, w := range map[string]*Watcher{"w1": w1, "w2": w2} {
		var got [][16]byte
		for range 2 {
			id, err := w.Next(ctx)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			got = append(got, id)
		}
		if diff := cmp.Diff([][16]byte{hs[2].BufferID, hs[0].BufferID}, got); diff != "" {
			t.Errorf("%s: revoked ids (-want +got):\n%s", name, diff)
		}
	}
	// Nothing more is pending: Next waits for ctx.
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	if _, err := w1.Next(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Next with nothing revoked: %v, want DeadlineExceeded", err)
	}
	cancelShort()

	w2.Close()
	w2.Close() // idempotent
	if _, err := w2.Next(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Next after Close: %v, want ErrClosed", err)
	}
	waitFor(t, func() bool { return e.Watchers() == 1 }, "exporter to drop the closed watcher")

	e.Close()
	if _, err := w1.Next(ctx); !errors.Is(err, ErrExporterGone) {
		t.Errorf("Next after the exporter closed: %v, want ErrExporterGone", err)
	}
	if _, err := Watch(ctx, e.Addr()); !errors.Is(err, ErrExporterGone) {
		t.Errorf("Watch of a closed exporter: %v, want ErrExporterGone", err)
	}
}

// TestWatchSlowWatcherDropped: a watcher that never reads is disconnected
// instead of stalling Revoke, and learns that the exporter dropped it.
func TestWatchSlowWatcherDropped(t *testing.T) {
	e, err := NewExporter("", ExporterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := Watch(ctx, e.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// The watcher's channel holds 16 ids and the socket some more; revoke
	// far more than fit, without reading.
	start := time.Now()
	for range 4000 {
		fd, err := newMemfd()
		if err != nil {
			t.Fatal(err)
		}
		h, err := e.ExportFD(fd, testDev, 0x1000, testSize, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Revoke(h); err != nil {
			t.Fatal(err)
		}
		if e.Watchers() == 0 {
			break
		}
	}
	if e.Watchers() != 0 {
		t.Fatal("a watcher that never reads was not dropped")
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("revocations took %v with a stalled watcher", d)
	}
	var err2 error
	for err2 == nil {
		_, err2 = w.Next(ctx)
	}
	if !errors.Is(err2, ErrExporterGone) {
		t.Errorf("dropped watcher: %v, want ErrExporterGone", err2)
	}
}

// TestWatchNoticeAfterStall: a notice whose write is delayed past
// noticeTimeout (the exporter's goroutine descheduled before it writes)
// still reaches a watcher that reads: the timeout bounds only a wait for
// room in a full queue. Before, the deadline was set first and Go refused
// the late write, so the exporter dropped a watcher that was reading,
// which took it for "everything revoked".
func TestWatchNoticeAfterStall(t *testing.T) {
	e, h := newTestExporter(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := Watch(ctx, e.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var once sync.Once
	stall := func() { once.Do(func() { time.Sleep(noticeTimeout + 200*time.Millisecond) }) }
	testHookWriting.Store(&stall)
	t.Cleanup(func() { testHookWriting.Store(nil) })
	if err := e.Revoke(h); err != nil {
		t.Fatal(err)
	}
	id, err := w.Next(ctx)
	if err != nil {
		t.Fatalf("notice written late: %v, want the revoked id", err)
	}
	if id != h.BufferID {
		t.Errorf("revoked id %x, want %x", id, h.BufferID)
	}
	if n := e.Watchers(); n != 1 {
		t.Errorf("exporter has %d watchers after a late notice, want 1", n)
	}
}

func TestNoticeDecode(t *testing.T) {
	id := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	good := encodeNotice(noticeRevoked, id)
	if _, got, err := decodeNotice(good); err != nil || got != id {
		t.Fatalf("round trip: %x, %v", got, err)
	}
	for name, b := range map[string][]byte{
		"empty":   nil,
		"short":   good[:noticeLen-1],
		"long":    append(append([]byte{}, good...), 0),
		"magic":   append([]byte("XIRN"), good[4:]...),
		"version": append(append(append([]byte{}, good[:4]...), 9), good[5:]...),
		"kind":    append(append(append([]byte{}, good[:5]...), 7), good[6:]...),
	} {
		if _, _, err := decodeNotice(b); !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: %v, want ErrProtocol", name, err)
		}
	}
}

func FuzzDecodeNotice(f *testing.F) {
	f.Add(encodeNotice(noticeRevoked, [16]byte{1}))
	f.Add([]byte("GIRN"))
	f.Fuzz(func(t *testing.T, b []byte) {
		kind, id, err := decodeNotice(b)
		if err != nil {
			return
		}
		if got := encodeNotice(kind, id); string(got) != string(b) {
			t.Fatalf("accepted %x, which encodes back as %x", b, got)
		}
	})
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
