package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/gaudi-go/gaudi/internal/cli"
	"golang.org/x/sys/unix"
)

// minPlotWidth is the narrowest plot: below it the bars say too little.
const minPlotWidth = 40

// plotLabel is the width of a bar's label: "  bidir   64 MiB |".
const plotLabel = 19

// plotValue is the width of a bar's value after it: " 123.45".
const plotValue = 8

// terminalWidth returns the columns of the terminal w is, or 0 when w is
// not a terminal.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}

// writePlot draws the median bandwidth of each point of results against
// its size, one bar per point, by direction, width columns wide; the
// bars share one scale, the largest bandwidth filling the line.
func writePlot(w io.Writer, results []result, width int) {
	peak := 0.0
	for _, r := range results {
		peak = math.Max(peak, r.BandwidthMedianGBps)
	}
	if len(results) == 0 || peak <= 0 {
		return
	}
	bar := width - plotLabel - plotValue
	fmt.Fprintf(w, "\nGB/s median by size (a full bar is %.2f)\n", peak)
	prev := ""
	for _, r := range results {
		dir := r.Direction
		if dir == prev {
			dir = ""
		}
		prev = r.Direction
		n := int(math.Round(r.BandwidthMedianGBps / peak * float64(bar)))
		size := cli.FormatSize(r.SizeBytes)
		if r.Partial {
			size += "*"
		}
		fmt.Fprintf(w, "  %-5s %9s |%-*s %7.2f\n", dir, size, bar, strings.Repeat("#", n), r.BandwidthMedianGBps)
	}
}
