package main

import (
	"os"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/internal/pcie"
)

// useLinkFixture points the verdict at testdata/sysfs-links.txtar.
func useLinkFixture(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("testdata/sysfs-links.txtar")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := pcie.UnpackFixture(root, b); err != nil {
		t.Fatal(err)
	}
	old := sysfsRoot
	sysfsRoot = root
	t.Cleanup(func() { sysfsRoot = old })
}

func pt(dir string, size uint64, gbps float64) result {
	return result{Direction: dir, SizeBytes: size, BandwidthMedianGBps: gbps}
}

// TestVerdict judges results against fixture links. Gen4 x16 carries
// 31.51 GB/s per direction after 128b/130b encoding; 70% of it is 22.06.
func TestVerdict(t *testing.T) {
	useLinkFixture(t)
	const M = 1 << 20
	good := []result{pt("h2d", 4*M, 3), pt("h2d", 64*M, 24.5), pt("d2h", 64*M, 23.1), pt("d2d", 64*M, 1)}
	for _, tc := range []struct {
		name      string
		addr      string
		simulated bool
		results   []result
		fraction  float64
		result    string
		reason    string
		checks    int
	}{
		{"pass", "0000:19:00.0", false, good, 0.7, "pass",
			"pass: h2d 24.50 GB/s at 64 MiB, d2h 23.10 GB/s at 64 MiB; 70% of Gen4 x16 (16 GT/s), 31.51 GB/s per direction, is 22.06 GB/s", 2},
		{"d2h slow", "0000:19:00.0", false, []result{pt("h2d", 64*M, 24.5), pt("d2h", 64*M, 12)}, 0.7, "fail",
			"fail: h2d 24.50 GB/s at 64 MiB, d2h 12.00 GB/s at 64 MiB; 70% of Gen4 x16", 2},
		{"stricter fraction", "0000:19:00.0", false, good, 0.8, "fail", "is 25.21 GB/s", 2},
		{"h2d only", "0000:19:00.0", false, []result{pt("h2d", 16*M, 23)}, 0.7, "pass", "pass: h2d 23.00 GB/s at 16 MiB;", 1},
		{"degraded link", "0000:b3:00.0", false, good, 0.3, "fail",
			"fail: the link trained at Gen4 x8 (16 GT/s), below its maximum Gen4 x16;", 2},
		{"unknown link", "0000:4d:00.0", false, good, 0.7, "none", "no verdict: PCIe link unknown: ", 0},
		{"no such function", "0000:01:00.0", false, good, 0.7, "none", "no verdict: PCIe link unknown: ", 0},
		{"simulated", "0000:19:00.0", true, good, 0.7, "none", "no verdict: simulated device", 0},
		{"too small", "0000:19:00.0", false, []result{pt("h2d", 4*M, 30)}, 0.7, "none",
			"no verdict: the largest h2d size, 4 MiB, is below 16 MiB", 0},
		{"no host link direction", "0000:19:00.0", false, []result{pt("d2d", 64*M, 100), pt("bidir", 64*M, 40)}, 0.7, "none",
			"no verdict: neither h2d nor d2h was measured in full", 0},
		{"partial point ignored", "0000:19:00.0", false, []result{pt("h2d", 16*M, 23), {Direction: "h2d", SizeBytes: 64 * M, BandwidthMedianGBps: 1, Partial: true}}, 0.7, "pass",
			"h2d 23.00 GB/s at 16 MiB", 1},
	} {
		dr := deviceReport{PCIAddress: tc.addr, Simulated: tc.simulated}
		judgeDevice(&dr, tc.results, tc.fraction)
		v := dr.Verdict
		if v.Result != tc.result || !strings.Contains(v.Reason, tc.reason) || len(v.Checks) != tc.checks {
			t.Errorf("%s: %+v; want %s with %q and %d checks", tc.name, v, tc.result, tc.reason, tc.checks)
		}
		if (dr.PCIeLink != nil) != (tc.addr == "0000:19:00.0" && !tc.simulated || tc.addr == "0000:b3:00.0") {
			t.Errorf("%s: link %+v", tc.name, dr.PCIeLink)
		}
	}
	dr := deviceReport{PCIAddress: "0000:b3:00.0"}
	judgeDevice(&dr, good, 0.7)
	if l := dr.PCIeLink; l == nil || l.Generation != 4 || l.Width != 8 || l.MaxWidth != 16 || !l.BelowMaximum || l.BandwidthGBps < 15.75 || l.BandwidthGBps > 15.76 {
		t.Errorf("degraded link report %+v", l)
	}
}
