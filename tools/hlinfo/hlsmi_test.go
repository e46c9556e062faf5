package main

import (
	"context"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/google/go-cmp/cmp"
)

// TestHLSMIFlags checks the flags hl-smi users type: -L, -q, -i, -f
// csv,noheader,nounits and -d, and that their misuse is a usage error
// (exit 2) that names the flag.
func TestHLSMIFlags(t *testing.T) {
	t.Setenv("GAUDI_SIM", "gaudi2:2")
	for _, tc := range []struct {
		args []string
		want string // the whole output, or with a trailing "..." its start
		exit int
	}{
		{[]string{"-device", "sim", "-L"}, "device 0: HL225 (GAUDI2), bus 0000:19:00.0, serial -, uuid -\n" +
			"device 1: HL225 (GAUDI2), bus 0000:1a:00.0, serial -, uuid -\n", 0},
		{[]string{"-i", "sim:1", "-Q", "index,power.draw", "-f", "csv,noheader,nounits"}, "1,95\n", 0},
		{[]string{"-i", "sim:1", "-Q", "index,power.draw", "-f", "csv,nounits"}, "index,power.draw\n1,95\n", 0},
		{[]string{"-i", "sim:1", "-Q", "index,power.draw", "-f", "csv"}, "index,power.draw [W]\n1,95\n", 0},
		{[]string{"-i", "sim:1", "-Q", "index", "-f", "json"}, `-f json: "json" is not a format`, 2},
		{[]string{"-i", "sim:1", "-f", "csv"}, "-f csv goes with -query-device", 2},
		{[]string{"-i", "sim:1", "-d", "POWER"}, "-d POWER chooses sections of -v", 2},
		{[]string{"-i", "sim:1", "-q", "-d", "volts"}, `-d volts: "volts" is not a section`, 2},
		{[]string{"-i", "sim:1", "-L", "-json"}, "-L lists the devices", 2},
	} {
		out, stderr, err := hlinfoCtx(t, context.Background(), "", tc.args...)
		if code := cli.ExitCode(err); code != tc.exit {
			t.Errorf("%q: exit %d (%v), want %d", tc.args, code, err, tc.exit)
		}
		got := out
		if tc.exit != 0 {
			got = err.Error() + stderr
		}
		if tc.exit == 0 {
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%q (-want +got):\n%s", tc.args, diff)
			}
		} else if !strings.Contains(got, tc.want) {
			t.Errorf("%q: %q, want it to say %q", tc.args, got, tc.want)
		}
	}
}

// TestDetailSections checks -q -d: the identity lines and the chosen
// sections' lines, nothing else.
func TestDetailSections(t *testing.T) {
	t.Setenv("GAUDI_SIM", "gaudi2:1")
	out := mustRun(t, "", "-i", "sim:0", "-q", "-d", "power,CLOCK")
	_, details, ok := strings.Cut(out, "device 0: sim:accel0")
	if !ok {
		t.Fatalf("no details:\n%s", out)
	}
	var keys []string
	for _, l := range strings.Split(strings.TrimSpace(details), "\n")[1:] {
		keys = append(keys, strings.Fields(l)[0])
	}
	if diff := cmp.Diff([]string{"asic", "serial", "uuid", "status", "power", "clock", "pll"}, keys); diff != "" {
		t.Errorf("-q -d power,CLOCK lines (-want +got):\n%s\n%s", diff, out)
	}
}
