package sim

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRegDMABufReadOnly: an export opened read-only is imported
// read-only: the importer's device reads the exporter's bytes, and its
// writes never reach the exporter's memory.
func TestRegDMABufReadOnly(t *testing.T) {
	const n = 1 << 20
	_, exp, imp, va, want, fd := exportPair(t, n, 7, unix.O_RDONLY|unix.O_CLOEXEC)
	defer imp.Close()
	defer unix.Close(fd)
	a, err := regDMABuf(imp, fd, n)
	if err != nil {
		t.Fatal(err)
	}
	got := a.Out().DeviceVirtAddr()
	var seen []byte
	if err := imp.ctx.access(got, n, func(e extent) error { seen = append(seen, e.host...); return nil }); err != nil || !bytes.Equal(seen, want) {
		t.Fatalf("read-only import: bytes differ from the exporter's (%v)", err)
	}
	imp.ctx.access(got+100, 3, func(e extent) error { copy(e.host, "abc"); return nil })
	if b := dramAt(t, exp, va+100, 3); !bytes.Equal(b, want[100:103]) {
		t.Errorf("exporter reads %q after the importer of a read-only export wrote abc, want %q", b, want[100:103])
	}
	if err := memUnmap(imp, got); err != nil {
		t.Fatal(err)
	}
}
