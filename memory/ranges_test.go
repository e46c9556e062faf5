package memory

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestSpans(t *testing.T) {
	var s spans[int]
	for i, r := range [][2]uint64{{100, 200}, {300, 400}, {200, 250}, {0, 50}} {
		if !s.insert(r[0], r[1], i) {
			t.Fatalf("insert %v failed", r)
		}
	}
	for _, bad := range [][2]uint64{{150, 160}, {90, 101}, {399, 500}, {10, 10}, {20, 5}, {0, 1 << 40}} {
		if s.insert(bad[0], bad[1], -1) {
			t.Errorf("overlapping or empty insert %v accepted", bad)
		}
	}
	for _, tt := range []struct {
		addr uint64
		want int
		ok   bool
	}{{0, 3, true}, {49, 3, true}, {50, 0, false}, {100, 0, true}, {199, 0, true}, {200, 2, true}, {249, 2, true}, {250, 0, false}, {399, 1, true}, {400, 0, false}, {1 << 63, 0, false}} {
		sp, ok := s.find(tt.addr)
		if ok != tt.ok || (ok && sp.val != tt.want) {
			t.Errorf("find(%d) = %v %v, want %v %v", tt.addr, sp.val, ok, tt.want, tt.ok)
		}
	}
	if !s.remove(200) || s.remove(200) || s.remove(201) {
		t.Error("remove")
	}
	if _, ok := s.find(220); ok {
		t.Error("removed range still found")
	}
	if s.len() != 3 {
		t.Errorf("len = %d", s.len())
	}
}

// TestSpansRandom checks find against a brute-force scan.
func TestSpansRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var s spans[uint64]
	type rg struct{ a, b uint64 }
	var all []rg
	for i := 0; i < 2000; i++ {
		a := r.Uint64N(1 << 20)
		b := a + 1 + r.Uint64N(64)
		if s.insert(a, b, a) {
			all = append(all, rg{a, b})
		}
		if i%7 == 0 && len(all) > 0 {
			k := r.IntN(len(all))
			if !s.remove(all[k].a) {
				t.Fatal("remove of a present range failed")
			}
			all = append(all[:k], all[k+1:]...)
		}
	}
	for i := 0; i < 20000; i++ {
		x := r.Uint64N(1<<20 + 100)
		var want uint64
		found := false
		for _, g := range all {
			if g.a <= x && x < g.b {
				want, found = g.a, true
			}
		}
		sp, ok := s.find(x)
		if ok != found || (ok && sp.val != want) {
			t.Fatalf("find(%d) = %v %v, want %v %v", x, sp.val, ok, want, found)
		}
	}
}

func TestPhysAlloc(t *testing.T) {
	const page = 2 << 20
	p := newPhysAlloc(0x20000000, 8*page)
	a, ok1 := p.alloc(3*page, page)
	b, ok2 := p.alloc(page, page)
	c, ok3 := p.alloc(4*page, page)
	if !ok1 || !ok2 || !ok3 || a != 0x20000000 || b != a+3*page || c != b+page {
		t.Fatalf("allocs %#x %#x %#x", a, b, c)
	}
	if _, ok := p.alloc(page, page); ok {
		t.Fatal("allocated beyond the end")
	}
	p.release(b, page)
	if _, ok := p.alloc(2*page, page); ok {
		t.Fatal("a 2-page hole appeared from a 1-page release")
	}
	p.release(a, 3*page)
	p.release(c, 4*page)
	if p.available() != 8*page || len(p.free) != 1 {
		t.Fatalf("after releasing everything: %d free in %d ranges", p.available(), len(p.free))
	}
	// Alignment is honoured.
	p2 := newPhysAlloc(0x1000, 16*page)
	x, ok := p2.alloc(page, page)
	if !ok || x%page != 0 {
		t.Fatalf("aligned alloc = %#x", x)
	}
}

func BenchmarkSpansFind10k(b *testing.B) {
	var s spans[int]
	for i := 0; i < 10000; i++ {
		s.insert(uint64(i)<<21, uint64(i)<<21+1<<20, i)
	}
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		i = (i + 7919) % 10000
		if _, ok := s.find(i<<21 + 12345); !ok {
			b.Fatal("miss")
		}
	}
}

// TestSpansWrap: a range whose end wrapped around 2^64 is refused, and
// addresses at the top of the space are found or not without overflow.
func TestSpansWrap(t *testing.T) {
	var r spans[int]
	const top = math.MaxUint64
	for _, tc := range []struct {
		start, end uint64
		ok         bool
	}{
		{top - 10, 9, false}, // top-10 + 20, wrapped
		{top - 10, top, true},
		{top, top, false},
		{0, 0, false},
		{0, 10, true},
	} {
		if got := r.insert(tc.start, tc.end, 1); got != tc.ok {
			t.Errorf("insert [%#x, %#x) = %v, want %v", tc.start, tc.end, got, tc.ok)
		}
	}
	for _, tc := range []struct {
		addr uint64
		ok   bool
	}{{top - 11, false}, {top - 10, true}, {top - 1, true}, {top, false}, {9, true}, {10, false}} {
		if _, ok := r.find(tc.addr); ok != tc.ok {
			t.Errorf("find %#x = %v, want %v", tc.addr, ok, tc.ok)
		}
	}
}

// TestPhysAllocWrap: sizes and alignments near 2^64 fail instead of
// wrapping into a range that overlaps the free list.
func TestPhysAllocWrap(t *testing.T) {
	const base, size = 0x1000_0000, 1 << 30
	for _, tc := range []struct {
		size, align uint64
	}{
		{math.MaxUint64, 4096},
		{math.MaxUint64 - 4095, 4096},
		{size + 1, 4096},
		{4096, 1 << 63},
	} {
		p := newPhysAlloc(base, size)
		if addr, ok := p.alloc(tc.size, tc.align); ok {
			t.Errorf("alloc(%#x, align %#x) = %#x, want failure", tc.size, tc.align, addr)
		}
		if p.available() != size {
			t.Errorf("alloc(%#x, align %#x) changed the free list: %d bytes free", tc.size, tc.align, p.available())
		}
	}
	// At the top of the address space.
	p := newPhysAlloc(math.MaxUint64-(1<<20)+1, 1<<20)
	if _, ok := p.alloc(2<<20, 4096); ok {
		t.Error("allocated 2 MiB from a 1 MiB range at the top of the address space")
	}
	if addr, ok := p.alloc(1<<20, 4096); !ok || addr != math.MaxUint64-(1<<20)+1 {
		t.Errorf("alloc of the whole top range = %#x, %v", addr, ok)
	}
}
