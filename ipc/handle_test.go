package ipc

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func sampleHandle() Handle {
	return Handle{
		PCIAddress: "0000:19:00.0", ModuleID: 3,
		DeviceVA: 0x1001_0000_0000, Size: 8 << 20, Offset: 2 << 20,
		PID: 4242, PIDNamespace: 4026531836, StartTime: 1234567,
		BootID:   [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		BufferID: [16]byte{0xaa, 0xbb, 15: 0xcc},
	}
}

func TestHandleRoundTrip(t *testing.T) {
	h := sampleHandle()
	b, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != handleFixedLen+len(h.PCIAddress) {
		t.Fatalf("encoded %d bytes", len(b))
	}
	var got Handle
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(h, got); d != "" {
		t.Fatalf("round trip (-want +got):\n%s", d)
	}
	p, err := ParseHandle(h.String())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(h, p); d != "" {
		t.Fatalf("ParseHandle (-want +got):\n%s", d)
	}
	h.PCIAddress = ""
	b, _ = h.MarshalBinary()
	if err := got.UnmarshalBinary(b); err != nil || got.PCIAddress != "" {
		t.Fatalf("empty PCI address: %v %q", err, got.PCIAddress)
	}
}

func TestHandleDecodeErrors(t *testing.T) {
	good, _ := sampleHandle().MarshalBinary()
	mod := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"header only", good[:8], ErrTruncated},
		{"one short", good[:len(good)-1], ErrTruncated},
		{"trailing", append(bytes.Clone(good), 0), ErrMalformed},
		{"magic", mod(func(b []byte) []byte { b[0] = 'X'; return b }), ErrBadMagic},
		{"version 0", mod(func(b []byte) []byte { b[4] = 0; return b }), ErrBadVersion},
		{"version 1 (no start time)", mod(func(b []byte) []byte { b[4] = 1; return b }), ErrBadVersion},
		{"version 3", mod(func(b []byte) []byte { b[4] = 3; return b }), ErrBadVersion},
		{"length field", mod(func(b []byte) []byte { b[6]++; return b }), ErrMalformed},
		{"pci len too big", mod(func(b []byte) []byte { b[5] = 200; return b }), ErrMalformed},
		{"pci not printable", mod(func(b []byte) []byte { b[88] = 0; return b }), ErrMalformed},
		{"zero size", mod(func(b []byte) []byte { clear(b[64:72]); return b }), ErrMalformed},
		{"zero buffer id", mod(func(b []byte) []byte { clear(b[8:24]); return b }), ErrMalformed},
	}
	for i := 0; i < len(good); i++ {
		if err := new(Handle).UnmarshalBinary(good[:i]); !errors.Is(err, ErrTruncated) {
			t.Errorf("prefix of %d bytes: %v, want ErrTruncated", i, err)
		}
	}
	for _, c := range cases {
		var h Handle
		err := h.UnmarshalBinary(c.in)
		if !errors.Is(err, c.want) || !errors.Is(err, ErrInvalidHandle) {
			t.Errorf("%s: %v, want %v and ErrInvalidHandle", c.name, err, c.want)
		}
		if d := cmp.Diff(Handle{}, h); d != "" {
			t.Errorf("%s: handle modified on error", c.name)
		}
	}
	if _, err := ParseHandle("zz"); !errors.Is(err, ErrMalformed) {
		t.Errorf("ParseHandle(zz) = %v", err)
	}
	long := sampleHandle()
	long.PCIAddress = string(bytes.Repeat([]byte("a"), MaxPCIAddressLen+1))
	if _, err := long.MarshalBinary(); err == nil {
		t.Error("marshalled a too long PCI address")
	}
}

func FuzzDecodeHandle(f *testing.F) {
	good, _ := sampleHandle().MarshalBinary()
	f.Add(good)
	f.Add(good[:40])
	f.Add([]byte("GIPH"))
	h := sampleHandle()
	h.PCIAddress = ""
	empty, _ := h.MarshalBinary()
	f.Add(empty)
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Handle
		err := h.UnmarshalBinary(b)
		if err != nil {
			if !errors.Is(err, ErrInvalidHandle) {
				t.Fatalf("error %v does not match ErrInvalidHandle", err)
			}
			return
		}
		// Accepted input is canonical: it re-encodes to the same bytes.
		out, err := h.MarshalBinary()
		if err != nil {
			t.Fatalf("decoded handle does not encode: %v", err)
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("re-encoding differs:\n in  %x\n out %x", b, out)
		}
	})
}

// TestParseStartTime: field 22 of /proc/PID/stat, counted from the last
// ')' (a command name may hold spaces and parentheses), and this
// process's own, which the kernel gives.
func TestParseStartTime(t *testing.T) {
	tail := " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 20 21\n"
	for _, c := range []struct {
		name string
		in   string
		want uint64
		err  bool
	}{
		{"plain", "42 (exporter)" + tail, 987654, false},
		{"spaces and parentheses in the name", "42 (a) b (c) )" + tail, 987654, false},
		{"no name", "42 exporter" + tail, 0, true},
		{"too few fields", "42 (exporter) S 1 2 3", 0, true},
		{"not a number", "42 (exporter) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x 20", 0, true},
	} {
		got, err := parseStartTime([]byte(c.in))
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%s: %d, %v; want %d (error %v)", c.name, got, err, c.want, c.err)
		}
	}
	self, err := selfStartTime()
	if err != nil || self == 0 {
		t.Fatalf("this process's start time: %d, %v", self, err)
	}
}
