package pcie

import (
	"errors"
	"math"
	"os"
	"testing"
)

func fixture(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/links.txtar")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := UnpackFixture(root, b); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestReadLink(t *testing.T) {
	root := fixture(t)
	for _, tc := range []struct {
		addr     string
		want     Link
		str      string
		degraded bool
		gbps     float64 // Bandwidth, GB/s
	}{
		{"0000:19:00.0", Link{SpeedGTs: 16, Width: 16, MaxSpeedGTs: 16, MaxWidth: 16}, "Gen4 x16 (16 GT/s)", false, 31.508},
		{"0000:b3:00.0", Link{SpeedGTs: 8, Width: 8, MaxSpeedGTs: 16, MaxWidth: 16}, "Gen3 x8 (8 GT/s), below its maximum Gen4 x16", true, 7.877},
		{"0000:4d:00.0", Link{SpeedGTs: 8, Width: 16}, "Gen3 x16 (8 GT/s)", false, 15.754},
		{"0000:1c:00.0", Link{SpeedGTs: 32, Width: 16}, "Gen5 x16 (32 GT/s)", false, 63.015},
	} {
		got, err := ReadLink(root, tc.addr)
		if err != nil {
			t.Errorf("%s: %v", tc.addr, err)
			continue
		}
		tc.want.Address = tc.addr
		if got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.addr, got, tc.want)
		}
		if got.String() != tc.str || got.Degraded() != tc.degraded {
			t.Errorf("%s: %q degraded %v", tc.addr, got.String(), got.Degraded())
		}
		if bw := got.Bandwidth() / 1e9; math.Abs(bw-tc.gbps) > 0.001 {
			t.Errorf("%s: bandwidth %.4f GB/s, want %.3f", tc.addr, bw, tc.gbps)
		}
	}
	for _, addr := range []string{"0000:1a:00.0", "0000:1b:00.0", "0000:99:00.0"} {
		if l, err := ReadLink(root, addr); !errors.Is(err, ErrNoLink) {
			t.Errorf("%s: %+v, %v; want ErrNoLink", addr, l, err)
		}
	}
	if _, err := ReadLink(root, "0000:1d:00.0"); err == nil || errors.Is(err, ErrNoLink) {
		t.Errorf("malformed speed: %v", err)
	}
}

func TestLaneBandwidth(t *testing.T) {
	for gts, want := range map[float64]float64{2.5: 250e6, 5: 500e6, 8: 8e9 / 8 * 128 / 130, 16: 16e9 / 8 * 128 / 130, 32: 32e9 / 8 * 128 / 130, 64: 64e9 / 8 * 242 / 256, 12: 0} {
		if got := LaneBandwidth(gts); math.Abs(got-want) > 1 {
			t.Errorf("LaneBandwidth(%v) = %v, want %v", gts, got, want)
		}
	}
}
