package device_test

import (
	"errors"
	"testing"

	"github.com/gaudi-go/gaudi/device"
	"github.com/google/go-cmp/cmp"
)

func TestParseSelector(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want device.Selector
		str  string // String of the result; in when empty
	}{
		{"", device.Selector{}, ""},
		{"3", device.Selector{Kind: device.SelectIndex, Index: 3}, ""},
		{"0", device.Selector{Kind: device.SelectIndex}, ""},
		{"007", device.Selector{Kind: device.SelectIndex, Index: 7}, "7"},
		{"0000:19:00.0", device.Selector{Kind: device.SelectPCI, PCIAddress: "0000:19:00.0"}, ""},
		{"19:00.0", device.Selector{Kind: device.SelectPCI, PCIAddress: "0000:19:00.0"}, "0000:19:00.0"},
		{"0000:B3:00.1", device.Selector{Kind: device.SelectPCI, PCIAddress: "0000:b3:00.1"}, "0000:b3:00.1"},
		{"10000:01:00.0", device.Selector{Kind: device.SelectPCI, PCIAddress: "10000:01:00.0"}, ""},
		{"module:2", device.Selector{Kind: device.SelectModule, Module: 2}, ""},
		{"module:0", device.Selector{Kind: device.SelectModule}, ""},
		{"/dev/accel/accel0", device.Selector{Kind: device.SelectPath, Path: "/dev/accel/accel0"}, ""},
		{"/dev/accel/accel_controlD0", device.Selector{Kind: device.SelectPath, Path: "/dev/accel/accel_controlD0"}, ""},
		{"/dev/hl1", device.Selector{Kind: device.SelectPath, Path: "/dev/hl1"}, ""},
		{"/dev//accel/./accel2", device.Selector{Kind: device.SelectPath, Path: "/dev/accel/accel2"}, "/dev/accel/accel2"},
		{"gaudi", device.Selector{Kind: device.SelectASIC, ASIC: device.Gaudi}, ""},
		{"gaudi2", device.Selector{Kind: device.SelectASIC, ASIC: device.Gaudi2}, ""},
		{"GAUDI2", device.Selector{Kind: device.SelectASIC, ASIC: device.Gaudi2}, "gaudi2"},
		{"gaudi2b", device.Selector{Kind: device.SelectASIC, ASIC: device.Gaudi2B}, ""},
		{"gaudi3", device.Selector{Kind: device.SelectASIC, ASIC: device.Gaudi3}, ""},
		{"Gaudi3HL338", device.Selector{Kind: device.SelectASIC, ASIC: device.Gaudi3HL338}, "gaudi3hl338"},
	} {
		got, err := device.ParseSelector(tc.in)
		if err != nil {
			t.Errorf("ParseSelector(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseSelector(%q) (-want +got):\n%s", tc.in, diff)
		}
		str := tc.str
		if str == "" {
			str = tc.in
		}
		if got.String() != str {
			t.Errorf("ParseSelector(%q).String() = %q, want %q", tc.in, got.String(), str)
		}
		// String gives back what parses to the same selector.
		if again, err := device.ParseSelector(got.String()); err != nil || again != got {
			t.Errorf("ParseSelector(%q) = %+v, %v; want %+v", got.String(), again, err, got)
		}
	}
}

func TestParseSelectorBad(t *testing.T) {
	for _, in := range []string{
		"-1", "+1", "abc", "0000:19:00", "0000:19:00.8", "19:0.0", "0000:1g:00.0", "::",
		"module:", "module:x", "module:-1", "module:+1", "module:99999999999999999999",
		"sim", "sim:0", "99999999999999999999", "dev/accel/accel0", " 3", "3 ", "gaudi4", "goya",
	} {
		s, err := device.ParseSelector(in)
		if !errors.Is(err, device.ErrBadSelector) {
			t.Errorf("ParseSelector(%q) = %+v, %v; want ErrBadSelector", in, s, err)
			continue
		}
		var se *device.SelectorError
		if !errors.As(err, &se) || se.Input != in || se.Reason == "" {
			t.Errorf("ParseSelector(%q): %#v, want a *SelectorError naming the input", in, err)
		}
		if d, err := device.Open(in); !errors.Is(err, device.ErrBadSelector) {
			if d != nil {
				d.Close()
			}
			t.Errorf("Open(%q): %v, want ErrBadSelector", in, err)
		}
		if d, err := device.OpenControl(in); !errors.Is(err, device.ErrBadSelector) {
			if d != nil {
				d.Close()
			}
			t.Errorf("OpenControl(%q): %v, want ErrBadSelector", in, err)
		}
	}
}

// TestSelectorMatchesGaudi3 checks that "gaudi3" selects both Gaudi3
// devices the out-of-tree driver binds and "gaudi3hl338" the HL-338 alone.
func TestSelectorMatchesGaudi3(t *testing.T) {
	g3 := device.Node{DeviceID: device.PCIDeviceGaudi3, Revision: 1}
	hl338 := device.Node{DeviceID: device.PCIDeviceGaudi3HL338, Revision: 1}
	g2 := device.Node{DeviceID: device.PCIDeviceGaudi2, Revision: 1}
	for _, tc := range []struct {
		sel              string
		g3, hl338, gaudi bool
	}{
		{"gaudi3", true, true, false},
		{"gaudi3hl338", false, true, false},
		{"gaudi2", false, false, true},
	} {
		s, err := device.ParseSelector(tc.sel)
		if err != nil {
			t.Fatal(err)
		}
		if s.Matches(g3) != tc.g3 || s.Matches(hl338) != tc.hl338 || s.Matches(g2) != tc.gaudi {
			t.Errorf("%s matches Gaudi3 %v, HL-338 %v, Gaudi2 %v", tc.sel, s.Matches(g3), s.Matches(hl338), s.Matches(g2))
		}
	}
}
