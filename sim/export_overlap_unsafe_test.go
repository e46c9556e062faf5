package sim

import (
	"bytes"
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOverlappingExports follows export_dmabuf_from_addr
// (drivers/accel/habanalabs/common/memory.c): memhash_node_export_get
// counts the exports of a mapping (hnode->export_cnt) and nothing refuses
// a range that overlaps another export of it, so both are accepted and
// both see the same device memory. The simulator answered the second
// EOPNOTSUPP (two memfds cannot share pages); an export that overlaps a
// live one is now a view of the device memory (export_view.go), which the
// exporting process reads and imports coherently.
func TestOverlappingExports(t *testing.T) {
	const n = 16 << 10
	s, exp, imp, va, want, fd := exportPair(t, 64<<10, 7, exportFlags)
	defer func() { imp.Close() }()
	_ = s
	fds := []int{fd}
	closeAll := func() {
		for _, x := range fds {
			unix.Close(x)
		}
		fds = nil
	}
	defer func() { closeAll() }()
	// [0, 16K) is exported; these overlap it or each other.
	ranges := []struct {
		name         string
		offset, size uint64
	}{
		{"inside", 4096, 8192},
		{"straddling", 8192, n},
		{"around", 0, 32 << 10},
	}
	for _, r := range ranges {
		x, err := memExport(exp, va, r.size, r.offset, exportFlags)
		if err != nil {
			t.Fatalf("%s export [%#x, +%#x): %v, want success", r.name, r.offset, r.size, err)
		}
		fds = append(fds, x)
		if got := preadFD(t, x, 0, int(r.size)); !bytes.Equal(got, want[r.offset:r.offset+r.size]) {
			t.Errorf("%s export reads other bytes than the device memory", r.name)
		}
	}
	// The device writes; every export sees it.
	dramPut(t, exp, va+10240, []byte("device write"))
	for i, off := range []int64{10240, 10240 - 4096, 10240 - 8192, 10240} {
		if got := preadFD(t, fds[i], off, 12); string(got) != "device write" {
			t.Errorf("export %d reads %q after the device wrote", i, got)
		}
	}
	// Another device imports a view and reaches the exporter's memory
	// both ways.
	a, err := regDMABuf(imp, fds[2], n)
	if err != nil {
		t.Fatalf("import of an overlapping export: %v", err)
	}
	got := a.Out().DeviceVirtAddr()
	var seen []byte
	if err := imp.ctx.access(got, n, func(e extent) error { seen = append(seen, e.host...); return nil }); err != nil {
		t.Fatal(err)
	}
	wantNow := dramAt(t, exp, va+8192, n)
	if !bytes.Equal(seen, wantNow) {
		t.Error("the import of the view reads other bytes than the exporter's memory")
	}
	imp.ctx.access(got+n-4096, 5, func(e extent) error { copy(e.host, "abcde"); return nil })
	if b := dramAt(t, exp, va+8192+n-4096, 5); string(b) != "abcde" {
		t.Errorf("exporter reads %q after the importer wrote abcde", b)
	}
	if b := preadFD(t, fds[3], 8192+n-4096, 5); string(b) != "abcde" {
		t.Errorf("the around export reads %q after the importer wrote abcde", b)
	}
	// The mapping stays while any export of it is open (export_cnt).
	if err := memUnmap(exp, va); !errors.Is(err, unix.EINVAL) {
		t.Errorf("UNMAP while exported: %v, want EINVAL", err)
	}
	if err := memUnmap(imp, got); err != nil {
		t.Fatal(err)
	}
	closeAll()
	if err := memUnmap(exp, va); err != nil {
		t.Errorf("UNMAP once every export is closed: %v", err)
	}
}
