package sim

import (
	"bytes"
	"testing"
)

func TestSparseDRAM(t *testing.T) {
	s := newTestSystem(t, Default(Gaudi2, 1))
	d := s.Device(0)
	m := d.dram
	if m.size != 96<<30 || d.ResidentDRAM() != 0 {
		t.Fatalf("size %#x resident %d", m.size, d.ResidentDRAM())
	}
	// A write that straddles two chunks near the end of 96 GiB.
	off := m.size - chunkSize - 3
	data := []byte("hello, sparse device memory")
	if err := m.WriteAt(data, off); err != nil {
		t.Fatal(err)
	}
	if got := d.ResidentDRAM(); got != 2*chunkSize {
		t.Errorf("resident after one small write = %d, want %d", got, 2*chunkSize)
	}
	got := make([]byte, len(data)+10)
	if err := m.ReadAt(got, off-5); err != nil {
		t.Fatal(err)
	}
	want := append(append(make([]byte, 5), data...), make([]byte, 5)...)
	if !bytes.Equal(got, want) {
		t.Errorf("read back %q, want %q", got, want)
	}
	// Unwritten memory reads as zeros without becoming resident.
	z := bytes.Repeat([]byte{0xAA}, 4096)
	if err := m.ReadAt(z, 1<<30); err != nil || !bytes.Equal(z, make([]byte, 4096)) {
		t.Errorf("unwritten read: %v", err)
	}
	if d.ResidentDRAM() != 2*chunkSize {
		t.Errorf("a read made memory resident")
	}
	// Out of range accesses fail.
	for _, tc := range []struct {
		off uint64
		n   int
	}{{m.size, 1}, {m.size - 1, 2}, {^uint64(0), 1}} {
		if err := m.WriteAt(make([]byte, tc.n), tc.off); err == nil {
			t.Errorf("write of %d at %#x accepted", tc.n, tc.off)
		}
		if err := m.ReadAt(make([]byte, tc.n), tc.off); err == nil {
			t.Errorf("read of %d at %#x accepted", tc.n, tc.off)
		}
	}
	m.Reset()
	if d.ResidentDRAM() != 0 {
		t.Errorf("resident after Reset = %d", d.ResidentDRAM())
	}
}
