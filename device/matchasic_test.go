package device

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMatchASIC(t *testing.T) {
	nodes := []Node{
		{Index: 0, DeviceID: PCIDeviceGaudi2, Revision: 1},
		{Index: 1, DeviceID: PCIDeviceGaudi, Revision: 1},
		{Index: 2, DeviceID: PCIDeviceGaudi2, Revision: 2},
		{Index: 3, DeviceID: PCIDeviceGaudi2, Revision: 1},
		{Index: 4, DeviceID: PCIDeviceGaudi3, Revision: 1},
		{Index: 5, DeviceID: PCIDeviceGaudi3HL338, Revision: 1},
		{Index: 6, DeviceID: PCIDeviceGaudi3Die1, Revision: 1},
	}
	indexes := func(ns []Node) []int {
		var out []int
		for _, n := range ns {
			out = append(out, n.Index)
		}
		return out
	}
	for _, tc := range []struct {
		a    ASIC
		want []int
	}{
		{AnyASIC, []int{0, 1, 2, 3, 4, 5, 6}},
		{Gaudi2, []int{0, 3}},
		{Gaudi2B, []int{2}},
		{Gaudi, []int{1}},
		{Gaudi3, []int{4}},
		{Gaudi3HL338, []int{5}},
	} {
		if diff := cmp.Diff(tc.want, indexes(matchASIC(nodes, tc.a))); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tc.a, diff)
		}
	}
}
