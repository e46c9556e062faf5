package main

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestComputeBW checks perftest's bandwidth figures on recorded times:
// ten 1 MiB writes posted at 0, completions polled at the fifth (2 ms)
// and the tenth (10 ms) with one completion per five writes.
func TestComputeBW(t *testing.T) {
	posted := make([]time.Duration, 10)
	completed := make([]time.Duration, 10)
	completed[4], completed[9] = 2*time.Millisecond, 10*time.Millisecond
	for _, c := range []struct {
		name  string
		gbits bool
		want  bwReport
	}{
		// Average: 10 MiB in 10 ms = 1000 MiB/s; peak: five writes in
		// 2 ms, 0.4 ms each = 2500 MiB/s; 10 messages in 10 ms.
		{"MB/sec", false, bwReport{Size: 1 << 20, Iters: 10, Peak: 2500, Average: 1000, MsgRate: 0.001}},
		// 1000 MiB/s = 1000*2^20*8/1e9 Gb/s.
		{"Gb/sec", true, bwReport{Size: 1 << 20, Iters: 10, Peak: 2500 * (1 << 20) * 8 / 1e9, Average: 1000 * (1 << 20) * 8 / 1e9, MsgRate: 0.001}},
	} {
		got := computeBW(1<<20, posted, completed, 5, c.gbits)
		if d := cmp.Diff(c.want, got, cmpopts.EquateApprox(1e-9, 0)); d != "" {
			t.Errorf("%s: -want +got\n%s", c.name, d)
		}
	}
	// A last write that is not a multiple of -Q is signalled too, and
	// counts in the peak (perftest: "CQE was explicitly signaled on last
	// iteration"): 7 writes, -Q 5, the seventh done at 1.4 ms.
	posted, completed = make([]time.Duration, 7), make([]time.Duration, 7)
	completed[4], completed[6] = 5*time.Millisecond, 1400*time.Microsecond
	if got := computeBW(1<<20, posted, completed, 5, false); math.Abs(got.Peak-5000) > 1e-6 {
		t.Errorf("peak %v MB/s, want 5000 (seven writes in 1.4 ms)", got.Peak)
	}
}

// TestComputeLat checks ib_write_lat's figures: eleven round trips,
// halved, sorted, the two slowest dropped.
func TestComputeLat(t *testing.T) {
	rtts := []float64{2, 200, 2, 4, 2, 4, 6, 4, 100, 4, 2} // microseconds
	posted := []time.Duration{0}
	for _, r := range rtts {
		posted = append(posted, posted[len(posted)-1]+time.Duration(r*float64(time.Microsecond)))
	}
	got, err := computeLat(8, posted)
	if err != nil {
		t.Fatal(err)
	}
	// Halves sorted: 1 1 1 1 2 2 2 2 3 | 50 100; measure_cnt 9.
	want := latReport{Size: 8, Iters: 12, Min: 1, Max: 50, Typical: 2, Avg: 15.0 / 9, P99: 50, P999: 50,
		Stdev: math.Sqrt((4*math.Pow(1-15.0/9, 2) + 4*math.Pow(2-15.0/9, 2) + math.Pow(3-15.0/9, 2)) / 9)}
	if d := cmp.Diff(want, got, cmpopts.EquateApprox(1e-9, 0)); d != "" {
		t.Errorf("-want +got\n%s", d)
	}
	if _, err := computeLat(8, posted[:4]); err == nil {
		t.Error("4 iterations: no error")
	}
}

// TestRDMAReportLayout compares the lines with perftest's formats, so
// that they line up under ib_write_bw's and ib_write_lat's.
func TestRDMAReportLayout(t *testing.T) {
	var b bytes.Buffer
	writeBWHeader(&b, false)
	writeBW(&b, bwReport{Size: 65536, Iters: 5000, Peak: 1234.5, Average: 1200.25, MsgRate: 0.0192})
	writeLatHeader(&b)
	writeLat(&b, latReport{Size: 8, Iters: 1000, Min: 1, Max: 50, Typical: 2, Avg: 2.5, Stdev: 0.5, P99: 9, P999: 40})
	want := rdmaResultLine + "\n" +
		" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n" +
		" 65536      5000             1234.50            1200.25\t\t   0.019200\n" +
		rdmaResultLine + "\n" +
		" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n" +
		" 8       1000          1.00           50.00        2.00     \t       2.50        \t0.50   \t\t9.00    \t\t40.00  \n"
	if d := cmp.Diff(want, b.String()); d != "" {
		t.Errorf("-want +got\n%s", d)
	}
}

// TestHello round-trips the private-data hello and refuses what is not one.
func TestHello(t *testing.T) {
	h := hello{lat: true, size: 8, iters: 1000, rkey: 0x1234, addr: 0x7f0000001000}
	b := h.encode()
	if len(b) > 56 {
		t.Fatalf("hello of %d bytes: CONNECT carries at most 56", len(b))
	}
	// The receiver sees the CM's padded length (56 or 196 bytes).
	got, err := decodeHello(append(b, make([]byte, 16)...))
	if err != nil || got != h {
		t.Fatalf("decode: %+v, %v, want %+v", got, err, h)
	}
	for name, bad := range map[string][]byte{
		"short":   b[:20],
		"magic":   append([]byte("xlpf"), b[4:]...),
		"version": append(append([]byte(nil), b[:4]...), append([]byte{9}, b[5:]...)...),
		"test":    append(append([]byte(nil), b[:5]...), append([]byte{7}, b[6:]...)...),
	} {
		if _, err := decodeHello(bad); !errors.Is(err, errBadHello) {
			t.Errorf("%s: %v, want errBadHello", name, err)
		}
	}
}

// TestRDMAUsage: bad command lines of the -rdma mode exit 2 with the
// reason, before touching any device.
func TestRDMAUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-rdma", "-n", "3"}, "-n 3"},
		{[]string{"-rdma", "-t", "0"}, "-t 0"},
		{[]string{"-rdma", "-Q", "2000"}, "-Q 2000"},
		{[]string{"-rdma", "-s", "4G"}, "-s 4294967296"},
		{[]string{"-rdma", "-p", "70000"}, "-p 70000"},
		{[]string{"-rdma", "host.example"}, `SERVER "host.example"`},
		{[]string{"-rdma", "10.0.0.1", "10.0.0.2"}, "one SERVER"},
		{[]string{"-rdma", "-bind", "x"}, `-bind "x"`},
	} {
		var out, errb bytes.Buffer
		if code := hlperf(context.Background(), c.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errb.String(), c.want)
		}
	}
}
