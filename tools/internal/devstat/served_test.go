package devstat

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/hlsimtest"
)

// servedSummary is what the served-node tests compare: which devices were
// found, whether their INFO values were read, and what failed.
type servedSummary struct {
	Node, Control string
	Simulated     bool
	HasPower      bool
	Errors        []string
}

func summarize(s *Snapshot) []servedSummary {
	var out []servedSummary
	for _, d := range s.Devices {
		var errs []string
		for _, e := range d.Errors {
			errs = append(errs, e.Query+": "+e.Message)
		}
		out = append(out, servedSummary{Node: d.Node, Control: d.ControlNode, Simulated: d.Simulated, HasPower: d.PowerMW != nil, Errors: errs})
	}
	return out
}

// TestServedNodes finds the devices "hlsim serve -dir DIR" serves in both
// ways a tool is pointed at them, GAUDI_ROOT=DIR and -root DIR (Options.Root),
// and reads their INFO values through the served control nodes. Before,
// GAUDI_ROOT was ignored (sysfs root "/": the in-process simulator's 2
// devices were reported), and with Root the control node was opened at
// /dev/accel/accel_controlD0, outside DIR (ENOENT, every INFO value absent).
func TestServedNodes(t *testing.T) {
	srv := hlsimtest.Serve(t, "gaudi2:3")
	want := []servedSummary{
		{Node: srv.Node(0, false), Control: srv.Node(0, true), Simulated: true, HasPower: true},
		{Node: srv.Node(1, false), Control: srv.Node(1, true), Simulated: true, HasPower: true},
		{Node: srv.Node(2, false), Control: srv.Node(2, true), Simulated: true, HasPower: true},
	}
	for _, tc := range []struct {
		name string
		env  string
		root string
	}{
		{name: "GAUDI_ROOT", env: srv.Dir},
		{name: "root", root: srv.Dir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(device.RootEnv, tc.env)
			s, err := Collect(Options{Root: tc.root})
			if err != nil {
				t.Fatal(err)
			}
			// One rule with hlperf and cli.Selection.Why: what
			// device.Device.Simulated says, served nodes included.
			if s.Source != "simulator" || s.DriverVersion != nil {
				t.Errorf("source %q, driver version %v; want simulator, none (as hlperf's \"sim\")", s.Source, s.DriverVersion)
			}
			if diff := cmp.Diff(want, summarize(s)); diff != "" {
				t.Errorf("served devices (-want +got):\n%s", diff)
			}
		})
	}
}
