package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gaudi-go/gaudi/tools/internal/devstat"
)

// What hl-smi users type, where it costs nothing: -L lists the devices,
// -q is -v, -i is -device, -f csv,noheader,nounits shapes -Q's CSV, and
// -d picks sections of -v.

// parseFormat reads -f: comma-separated csv, noheader and nounits.
func (c *config) parseFormat() error {
	for _, w := range strings.Split(c.formatText, ",") {
		switch strings.TrimSpace(w) {
		case "csv":
		case "noheader":
			c.noHeader = true
		case "nounits":
			c.noUnits = true
		default:
			return fmt.Errorf("-f %s: %q is not a format: want csv, noheader and nounits, comma-separated", c.formatText, w)
		}
	}
	return nil
}

// sections maps the keys of -v's lines to hl-smi's -d section names. The
// identity lines (asic, serial, uuid, status, ...) head every section.
var sections = map[string]string{
	"memory": "MEMORY", "sram": "MEMORY", "dram": "MEMORY", "alloc page sizes": "MEMORY", "user mappings": "MEMORY",
	"dram pending rows": "MEMORY",
	"power":             "POWER",
	"clock":             "CLOCK", "pll 0": "CLOCK",
	"temperature": "TEMPERATURE",
	"utilization": "UTILIZATION", "idle": "UTILIZATION", "compute active": "UTILIZATION", "opens": "UTILIZATION",
	"pcie link": "PCIE", "pcie traffic": "PCIE",
	"resets": "ERRORS", "dropped cs": "ERRORS", "hw events": "ERRORS", "event": "ERRORS", "error": "ERRORS",
}

// identity are the -v lines every section keeps.
var identity = []string{"asic", "serial", "uuid", "status"}

// sectionNames lists -d's names for the help.
func sectionNames() string {
	var names []string
	for _, n := range sections {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// parseSections reads -d.
func parseSections(text string) (map[string]bool, error) {
	known := strings.Split(sectionNames(), ", ")
	out := map[string]bool{}
	for _, w := range strings.Split(text, ",") {
		n := strings.ToUpper(strings.TrimSpace(w))
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("-d %s: %q is not a section: want %s", text, w, sectionNames())
		}
		out[n] = true
	}
	return out, nil
}

// keep reports whether -v's line with key k belongs to the chosen
// sections (every line when none were chosen).
func keep(chosen map[string]bool, k string) bool {
	if chosen == nil || slices.Contains(identity, k) {
		return true
	}
	first, _, _ := strings.Cut(k, " ")
	sec, ok := sections[k]
	if !ok {
		sec, ok = sections[first] // "event page_fault", "error power"
	}
	return ok && chosen[sec]
}

// writeList prints one line per device, as hl-smi -L does: its index,
// card name and chip, PCI address, serial and UUID ("-" when absent).
func writeList(w io.Writer, s *devstat.Snapshot) error {
	for _, d := range s.Devices {
		if _, err := fmt.Fprintf(w, "device %d: %s (%s), bus %s, serial %s, uuid %s\n", d.Index, strOr(d.CardName), dash(d.ASIC),
			dash(d.PCIAddress), strOr(d.Serial), strOr(d.UUID)); err != nil {
			return err
		}
	}
	return nil
}
