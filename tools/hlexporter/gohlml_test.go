package main

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gaudi-go/gaudi/gohlml"
	"github.com/gaudi-go/gaudi/tools/internal/devstat"
	"github.com/gaudi-go/gaudi/tools/internal/devstat/devstattest"
)

// sampleRe is one sample of the text exposition format with labels.
var sampleRe = regexp.MustCompile(`^(habanalabs_\w+)\{([^}]*)\} (\S+)$`)

// labelRe is one label of a sample.
var labelRe = regexp.MustCompile(`(\w+)="([^"]*)"`)

// exported returns the samples of a scrape by device id, then metric
// name (with the device's Serial and UUID labels as "Serial" and "UUID").
func exported(t *testing.T, body string) map[string]map[string]string {
	t.Helper()
	devs := map[string]map[string]string{}
	for _, line := range regexp.MustCompile("\n").Split(body, -1) {
		m := sampleRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range labelRe.FindAllStringSubmatch(m[2], -1) {
			labels[l[1]] = l[2]
		}
		id, ok := labels["id"]
		if !ok {
			continue
		}
		if devs[id] == nil {
			devs[id] = map[string]string{"Serial": labels["Serial"], "UUID": labels["UUID"]}
		}
		// Samples are float64s; so are the gohlml values they are compared with.
		f, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		devs[id][m[1]] = strconv.FormatFloat(f, 'g', -1, 64)
	}
	return devs
}

// TestMetricsAgreeWithGohlml: on served Gaudi2s (the kernel's driver) and a Gaudi3
// (the out-of-tree driver),
// the exporter's metrics are, value for value, what a program using the
// gohlml API reads (the metric exporter's pass over gohlml); the energy
// counter lies between two gohlml reads around the scrape.
func TestMetricsAgreeWithGohlml(t *testing.T) {
	for _, spec := range []string{"gaudi2:2", "gaudi3:1:oot"} {
		t.Run(spec, func(t *testing.T) {
			_, n := devstattest.ServeGohlml(t, spec)
			handle := func(i uint) gohlml.Device {
				d, err := gohlml.DeviceHandleByIndex(i)
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			want := map[string]map[string]string{}
			for i := range n {
				d := handle(i)
				v := map[string]string{}
				num := func(name string, val any, err error) {
					if err != nil {
						t.Fatalf("gohlml device %d %s: %v", i, name, err)
					}
					f, err := strconv.ParseFloat(fmt.Sprint(val), 64)
					if err != nil {
						t.Fatal(err)
					}
					v[name] = strconv.FormatFloat(f, 'g', -1, 64)
				}
				serial, err := d.SerialNumber()
				if err != nil {
					t.Fatal(err)
				}
				uuid, err := d.UUID()
				if err != nil {
					t.Fatal(err)
				}
				v["Serial"], v["UUID"] = serial, uuid
				total, used, free, err := d.MemoryInfo()
				num("habanalabs_memory_total_bytes", total, err)
				num("habanalabs_memory_used_bytes", used, err)
				num("habanalabs_memory_free_bytes", free, err)
				u, err := d.PowerUsage()
				num("habanalabs_power_mW", u, err)
				u, err = d.SOCClockInfo()
				num("habanalabs_clock_soc_mhz", u, err)
				u, err = d.SOCClockMax()
				num("habanalabs_clock_soc_max_mhz", u, err)
				u, err = d.PCIeRX()
				num("habanalabs_pcie_rx", u, err)
				num("habanalabs_pcie_receive_throughput", u, err)
				u, err = d.PCIeTX()
				num("habanalabs_pcie_tx", u, err)
				num("habanalabs_pcie_transmit_throughput", u, err)
				u, err = d.PCIReplayCounter()
				num("habanalabs_pcie_replay_count", u, err)
				p, err := d.IsReplacedRowsPendingStatus()
				num("habanalabs_pending_rows_state", p, err)
				minor, err := d.MinorNumber()
				if err != nil {
					t.Fatal(err)
				}
				want[strconv.Itoa(int(minor))] = v
			}
			before := devstattest.GohlmlEnergy(t, n)
			body := scrape(t, startExporter(t, &config{opts: devstat.Options{}, habanaNames: true}))
			all := exported(t, body)
			got := map[string]map[string]string{}
			for id, w := range want {
				got[id] = map[string]string{}
				for name := range w {
					got[id][name] = all[id][name]
				}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("gohlml vs /metrics (-gohlml +exporter):\n%s", d)
			}
			after := devstattest.GohlmlEnergy(t, n)
			for i := range n {
				minor, _ := handle(i).MinorNumber()
				e, err := strconv.ParseFloat(all[strconv.Itoa(int(minor))]["habanalabs_energy"], 64)
				if err != nil || e < float64(before[i]) || e > float64(after[i]) {
					t.Errorf("device %d: habanalabs_energy %g (%v), gohlml read %d then %d", minor, e, err, before[i], after[i])
				}
			}
		})
	}
}
