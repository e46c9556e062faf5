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
	memfdExports(t)
	s := ootSystem(t, Gaudi2, 2)
	exp, err := s.Device(0).Open()
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Close()
	imp, err := s.Device(1).Open()
	if err != nil {
		t.Fatal(err)
	}
	defer imp.Close()
	const n = 1 << 20
	va := deviceBuf(t, exp, n)
	want := make([]byte, n)
	fillRandom(want, 7)
	dramPut(t, exp, va, want)
	fd, err := memExport(exp, va, n, 0, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
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
