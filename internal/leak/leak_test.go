package leak

import (
	"bytes"
	"strings"
	"testing"
)

func TestSubtract(t *testing.T) {
	base := []Mapping{{Start: 0x1000, End: 0x5000, What: "a"}, {Start: 0x8000, End: 0x9000, What: "b"}}
	for _, tc := range []struct {
		start, end uintptr
		want       []Mapping
	}{
		{0x0, 0x1000, base},
		{0x1000, 0x5000, base[1:]},
		{0x0, 0x10000, nil},
		{0x2000, 0x3000, []Mapping{{Start: 0x1000, End: 0x2000, What: "a"}, base[1], {Start: 0x3000, End: 0x5000, What: "a"}}},
		{0x4000, 0x8800, []Mapping{{Start: 0x1000, End: 0x4000, What: "a"}, {Start: 0x8800, End: 0x9000, What: "b"}}},
	} {
		got := subtract(append([]Mapping(nil), base...), tc.start, tc.end)
		if len(got) != len(tc.want) {
			t.Errorf("subtract [%#x, %#x): %+v, want %+v", tc.start, tc.end, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("subtract [%#x, %#x): %+v, want %+v", tc.start, tc.end, got, tc.want)
				break
			}
		}
	}
}

func TestMappedReplaces(t *testing.T) {
	Enable()
	mem := make([]byte, 3*4096)
	Mapped(mem, "old")
	Mapped(mem[4096:2*4096], "new")
	var got []string
	for _, m := range Mappings() {
		if m.Start >= addrOf(mem) && m.End <= addrOf(mem)+uintptr(len(mem)) {
			got = append(got, m.What)
		}
	}
	Unmapped(mem)
	if strings.Join(got, ",") != "old,old,new" {
		t.Errorf("mappings %v, want old, old, new", got)
	}
	for _, m := range Mappings() {
		if m.Start < addrOf(mem)+uintptr(len(mem)) && m.End > addrOf(mem) {
			t.Errorf("%+v left after Unmapped", m)
		}
	}
}

func TestDefaultReporterPrints(t *testing.T) {
	var buf bytes.Buffer
	saved := stderr
	stderr = &buf
	defer func() { stderr = saved }()
	var seen []Info
	defer SetObserver(func(i Info) { seen = append(seen, i) })()
	report(Info{Type: "*x.Y", Device: "sim:accel3", Size: 8, FD: 7})
	if want := "gaudi: *x.Y garbage-collected without Close: device sim:accel3 size 8 fd 7\n"; buf.String() != want {
		t.Errorf("printed %q, want %q", buf.String(), want)
	}
	if len(seen) != 1 {
		t.Errorf("observer saw %d reports, want 1", len(seen))
	}
	// A reporter of the program's takes the report instead.
	var taken int
	SetReporter(func(Info) { taken++ })
	report(Info{Type: "*x.Y", FD: -1})
	SetReporter(nil)
	if taken != 1 || len(seen) != 1 || strings.Count(buf.String(), "\n") != 1 {
		t.Errorf("with a reporter: taken %d, observed %d, printed %q", taken, len(seen), buf.String())
	}
}

type object struct{ _ [64]byte }

// BenchmarkTrack is what the safety net adds to opening a Device or
// allocating a buffer: Track, then Stop in Close.
func BenchmarkTrack(b *testing.B) {
	b.ReportAllocs()
	objs := make([]*object, b.N)
	for i := range objs {
		objs[i] = new(object)
	}
	b.ResetTimer()
	for i := range b.N {
		c := Track(objs[i], Info{Type: "*x.Y", Device: "sim:accel0", FD: -1}, 0)
		c.Stop()
	}
}
