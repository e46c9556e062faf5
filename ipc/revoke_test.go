package ipc

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/internal/simtest"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
)

// childCache imports $HANDLE from $ADDR through a Cache and reports: OK
// once the bytes match, REVOKED when the Cache is told of the revocation,
// then REFUSED when a new Get is refused as revoked.
func childCache() int {
	h, err := ParseHandle(os.Getenv("HANDLE"))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := NewCache(4)
	defer c.Close()
	ci, err := c.Get(ctx, os.Getenv("ADDR"), h)
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	if err := checkPattern(ci.Imported); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("OK")
	select {
	case <-ci.Revoked():
		fmt.Println("REVOKED")
	case <-ctx.Done():
		fmt.Println("ERR no revocation")
		return 1
	}
	ci.Release()
	if _, err := c.Get(ctx, os.Getenv("ADDR"), h); errors.Is(err, ErrRevoked) {
		fmt.Println("REFUSED")
		return 0
	} else {
		fmt.Println("ERR get after revocation:", err)
		return 1
	}
}

// childWatch watches $ADDR and reports WATCHING (or NOTALLOWED), then
// REVOKED <id> per revocation and GONE when the exporter goes away.
func childWatch() int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := Watch(ctx, os.Getenv("ADDR"))
	switch {
	case errors.Is(err, ErrNotAllowed):
		fmt.Println("NOTALLOWED", err)
		return 0
	case err != nil:
		fmt.Println("ERR", err)
		return 1
	}
	defer w.Close()
	fmt.Println("WATCHING")
	for {
		id, err := w.Next(ctx)
		switch {
		case errors.Is(err, ErrExporterGone):
			fmt.Println("GONE")
			return 0
		case err != nil:
			fmt.Println("ERR", err)
			return 1
		}
		fmt.Println("REVOKED", hex.EncodeToString(id[:]))
	}
}

func expectLine(t *testing.T, c *child, want string) {
	t.Helper()
	if l := c.line(t); l != want {
		t.Fatalf("child says %q, want %q", l, want)
	}
}

// TestWatchInChild: another process watching is told of each revocation
// and of the exporter closing.
func TestWatchInChild(t *testing.T) {
	e, h := newTestExporter(t)
	c := startChild(t, selfExe(t), []string{childEnv + "=watch", "ADDR=" + e.Addr()}, nil)
	expectLine(t, c, "WATCHING")
	if err := e.Revoke(h); err != nil {
		t.Fatal(err)
	}
	expectLine(t, c, "REVOKED "+hex.EncodeToString(h.BufferID[:]))
	e.Close()
	expectLine(t, c, "GONE")
}

// TestWatchOtherUIDRefused: the watch service applies the import policy.
func TestWatchOtherUIDRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the watcher child as another uid (nobody)")
	}
	bin := copyForNobody(t)
	const nobody = 65534
	for _, allow := range [][]uint32{nil, {0, nobody}} {
		e, err := NewExporter(abstractAddr(t), ExporterOptions{AllowUIDs: allow})
		if err != nil {
			t.Fatal(err)
		}
		c := startChild(t, bin, []string{childEnv + "=watch", "ADDR=" + e.Addr()}, &syscall.Credential{Uid: nobody, Gid: nobody})
		want := "NOTALLOWED"
		if allow != nil {
			want = "WATCHING"
		}
		if l := c.line(t); !strings.HasPrefix(l, want) {
			t.Errorf("allow %v: child as nobody says %q, want %s", allow, l, want)
		}
		e.Close()
	}
}

// TestRevokeOnDMABufClose: device memory written by DMA on a simulated
// Gaudi is exported and imported by another process through a Cache;
// closing the dma-buf revokes the export, the importer is told, and the
// device buffer can then be freed.
func TestRevokeOnDMABufClose(t *testing.T) {
	d := simtest.Device(t, sim.Gaudi2)
	m := simtest.Memory(t, d)
	eng := simtest.DMA(t, m)
	host, err := m.AllocHost(testSize, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	for i := range host.Bytes() {
		host.Bytes()[i] = pattern(i)
	}
	buf, err := m.Alloc(testSize, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := eng.CopyToDevice(ctx, buf.Range(0, testSize), host.Range(0, testSize)); err != nil {
		t.Fatal(err)
	}
	x, err := buf.Export(0, testSize, memory.ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	e, err := NewExporter("", ExporterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	h, err := e.Export(x, DeviceIDOf(d))
	if err != nil {
		t.Fatal(err)
	}
	if err := buf.Close(); !errors.Is(err, memory.ErrInUse) {
		t.Fatalf("close of an exported buffer: %v, want ErrInUse", err)
	}

	c := startChild(t, selfExe(t), []string{childEnv + "=cache", "ADDR=" + e.Addr(), "HANDLE=" + h.String()}, nil)
	expectLine(t, c, "OK")
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if n := e.Exported(); n != 0 {
		t.Errorf("after the dma-buf closed the exporter serves %d buffers, want 0", n)
	}
	if err := e.Revoke(h); !errors.Is(err, ErrUnknownBuffer) {
		t.Errorf("Revoke after the dma-buf closed: %v, want ErrUnknownBuffer (already revoked)", err)
	}
	expectLine(t, c, "REVOKED")
	expectLine(t, c, "REFUSED")
	if err := buf.Close(); err != nil {
		t.Errorf("free the buffer after the revocation: %v", err)
	}
}

// TestExportFDDupOwned: the exporter's duplicate keeps the export
// importable after the caller closed its own descriptor.
func TestExportFDDupOwned(t *testing.T) {
	e, h := newTestExporter(t)
	// newTestExporter closed the caller's descriptor after ExportFD.
	im, err := Import(context.Background(), e.Addr(), h)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	if err := checkPattern(im); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(im.File.Fd()), &st); err != nil || st.Size != testSize {
		t.Fatalf("imported descriptor: size %d, %v", st.Size, err)
	}
}
