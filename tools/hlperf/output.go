package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

func writeJSON(w io.Writer, res []result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

func writeCSV(w io.Writer, res []result) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"device", "direction", "size", "iterations", "gb_per_s", "p50_us", "p99_us"})
	for _, r := range res {
		cw.Write([]string{r.Device, r.Direction, strconv.FormatUint(r.Size, 10), strconv.Itoa(r.Iters),
			strconv.FormatFloat(r.GBps, 'f', 3, 64), strconv.FormatFloat(r.P50us, 'f', 2, 64), strconv.FormatFloat(r.P99us, 'f', 2, 64)})
	}
	cw.Flush()
	return cw.Error()
}

func writeTable(w io.Writer, res []result) error {
	if len(res) > 0 {
		fmt.Fprintf(w, "%s\n", res[0].Device)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "DIR\tSIZE\tITERS\tGB/s\tP50 us\tP99 us\t")
	for _, r := range res {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t%.1f\t%.1f\t\n", r.Direction, human(r.Size), r.Iters, r.GBps, r.P50us, r.P99us)
	}
	return tw.Flush()
}

func human(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dG", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return strconv.FormatUint(n, 10)
}
