package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/tools/internal/devstat"
	"github.com/gaudi-go/gaudi/tools/internal/devstat/devstattest"
)

// need returns the path of a program of Debian's prometheus package
// (scripts/install-deps.sh installs it). Without it the test fails in CI
// (CI=true) and is skipped elsewhere.
func need(t *testing.T, name string) string {
	t.Helper()
	return needProgram(t, name, "Debian's prometheus package")
}

// needProgram returns the path of the program name, which pkg installs
// (scripts/install-deps.sh installs it). Without it the test fails in CI
// (CI=true) and is skipped elsewhere.
func needProgram(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is missing: scripts/install-deps.sh installs %s", name, pkg)
	}
	t.Skipf("%s is missing (%s; make deps installs it): %v", name, pkg, err)
	return ""
}

// getJSON decodes the JSON answer to a GET of url into v, failing the test
// when the request or the decoding fails.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// promtoolCheck runs promtool check metrics on an exposition and returns
// its exit code and the problems it reports.
func promtoolCheck(t *testing.T, promtool, exposition string) (int, []string) {
	t.Helper()
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(exposition)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	var problems []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if l != "" {
			problems = append(problems, l)
		}
	}
	return code, problems
}

// TestPromtoolCheckMetrics has promtool check what the exporter serves, on
// the simulator and on the fixture machine (which has every kind of
// value). With -habana-names=false the exposition must pass whole; with
// Habana's names, which keep their spelling for the dashboards' sake,
// promtool may only object to those names (exit 3 is its "lint problems"
// code; 1 would be an exposition it cannot parse).
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool := need(t, "promtool")
	root := devstattest.Machine(t)
	for _, opts := range []devstat.Options{{Selection: mustSelect(t, "sim")}, {Root: root, OpenControl: devstattest.NoDevice}} {
		for _, habana := range []bool{false, true} {
			body := scrape(t, startExporter(t, &config{opts: opts, habanaNames: habana}))
			code, problems := promtoolCheck(t, promtool, body)
			if !habana {
				if code != 0 {
					t.Errorf("root %q, lint names: promtool exit %d: %q", opts.Root, code, problems)
				}
				continue
			}
			if code != 0 && code != 3 {
				t.Errorf("root %q, Habana's names: promtool exit %d: %q", opts.Root, code, problems)
			}
			for _, p := range problems {
				name, _, _ := strings.Cut(p, " ")
				if _, known := lintNames[name]; !known {
					t.Errorf("root %q, Habana's names: promtool objects to %q, which is not one of Habana's names", opts.Root, p)
				}
			}
		}
	}
}

// freePort returns a loopback port nobody listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// queryResult is the part of a Prometheus /api/v1/query answer the test
// reads.
type queryResult struct {
	Status string `json:"status"`
	Data   struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	} `json:"data"`
}

// TestPrometheusScrapesExporter starts a real Prometheus server on loopback
// with a scrape job for the exporter serving two simulated devices, waits
// until it has scraped, and reads a metric back through its HTTP API.
func TestPrometheusScrapesExporter(t *testing.T) {
	prometheus := need(t, "prometheus")
	exporter := startExporter(t, &config{opts: devstat.Options{Selection: mustSelect(t, "sim")}, habanaNames: true})
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: gaudi
    static_configs:
      - targets: [%q]
`, exporter)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	api := startPrometheus(t, prometheus, dir)

	// Wait for a scrape that reached the exporter, then read power back.
	deadline := time.Now().Add(60 * time.Second)
	var r queryResult
	for {
		r = query(t, api, `habanalabs_power_mW{job="gaudi"}`)
		if len(r.Data.Result) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if r.Status != "success" || len(r.Data.Result) != 2 {
		t.Fatalf("Prometheus has %d habanalabs_power_mW series after 60 s (status %q); want 2", len(r.Data.Result), r.Status)
	}
	var ids []string
	for _, s := range r.Data.Result {
		ids = append(ids, s.Metric["id"])
		if v, _ := s.Value[1].(string); v != "95000" {
			t.Errorf("habanalabs_power_mW{id=%q} = %v, want 95000", s.Metric["id"], s.Value[1])
		}
		if s.Metric["instance"] != exporter || s.Metric["device"] == "" {
			t.Errorf("series labels %v", s.Metric)
		}
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"0", "1"}) {
		t.Errorf("ids %v, want 0 and 1", ids)
	}
	up := query(t, api, `up{job="gaudi"}`)
	if len(up.Data.Result) != 1 || up.Data.Result[0].Value[1] != "1" {
		t.Errorf("up{job=\"gaudi\"}: %+v", up.Data.Result)
	}
	// A PromQL expression of the kind dashboards use.
	sum := query(t, api, `sum(habanalabs_memory_total_bytes{job="gaudi"}) - sum(habanalabs_memory_free_bytes{job="gaudi"})`)
	if len(sum.Data.Result) != 1 || sum.Data.Result[0].Value[1] != "0" {
		t.Errorf("used memory from total - free: %+v", sum.Data.Result)
	}
}

// startPrometheus runs the server with dir/prometheus.yml and its storage
// in dir until the test ends, and returns its base URL once it is ready.
func startPrometheus(t *testing.T, prometheus, dir string) string {
	t.Helper()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		var log bytes.Buffer
		cmd := exec.Command(prometheus,
			"--config.file="+filepath.Join(dir, "prometheus.yml"),
			"--storage.tsdb.path="+filepath.Join(dir, "data"),
			"--web.listen-address="+addr,
		)
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		stop := func() {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-exited
			}
		}
		base := "http://" + addr
		ready := waitReady(base, exited, 30*time.Second)
		if ready == nil {
			t.Cleanup(func() {
				stop()
				if t.Failed() {
					t.Logf("prometheus log:\n%s", log.String())
				}
			})
			return base
		}
		stop()
		lastErr = fmt.Errorf("%w\n%s", ready, log.String())
	}
	t.Fatalf("prometheus did not start: %v", lastErr)
	return ""
}

// waitReady polls /-/ready until it answers 200, the process exits or the
// time is up.
func waitReady(base string, exited <-chan error, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/-/ready", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("prometheus exited: %v", err)
		case <-ctx.Done():
			return errors.New("prometheus not ready in time")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func query(t *testing.T, base, q string) queryResult {
	t.Helper()
	var r queryResult
	getJSON(t, base+"/api/v1/query?query="+url.QueryEscape(q), &r)
	return r
}
