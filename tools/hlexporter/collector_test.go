package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/internal/leakcheck"
	"github.com/gaudi-go/gaudi/simdevice"
	"github.com/gaudi-go/gaudi/tools/internal/devstat"
	"github.com/gaudi-go/gaudi/tools/internal/devstat/devstattest"
)

// The simulated system is built once per process: two Gaudi2.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hlexporter-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("GAUDI_SIM", "gaudi2:2")
	os.Setenv("GAUDI_SIM_LOCKDIR", dir)
	os.Unsetenv("GAUDI_DEVICE")
	// The simulated server is the process's; it is closed before the
	// leak check (internal/leakcheck).
	code := leakcheck.Run(m, leakcheck.AfterRun(func() {
		if s, err := simdevice.System(); err == nil {
			s.Close()
		}
	}))
	os.RemoveAll(dir)
	os.Exit(code)
}

// mustSelect parses sel as -device does.
func mustSelect(t *testing.T, sel string) cli.Selection {
	t.Helper()
	s, err := cli.ParseSelection("-device", sel)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// simLabels are the labels of simulated device id at PCI address dev, in
// the order the text format sorts them.
func simLabels(dev, id string) string {
	return `Serial="",UUID="",device="` + dev + `",driver="",fit="",id="` + id + `",pod_name="",pod_namespace="",spi=""`
}

func TestMetricsOnSimulator(t *testing.T) {
	c := newCollector(devstat.Options{Selection: mustSelect(t, "sim")}, true)
	want := `
# HELP habanalabs_power_mW Power usage in milliwatts (INFO POWER)
# TYPE habanalabs_power_mW gauge
habanalabs_power_mW{` + simLabels("0000:19:00.0", "0") + `} 95000
habanalabs_power_mW{` + simLabels("0000:1a:00.0", "1") + `} 95000
# HELP habanalabs_clock_soc_mhz Current frequency of the SOC in MHz (INFO CLK_RATE)
# TYPE habanalabs_clock_soc_mhz gauge
habanalabs_clock_soc_mhz{` + simLabels("0000:19:00.0", "0") + `} 1650
habanalabs_clock_soc_mhz{` + simLabels("0000:1a:00.0", "1") + `} 1650
# HELP habanalabs_memory_used_bytes Device memory allocated, in bytes
# TYPE habanalabs_memory_used_bytes gauge
habanalabs_memory_used_bytes{` + simLabels("0000:19:00.0", "0") + `} 0
habanalabs_memory_used_bytes{` + simLabels("0000:1a:00.0", "1") + `} 0
# HELP habanalabs_utilization Utilization of the device in percent (INFO DEVICE_UTILIZATION)
# TYPE habanalabs_utilization gauge
habanalabs_utilization{` + simLabels("0000:19:00.0", "0") + `} 6
habanalabs_utilization{` + simLabels("0000:1a:00.0", "1") + `} 6
`
	names := []string{"habanalabs_power_mW", "habanalabs_clock_soc_mhz", "habanalabs_memory_used_bytes", "habanalabs_utilization",
		"habanalabs_temperature_onchip", "habanalabs_pci_link_speed", "habanalabs_power_default_limit_mW"}
	// The simulator has no hwmon, no PCIe link and no max_power: those
	// metrics are absent, not 0.
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

func TestMetricsOnFixture(t *testing.T) {
	c := newCollector(devstat.Options{Root: devstattest.Machine(t), OpenControl: devstattest.NoDevice, Selection: mustSelect(t, "0")}, true)
	l := `Serial="AN00000001",UUID="01P0-HL2080A0-15-TNS000-00-00-01",device="AN00000001",driver="linux 6.12.57+deb12-amd64",` +
		`fit="U-Boot 2023.07-hl-gaudi2-1.17.0-fw-51.2.0-sec-9",id="0",pod_name="",pod_namespace="",spi="5.10.18-hl-gaudi2-1.17.0-fw-51.2.0-sec-9"`
	want := `
# HELP habanalabs_temperature_onchip Chip temperature in Celsius (the hwmon channel labelled as the chip's, else the hottest)
# TYPE habanalabs_temperature_onchip gauge
habanalabs_temperature_onchip{` + l + `} 51
# HELP habanalabs_temperature_onboard Board temperature in Celsius (the hwmon channel labelled board)
# TYPE habanalabs_temperature_onboard gauge
habanalabs_temperature_onboard{` + l + `} 38
# HELP habanalabs_pci_link_speed Current PCIe link speed in GT/s (sysfs current_link_speed)
# TYPE habanalabs_pci_link_speed gauge
habanalabs_pci_link_speed{` + l + `} 16
# HELP habanalabs_pci_link_width Current PCIe link width in lanes (sysfs current_link_width)
# TYPE habanalabs_pci_link_width gauge
habanalabs_pci_link_width{` + l + `} 16
# HELP habanalabs_power_default_limit_mW Power limit in milliwatts (sysfs max_power)
# TYPE habanalabs_power_default_limit_mW gauge
habanalabs_power_default_limit_mW{` + l + `} 600000
# HELP habanalabs_device_processes Processes that hold the device open (/proc/*/fd)
# TYPE habanalabs_device_processes gauge
habanalabs_device_processes{` + l + `} 1
# HELP habanalabs_resets_total Device resets since the driver loaded, by type (INFO RESET_COUNT)
# TYPE habanalabs_resets_total counter
habanalabs_resets_total{` + l + `,type="hard"} 2
habanalabs_resets_total{` + l + `,type="soft"} 0
`
	names := []string{"habanalabs_temperature_onchip", "habanalabs_temperature_onboard", "habanalabs_pci_link_speed",
		"habanalabs_pci_link_width", "habanalabs_power_default_limit_mW", "habanalabs_device_processes", "habanalabs_resets_total",
		"habanalabs_power_mW"} // power needs INFO, which the fixture cannot answer: absent
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(c, "habanalabs_hwmon_temperature_celsius"); n != 3 {
		t.Errorf("%d hwmon series, want 3 (temp1, temp2, temp10)", n)
	}
}

// habanaMetrics are the names of Habana's exporter that have a source
// here (exporter.go at c5973e8c5cf11fbe9268cf8d4d9c288d785a90f7).
var habanaMetrics = []string{
	"habanalabs_clock_soc_max_mhz", "habanalabs_clock_soc_mhz", "habanalabs_device_config", "habanalabs_energy",
	"habanalabs_memory_free_bytes", "habanalabs_memory_total_bytes", "habanalabs_memory_used_bytes",
	"habanalabs_pci_link_speed", "habanalabs_pci_link_width", "habanalabs_pcie_receive_throughput",
	"habanalabs_pcie_replay_count", "habanalabs_pcie_rx", "habanalabs_pcie_transmit_throughput", "habanalabs_pcie_tx",
	"habanalabs_pending_rows_state", "habanalabs_power_default_limit_mW", "habanalabs_power_mW",
	"habanalabs_temperature_onboard", "habanalabs_temperature_onchip", "habanalabs_utilization",
}

// described returns the metric names and label names c describes.
func described(c prometheus.Collector) map[string]string {
	ch := make(chan *prometheus.Desc, 100)
	go func() { c.Describe(ch); close(ch) }()
	out := map[string]string{}
	for d := range ch {
		s := d.String() // Desc{fqName: "x", help: "...", constLabels: {}, variableLabels: {a,b}}
		name := s[strings.Index(s, `fqName: "`)+9:]
		name = name[:strings.Index(name, `"`)]
		out[name] = s[strings.Index(s, "variableLabels: "):]
	}
	return out
}

func TestHabanaNamesAndLabels(t *testing.T) {
	got := described(newCollector(devstat.Options{}, true))
	for _, n := range habanaMetrics {
		labels, ok := got[n]
		if !ok {
			t.Errorf("no metric %s", n)
			continue
		}
		if !strings.Contains(labels, "{Serial,UUID,device,id,fit,spi,driver,pod_namespace,pod_name") {
			t.Errorf("%s labels %s, want Habana's", n, labels)
		}
	}
	lint := described(newCollector(devstat.Options{}, false))
	for from, to := range lintNames {
		if _, ok := lint[from]; ok {
			t.Errorf("-habana-names=false still has %s", from)
		}
		if _, ok := lint[to]; !ok {
			t.Errorf("-habana-names=false lacks %s", to)
		}
	}
}

// startExporter serves the exporter on a loopback port until the test ends
// and returns its address.
func startExporter(t *testing.T, c *config) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, l, c) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return l.Addr().String()
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %v %s", err, resp.Status)
	}
	return string(b)
}

func TestServe(t *testing.T) {
	addr := startExporter(t, &config{opts: devstat.Options{Selection: mustSelect(t, "sim:1")}, habanaNames: true})
	body := scrape(t, addr)
	for _, want := range []string{`habanalabs_power_mW{Serial="",UUID="",device="0000:1a:00.0",driver="",fit="",id="1"`,
		"habanalabs_exporter_collect_success 1", "go_goroutines", "process_resident_memory_bytes"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, `id="0"`) {
		t.Error(`-device sim:1 exports device 0`)
	}
}

// exporter runs the command with args and GAUDI_DEVICE=env (unset for
// "") until ctx ends, with its standard error going to stderr.
func exporter(t *testing.T, ctx context.Context, env string, stdout, stderr io.Writer, args ...string) error {
	t.Helper()
	t.Setenv("GAUDI_DEVICE", env) // the empty value counts as unset
	cmd, c := newCommand(stdout, stderr)
	return run(ctx, cmd, c, args)
}

func TestRunRefusesABadSelector(t *testing.T) {
	var out, errOut strings.Builder
	err := exporter(t, context.Background(), "3", &out, &errOut, "-listen", "127.0.0.1:0", "-root", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "sim:N") || !strings.Contains(err.Error(), "GAUDI_DEVICE=3") {
		t.Errorf("GAUDI_DEVICE=3 without hardware: %v, want an error naming sim:N", err)
	}
	err = exporter(t, context.Background(), "sim", &out, &errOut, "-listen", "127.0.0.1:0", "-device", "gaudi2", "-root", t.TempDir())
	if !errors.Is(err, device.ErrNoDevice) || !strings.Contains(err.Error(), "-device gaudi2") {
		t.Errorf("-device gaudi2 over GAUDI_DEVICE=sim without hardware: %v, want ErrNoDevice naming the flag", err)
	}
	if err := exporter(t, context.Background(), "", &out, &errOut, "-version"); !errors.Is(err, cli.ErrVersion) || !strings.HasPrefix(out.String(), "hlexporter ") {
		t.Errorf("-version: %v %q", err, out.String())
	}
	out.Reset()
	err = exporter(t, context.Background(), "", &out, &errOut, "-h")
	if cli.ExitCode(err) != 0 || !strings.Contains(out.String(), "Usage:\n  hlexporter [-listen ADDR]") || !strings.Contains(out.String(), "GAUDI_DEVICE") {
		t.Errorf("-h: %v %q", err, out.String())
	}
	errOut.Reset()
	if err := exporter(t, context.Background(), "", &out, &errOut, "extra"); cli.ExitCode(err) != 2 || !strings.Contains(errOut.String(), "run hlexporter -h") {
		t.Errorf("an argument: %v, stderr %q; want a usage error", err, errOut.String())
	}
}

func TestRunServesUntilCancelled(t *testing.T) {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t.Setenv("GAUDI_DEVICE", "sim:0")
	cmd, c := newCommand(io.Discard, pw)
	go func() {
		done <- run(ctx, cmd, c, []string{"-listen", "127.0.0.1:0"})
		pw.Close()
	}()
	line := make([]byte, 200)
	n, err := pr.Read(line)
	if err != nil {
		t.Fatal(err)
	}
	got := string(line[:n])
	addr, ok := strings.CutPrefix(strings.TrimSpace(got), "hlexporter: serving http://")
	addr, ok2 := strings.CutSuffix(addr, "/metrics")
	if !ok || !ok2 {
		t.Fatalf("first line %q, want hlexporter: serving http://ADDR/metrics", got)
	}
	go io.Copy(io.Discard, pr)
	if body := scrape(t, addr); !strings.Contains(body, `habanalabs_power_mW{`) {
		t.Errorf("the served exposition lacks habanalabs_power_mW")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run after cancel: %v", err)
	}
}
