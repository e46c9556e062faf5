package rdma

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDescriptorRoundTrip(t *testing.T) {
	for _, d := range []Descriptor{
		{Path: PathZeroCopy, RKey: 0x1234, Addr: 0x1001001800000000, Len: 64 << 20},
		{Path: PathPipelined, RKey: 0xffffffff, Addr: 0x7f0000001000, Len: 3<<20 + 17, ChunkSize: 1 << 20, Slots: 3},
		{Path: PathPipelined, Addr: 4096, ChunkSize: 1, Slots: 65535},
	} {
		b, err := d.MarshalBinary()
		if err != nil {
			t.Fatalf("%+v: %v", d, err)
		}
		if len(b) != DescriptorSize {
			t.Errorf("%+v: %d bytes, want %d", d, len(b), DescriptorSize)
		}
		// The RDMA CM pads private data to its message's limit (56 bytes
		// for CONNECT): the padding is ignored.
		var got Descriptor
		if err := got.UnmarshalBinary(append(b, make([]byte, 56-len(b))...)); err != nil {
			t.Fatalf("%+v: %v", d, err)
		}
		if diff := cmp.Diff(d, got); diff != "" {
			t.Errorf("round trip (-sent +decoded):\n%s", diff)
		}
	}
}

// TestDescriptorBytes pins the wire form: a change is a new version.
func TestDescriptorBytes(t *testing.T) {
	d := Descriptor{Path: PathPipelined, RKey: 0x01020304, Addr: 0x1112131415161718, Len: 0x2122232425262728, ChunkSize: 0x31323334, Slots: 0x4142}
	b, err := d.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{
		'G', 'M', 3, 2, 0x01, 0x02, 0x03, 0x04,
		0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
		0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,
		0x31, 0x32, 0x33, 0x34, 0x41, 0x42, 0, 0,
	}
	if !bytes.Equal(b, want) {
		t.Errorf("marshalled\n%x\nwant\n%x", b, want)
	}
}

func TestDescriptorBadInput(t *testing.T) {
	good, err := Descriptor{Path: PathPipelined, Addr: 4096, Len: 10, ChunkSize: 4096, Slots: 2}.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	with := func(off int, v byte) []byte {
		b := bytes.Clone(good)
		b[off] = v
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrShortDescriptor},
		{"magic only", good[:2], ErrShortDescriptor},
		{"cut", good[:DescriptorSize-1], ErrShortDescriptor},
		{"older version", with(offVersion, 0), ErrOlderDescriptor},
		{"version 1 (no fin)", with(offVersion, 1), ErrOlderDescriptor},
		{"version 2 (no split of short transfers)", with(offVersion, 2), ErrOlderDescriptor},
		{"newer version", with(offVersion, DescriptorVersion+1), ErrNewerDescriptor},
		{"newer version, short", with(offVersion, 9)[:8], ErrNewerDescriptor},
		{"magic", with(0, 'X'), ErrBadDescriptor},
		{"path auto", with(offPath, byte(PathAuto)), ErrBadDescriptor},
		{"path unknown", with(offPath, 7), ErrBadDescriptor},
		{"reserved", with(offResv+1, 1), ErrBadDescriptor},
		{"no slots", with(offSlots+1, 0), ErrBadDescriptor},
		{"zero-copy with ring", with(offPath, byte(PathZeroCopy)), ErrBadDescriptor},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Descriptor{RKey: 77}
			err := d.UnmarshalBinary(tc.b)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want one matching %v", err, tc.want)
			}
			if d != (Descriptor{RKey: 77}) {
				t.Errorf("a failed decode changed the descriptor: %+v", d)
			}
		})
	}
	var ve *VersionError
	if err := new(Descriptor).UnmarshalBinary(with(offVersion, 0)); !errors.As(err, &ve) || ve.Version != 0 || errors.Is(err, ErrNewerDescriptor) {
		t.Errorf("older version: %v (%#v)", err, ve)
	}
	if _, err := (Descriptor{Path: PathPipelined}).MarshalBinary(); !errors.Is(err, ErrBadDescriptor) {
		t.Errorf("marshal a ring without slots: %v", err)
	}
	if _, err := (Descriptor{Path: PathZeroCopy, Addr: ^uint64(0), Len: 2}).MarshalBinary(); !errors.Is(err, ErrBadDescriptor) {
		t.Errorf("marshal a wrapping range: %v", err)
	}
}

// FuzzDescriptor: any bytes decode to a valid descriptor that marshals
// back to the same first DescriptorSize bytes, or to a typed error.
func FuzzDescriptor(f *testing.F) {
	good, _ := Descriptor{Path: PathPipelined, Addr: 4096, Len: 10, ChunkSize: 4096, Slots: 2}.MarshalBinary()
	zc, _ := Descriptor{Path: PathZeroCopy, Addr: 1 << 40, Len: 1 << 20, RKey: 5}.MarshalBinary()
	f.Add(good)
	f.Add(zc)
	f.Add(append(zc, make([]byte, 24)...))
	f.Add([]byte("GM"))
	f.Add([]byte{'G', 'M', 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Descriptor
		err := d.UnmarshalBinary(b)
		if err != nil {
			for _, s := range []error{ErrShortDescriptor, ErrOlderDescriptor, ErrNewerDescriptor, ErrBadDescriptor} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("untyped error %v", err)
		}
		out, err := d.MarshalBinary()
		if err != nil {
			t.Fatalf("a decoded descriptor does not marshal: %+v: %v", d, err)
		}
		if !bytes.Equal(out, b[:DescriptorSize]) {
			t.Fatalf("re-marshalled %x, decoded from %x", out, b[:DescriptorSize])
		}
	})
}
