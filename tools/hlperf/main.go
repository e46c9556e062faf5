// Command hlperf measures DMA bandwidth and latency on a Gaudi, or on the
// simulator when none is present: host to device, device to host, device to
// device and both directions at once, over a sweep of sizes.
//
// Usage:
//
//	hlperf [-dir h2d,d2h,d2d,bidir] [-min 4K] [-max 64M] [-iters 20]
//	       [-streams 2] [-warmup 2] [-json | -csv]
//
// Each point copies the size once per iteration, waiting for each copy, and
// reports the mean bandwidth (GB/s, 1e9 bytes per second) and the median and
// 99th percentile latency of one copy. On a terminal it shows progress on
// stderr.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	var cfg config
	dirs := flag.String("dir", "h2d,d2h,d2d,bidir", "directions to measure")
	minS := flag.String("min", "4K", "smallest size")
	maxS := flag.String("max", "64M", "largest size")
	flag.IntVar(&cfg.iters, "iters", 20, "timed copies per size")
	flag.IntVar(&cfg.warmup, "warmup", 2, "untimed copies per size")
	flag.IntVar(&cfg.streams, "streams", 2, "queues per direction")
	asJSON := flag.Bool("json", false, "print JSON")
	asCSV := flag.Bool("csv", false, "print CSV")
	flag.Parse()
	var err error
	if cfg.min, err = parseSize(*minS); err == nil {
		cfg.max, err = parseSize(*maxS)
	}
	if err == nil {
		cfg.dirs, err = parseDirs(*dirs)
	}
	if err == nil && (cfg.min == 0 || cfg.max < cfg.min || cfg.iters < 1) {
		err = fmt.Errorf("need 0 < -min <= -max and -iters >= 1")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hlperf:", err)
		os.Exit(2)
	}
	cfg.progress = isTerminal(os.Stderr)
	res, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hlperf:", err)
		os.Exit(1)
	}
	switch {
	case *asJSON:
		err = writeJSON(os.Stdout, res)
	case *asCSV:
		err = writeCSV(os.Stdout, res)
	default:
		err = writeTable(os.Stdout, res)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hlperf:", err)
		os.Exit(1)
	}
}

// parseSize reads sizes such as 4096, 4K, 64M, 1G (binary units).
func parseSize(s string) (uint64, error) {
	mult := uint64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	var n uint64
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}

func parseDirs(s string) ([]string, error) {
	var out []string
	for _, d := range strings.Split(s, ",") {
		switch d {
		case "h2d", "d2h", "d2d", "bidir":
			out = append(out, d)
		default:
			return nil, fmt.Errorf("unknown direction %q (want h2d, d2h, d2d or bidir)", d)
		}
	}
	return out, nil
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
