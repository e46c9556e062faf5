package sim

import "testing"

// get_va_block details that the MEMORY tests do not reach.
func TestVARangeQuirks(t *testing.T) {
	p, err := newProfile(Gaudi2, 0)
	if err != nil {
		t.Fatal(err)
	}
	v := &p.vm
	res := v.hintsHost.start
	const k64, g4 = 64 << 10, 4 << 30
	for _, tc := range []struct {
		name  string
		free  []vaSpan
		q     vaRequest
		want  uint64
		after []vaSpan
	}{
		{
			// is_hint_crossing_range takes the size as a u32: a block of
			// 4 GB + 64 KB ending inside the reserved range passes as
			// 64 KB.
			name: "4 GB sizes wrap in the reserved-range test",
			free: []vaSpan{{res - g4, v.host.end}},
			q:    vaRequest{size: g4 + k64, align: 4096, rangeType: vaHost},
			want: res - g4, after: []vaSpan{{res + k64, v.host.end}},
		},
		{
			name: "a block that crosses the reserved range is skipped",
			free: []vaSpan{{res - k64, v.host.end}},
			q:    vaRequest{size: 2 * k64, align: 4096, rangeType: vaHost},
			want: 0, after: []vaSpan{{res - k64, v.host.end}},
		},
		{
			name: "with a hint the reserved range is not avoided",
			free: []vaSpan{{res - k64, v.host.end}},
			q:    vaRequest{size: 2 * k64, align: 4096, hint: res, rangeType: vaHost},
			want: res, after: []vaSpan{{res - k64, res - 1}, {res + 2*k64, v.host.end}},
		},
		{
			name: "best fit: the smallest block that holds the size",
			free: []vaSpan{{0x1000000, 0x1ffffff}, {0x3000000, 0x30fffff}, {0x5000000, 0x51fffff}},
			q:    vaRequest{size: 0x100000, align: 4096, rangeType: vaHostHuge},
			want: 0x3000000, after: []vaSpan{{0x1000000, 0x1ffffff}, {0x5000000, 0x51fffff}},
		},
		{
			name: "alignment moves the start and gives back the head",
			free: []vaSpan{{0x1001000, 0x1ffffff}},
			q:    vaRequest{size: 0x200000, align: 0x200000, rangeType: vaHostHuge},
			want: 0x1200000, after: []vaSpan{{0x1001000, 0x11fffff}, {0x1400000, 0x1ffffff}},
		},
		{
			name: "a hint that ends on the block's last byte is not taken",
			free: []vaSpan{{0x1000000, 0x1ffffff}},
			q:    vaRequest{size: 0x100000, align: 4096, hint: 0x1f00000, rangeType: vaHostHuge},
			want: 0x1000000, after: []vaSpan{{0x1100000, 0x1ffffff}},
		},
		{
			name: "forced hint that cannot be honoured",
			free: []vaSpan{{0x1000000, 0x1ffffff}},
			q:    vaRequest{size: 0x100000, align: 4096, hint: 0x1f00000, rangeType: vaHostHuge, force: true},
			want: 0, after: []vaSpan{{0x1000000, 0x1ffffff}},
		},
	} {
		r := newVARange(v.host, v.hostPage)
		r.free = append([]vaSpan(nil), tc.free...)
		got := r.get(v, tc.q)
		if got != tc.want {
			t.Errorf("%s: %#x, want %#x", tc.name, got, tc.want)
		}
		if len(r.free) != len(tc.after) {
			t.Errorf("%s: free list %x, want %x", tc.name, r.free, tc.after)
			continue
		}
		for i := range r.free {
			if r.free[i] != tc.after[i] {
				t.Errorf("%s: free list %x, want %x", tc.name, r.free, tc.after)
				break
			}
		}
	}
	// add merges with both neighbours and refuses overlaps.
	r := newVARange(vaSpan{0x1000, 0xffff}, 4096)
	r.free = []vaSpan{{0x1000, 0x1fff}, {0x4000, 0x4fff}}
	if !r.add(0x2000, 0x3fff) || len(r.free) != 1 || r.free[0] != (vaSpan{0x1000, 0x4fff}) {
		t.Errorf("merge: %x", r.free)
	}
	if r.add(0x3000, 0x5fff) {
		t.Errorf("overlapping add accepted")
	}
}

func TestIDAllocator(t *testing.T) {
	a := idAllocator{next: 1}
	for want := uint32(1); want <= 5; want++ {
		if got := a.alloc(); got != want {
			t.Fatalf("alloc %d, want %d", got, want)
		}
	}
	a.remove(4)
	a.remove(2)
	a.remove(5)
	for _, want := range []uint32{2, 4, 5, 6} {
		if got := a.alloc(); got != want {
			t.Errorf("alloc %d, want %d", got, want)
		}
	}
}
