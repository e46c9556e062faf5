package devstat

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gaudi-go/gaudi/gohlml"
	"github.com/gaudi-go/gaudi/tools/internal/devstat/devstattest"
)

// hlmlValues are the values devstat (hlinfo, hlexporter) and gohlml both
// report, as gohlml types them.
type hlmlValues struct {
	BusID                       string
	Name                        string
	ModuleID                    uint
	PowerMW                     uint
	ClockMHz, ClockMaxMHz       uint
	MemTotal, MemUsed, MemFree  uint64
	ThrottleReasons             uint64
	PCIeRX, PCIeTX, PCIeReplays uint
}

func must[T any](t *testing.T, what string) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("gohlml %s: %v", what, err)
		}
		return v
	}
}

// TestAgreesWithGohlml: on served nodes (hlsim serve, GAUDI_ROOT), what
// devstat reads for hlinfo and hlexporter is, value for value, what gohlml
// reads, and the energy counter devstat reads lies between two gohlml
// reads around it.
func TestAgreesWithGohlml(t *testing.T) {
	_, n := devstattest.ServeGohlml(t, "gaudi2:2")
	var want []hlmlValues
	for i := range n {
		d := must[gohlml.Device](t, "handle")(gohlml.DeviceHandleByIndex(i))
		total, used, free, err := d.MemoryInfo()
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, hlmlValues{
			BusID: must[string](t, "bus id")(d.PCIBusID()), Name: must[string](t, "name")(d.Name()),
			ModuleID: must[uint](t, "module id")(d.ModuleID()), PowerMW: must[uint](t, "power")(d.PowerUsage()),
			ClockMHz: must[uint](t, "clock")(d.SOCClockInfo()), ClockMaxMHz: must[uint](t, "clock max")(d.SOCClockMax()),
			MemTotal: total, MemUsed: used, MemFree: free,
			ThrottleReasons: must[uint64](t, "throttle")(d.ClockThrottleReasons()),
			PCIeRX:          must[uint](t, "rx")(d.PCIeRX()), PCIeTX: must[uint](t, "tx")(d.PCIeTX()),
			PCIeReplays: must[uint](t, "replays")(d.PCIReplayCounter()),
		})
	}
	energyBefore := devstattest.GohlmlEnergy(t, n)
	s, err := Collect(Options{})
	if err != nil {
		t.Fatal(err)
	}
	energyAfter := devstattest.GohlmlEnergy(t, n)
	var got []hlmlValues
	for i, d := range s.Devices {
		var reasons uint64
		for _, r := range d.ClockThrottleReasons {
			reasons |= map[string]uint64{"power": 1, "thermal": 2}[r]
		}
		name := ""
		if d.CardName != nil {
			name = *d.CardName
		}
		got = append(got, hlmlValues{
			BusID: d.PCIAddress, Name: name, ModuleID: uint(deref(d.ModuleID)), PowerMW: uint(deref(d.PowerMW)),
			ClockMHz: uint(deref(d.ClockMHz)), ClockMaxMHz: uint(deref(d.ClockMaxMHz)),
			MemTotal: deref(d.MemoryTotalBytes), MemUsed: deref(d.MemoryUsedBytes), MemFree: deref(d.MemoryFreeBytes),
			ThrottleReasons: reasons, PCIeRX: uint(deref(d.PCIe.RXKBps)), PCIeTX: uint(deref(d.PCIe.TXKBps)),
			PCIeReplays: uint(deref(d.PCIe.Replays)),
		})
		if len(d.Errors) != 0 {
			t.Errorf("device %d: errors %+v", d.Index, d.Errors)
		}
		if e := d.EnergyMJ; i < len(energyBefore) && (e == nil || *e < energyBefore[i] || *e > energyAfter[i]) {
			t.Errorf("device %d: energy %d mJ (absent: %t), gohlml read %d then %d", d.Index, deref(e), e == nil, energyBefore[i], energyAfter[i])
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("devstat vs gohlml (-gohlml +devstat):\n%s", diff)
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
