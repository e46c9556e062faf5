package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/gohlml"
	"github.com/gaudi-go/gaudi/tools/internal/devstat"
	"github.com/gaudi-go/gaudi/tools/internal/devstat/devstattest"
)

// hlmlView is what hlinfo -json and gohlml both report of a device, as
// text: a value, or "unsupported" where gohlml answers ErrNotSupported
// and hlinfo shows null.
type hlmlView map[string]string

// gohlmlView reads device i through gohlml.
func gohlmlView(t *testing.T, i uint) hlmlView {
	t.Helper()
	d, err := gohlml.DeviceHandleByIndex(i)
	if err != nil {
		t.Fatal(err)
	}
	v := hlmlView{}
	set := func(name string, val any, err error) {
		switch {
		case err == gohlml.ErrNotSupported:
			v[name] = "unsupported"
		case err != nil:
			t.Fatalf("gohlml device %d %s: %v", i, name, err)
		default:
			v[name] = fmt.Sprint(val)
		}
	}
	s, err := d.PCIBusID()
	set("bus", s, err)
	s, err = d.Name()
	set("name", s, err)
	s, err = d.SerialNumber()
	set("serial", s, err)
	s, err = d.UUID()
	set("uuid", s, err)
	u, err := d.ModuleID()
	set("module", u, err)
	numa, err := d.NumaNode()
	if numa == nil && err == nil {
		err = gohlml.ErrNotSupported // gohlml's nil, nil: no NUMA node
	}
	set("numa", deref(numa), err)
	u, err = d.PCILinkWidth()
	set("link_width", u, err)
	total, used, free, err := d.MemoryInfo()
	set("mem_total", total, err)
	set("mem_used", used, err)
	set("mem_free", free, err)
	u, err = d.PowerUsage()
	set("power_mw", u, err)
	u, err = d.SOCClockInfo()
	set("clock", u, err)
	u, err = d.SOCClockMax()
	set("clock_max", u, err)
	r, err := d.ClockThrottleReasons()
	set("throttle", r, err)
	u, err = d.PCIeRX()
	set("pcie_rx", u, err)
	u, err = d.PCIeTX()
	set("pcie_tx", u, err)
	u, err = d.PCIReplayCounter()
	set("pcie_replays", u, err)
	return v
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// jsonView is the same values as hlinfo -json shows them.
func jsonView(x devstat.Device) hlmlView {
	v := hlmlView{}
	opt := func(name string, p any) {
		s := fmt.Sprint(p)
		switch p := p.(type) {
		case *string:
			if p != nil {
				s = *p
			}
		case *int:
			if p != nil {
				s = fmt.Sprint(*p)
			}
		case *uint64:
			if p != nil {
				s = fmt.Sprint(*p)
			}
		case *uint32:
			if p != nil {
				s = fmt.Sprint(*p)
			}
		}
		if s == "<nil>" {
			s = "unsupported"
		}
		v[name] = s
	}
	v["bus"] = x.PCIAddress
	opt("name", x.CardName)
	opt("serial", x.Serial)
	opt("uuid", x.UUID)
	opt("module", x.ModuleID)
	opt("numa", x.NUMANode)
	opt("link_width", x.PCIe.LinkWidth)
	opt("mem_total", x.MemoryTotalBytes)
	opt("mem_used", x.MemoryUsedBytes)
	opt("mem_free", x.MemoryFreeBytes)
	opt("power_mw", x.PowerMW)
	opt("clock", x.ClockMHz)
	opt("clock_max", x.ClockMaxMHz)
	var reasons uint64
	for _, r := range x.ClockThrottleReasons {
		// HLML_CLOCKS_THROTTLE_REASON_POWER and _THERMAL (hlml.h).
		reasons |= map[string]uint64{"power": 1, "thermal": 2}[r]
	}
	v["throttle"] = fmt.Sprint(reasons)
	opt("pcie_rx", x.PCIe.RXKBps)
	opt("pcie_tx", x.PCIe.TXKBps)
	opt("pcie_replays", x.PCIe.Replays)
	return v
}

// TestJSONAgreesWithGohlml: on served Gaudi2s (the kernel's driver) and a Gaudi3
// (the out-of-tree driver),
// hlinfo -json shows, value for value, what a program using the gohlml
// API reads; the energy counter hlinfo shows lies between two gohlml
// reads around the run.
func TestJSONAgreesWithGohlml(t *testing.T) {
	for _, spec := range []string{"gaudi2:2", "gaudi3:1:oot"} {
		t.Run(spec, func(t *testing.T) {
			srv, n := devstattest.ServeGohlml(t, spec)
			// The served nodes, and nothing else, are opened.
			saved := openControl
			openControl = func(path string) (*device.Device, error) {
				if !strings.HasPrefix(path, srv.Dir+"/") {
					return nil, fmt.Errorf("hlinfo opened %s outside the served tree", path)
				}
				return device.OpenControl(path)
			}
			t.Cleanup(func() { openControl = saved })
			var want []hlmlView
			for i := range n {
				want = append(want, gohlmlView(t, i))
			}
			before := devstattest.GohlmlEnergy(t, n)
			out := mustRun(t, "", "-json")
			after := devstattest.GohlmlEnergy(t, n)
			var s devstat.Snapshot
			if err := json.Unmarshal([]byte(out), &s); err != nil {
				t.Fatalf("hlinfo -json: %v\n%s", err, out)
			}
			var got []hlmlView
			for i, x := range s.Devices {
				got = append(got, jsonView(x))
				if len(x.Errors) != 0 {
					t.Errorf("device %d: errors %+v", x.Index, x.Errors)
				}
				if e := x.EnergyMJ; i < len(before) && (e == nil || *e < before[i] || *e > after[i]) {
					t.Errorf("device %d: energy %v mJ, gohlml read %d then %d", x.Index, deref(e), before[i], after[i])
				}
			}
			t.Logf("device 0: %v", want[0])
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("gohlml vs hlinfo -json (-gohlml +hlinfo):\n%s", d)
			}
		})
	}
}
