package stats

import "testing"

func TestNearestRank(t *testing.T) {
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		name   string
		sorted []int
		p      int
		want   int
	}{
		{"one sample", []int{7}, 50, 7},
		{"median of two is the lower", []int{1, 9}, 50, 1},
		{"P99 of two is the maximum", []int{1, 9}, 99, 9},
		{"P99 of 100", hundred, 99, 99},
		{"P90 of 100", hundred, 90, 90},
		{"P50 of 100", hundred, 50, 50},
		{"P100 is the maximum", hundred, 100, 100},
		{"P1 is the first", hundred, 1, 1},
	} {
		if got := NearestRank(tc.sorted, tc.p); got != tc.want {
			t.Errorf("%s: NearestRank(P%d) = %d, want %d", tc.name, tc.p, got, tc.want)
		}
	}
}

func TestMinSamples(t *testing.T) {
	for _, tc := range []struct{ p, want int }{{50, 1}, {90, 10}, {99, 100}, {100, 1}, {75, 4}, {10, 1}} {
		if got := MinSamples(tc.p); got != tc.want {
			t.Errorf("MinSamples(%d) = %d, want %d", tc.p, got, tc.want)
		}
	}
}
