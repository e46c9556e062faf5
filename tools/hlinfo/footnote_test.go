package main

import (
	"slices"
	"testing"

	"github.com/gaudi-go/gaudi/tools/internal/devstat/devstattest"
	"github.com/gaudi-go/gaudi/tools/internal/golden"
)

// TestGoldenFailedQueries: a query that failed for a device is a footnote
// under the table, never a silent "-". The fixture machine's control nodes
// cannot be opened, so every INFO value of its devices is missing.
func TestGoldenFailedQueries(t *testing.T) {
	golden.Check(t, "fixture.golden", mustRun(t, "", "-root", devstattest.Machine(t)))
}

func TestWrapList(t *testing.T) {
	for _, tc := range []struct {
		items []string
		width int
		want  []string
	}{
		{[]string{"open (ENOENT)"}, 20, []string{"open (ENOENT)"}},
		{[]string{"power (EIO)", "total_energy (EIO)", "utilization (EIO)"}, 31, []string{"power (EIO),", "total_energy (EIO),", "utilization (EIO)"}},
		{[]string{"a", "b", "c"}, 6, []string{"a, b,", "c"}},
		{[]string{"longer_than_width"}, 4, []string{"longer_than_width"}},
	} {
		if got := wrapList(tc.items, tc.width); !slices.Equal(got, tc.want) {
			t.Errorf("wrapList(%q, %d) = %q, want %q", tc.items, tc.width, got, tc.want)
		}
	}
}
