package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/tools/internal/devstat"
)

// TestDetailsHumanUnits checks that -v prints numbers for people: watts
// and joules rather than milliwatts and millijoules, "-" for an absent
// limit without a unit after it, a session length as a duration, and an
// event as named fields with its address in hex rather than raw JSON.
func TestDetailsHumanUnits(t *testing.T) {
	mw, mj, addr := uint64(95000), uint64(96330), uint64(0x7f00_1000)
	d := devstat.Device{Index: 0, PowerMW: &mw, EnergyMJ: &mj, Details: &devstat.Details{
		OpenStats: &devstat.OpenStats{Opens: 3, LastSessionNS: 2_051_000_000},
		Events:    []devstat.Event{{Kind: "page_fault", TimeNS: 1_500_000_000, Addr: (*devstat.Hex)(&addr)}},
	}}
	var buf bytes.Buffer
	if err := writeDetails(&buf, d, nil); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"power 95.0 W (limit -), energy 96.3 J",
		"opens 3, last session 2.051s, releasing no",
		"event page_fault at 1.5s, addr 0x7f001000",
	} {
		if !containsFields(out, want) {
			t.Errorf("-v lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{" mW", " mJ", " ns", "{", "2130710528"} {
		if strings.Contains(out, bad) {
			t.Errorf("-v prints %q, a number for machines:\n%s", bad, out)
		}
	}
}

// containsFields reports whether some line of out, with its runs of
// blanks (tabwriter's padding) collapsed, contains want.
func containsFields(out, want string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(strings.Join(strings.Fields(l), " "), want) {
			return true
		}
	}
	return false
}
