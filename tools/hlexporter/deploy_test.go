package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/tools/internal/devstat"
	"github.com/prometheus/client_golang/prometheus"
)

// deployDir holds what an operator installs beside the exporter.
const deployDir = "../../deploy"

// TestAlertRules checks the alert rules with Debian's promtool: the file
// is valid, and its unit tests (each alert fires on the series that
// should raise it, and not on a healthy node) pass.
func TestAlertRules(t *testing.T) {
	promtool := need(t, "promtool")
	rules := filepath.Join(deployDir, "prometheus", "habanalabs-alerts.yml")
	for _, args := range [][]string{
		{"check", "rules", rules},
		{"test", "rules", filepath.Join(deployDir, "prometheus", "habanalabs-alerts.test.yml")},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// dashboard is the part of the Grafana dashboard the test reads.
type dashboard struct {
	Title  string `json:"title"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// TestDeployWithPrometheus loads the alert rules into a real Prometheus
// that scrapes the exporter serving two simulated devices as job "gaudi",
// checks that every rule loaded and evaluates without error, and runs
// every query of the Grafana dashboard against it (Grafana's variables
// replaced as Grafana would): each must be valid PromQL over series the
// exporter serves, and answer for both devices or the node.
func TestDeployWithPrometheus(t *testing.T) {
	prometheus := need(t, "prometheus")
	exporter := startExporter(t, &config{opts: devstat.Options{Selection: mustSelect(t, "sim")}, habanaNames: true})
	dir := t.TempDir()
	rules, err := filepath.Abs(filepath.Join(deployDir, "prometheus", "habanalabs-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - %q
scrape_configs:
  - job_name: gaudi
    static_configs:
      - targets: [%q]
`, rules, exporter)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	api := startPrometheus(t, prometheus, dir)

	// Wait until a scrape has reached the exporter and the rules have been
	// evaluated at least once after it.
	deadline := time.Now().Add(60 * time.Second)
	var groups rulesAnswer
	for {
		groups = getRules(t, api)
		if groups.evaluatedAll() && len(query(t, api, `habanalabs_device_operational{job="gaudi"}`).Data.Result) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s: rules %+v; the exporter's series not scraped or rules not evaluated", groups)
		}
		time.Sleep(250 * time.Millisecond)
	}
	n := 0
	for _, g := range groups.Data.Groups {
		for _, r := range g.Rules {
			n++
			if r.Health != "ok" {
				t.Errorf("rule %s: health %q: %s", r.Name, r.Health, r.LastError)
			}
			if r.State == "firing" || r.State == "pending" {
				t.Errorf("rule %s is %s on two healthy simulated devices", r.Name, r.State)
			}
		}
	}
	if n < 8 {
		t.Errorf("Prometheus loaded %d rules, want the 8 of %s", n, rules)
	}

	b, err := os.ReadFile(filepath.Join(deployDir, "grafana", "habanalabs-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	// Every metric a query names is one the exporter describes (a typo
	// would be valid PromQL answering nothing); the in-process simulator
	// has no power limit or hwmon, so not every one has samples here.
	described := describedNames(t)
	metric := regexp.MustCompile(`habanalabs_[A-Za-z_]+`)
	grafana := strings.NewReplacer(`$instance`, `.*`, `$__rate_interval`, `1m`)
	queries, answered := 0, 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			queries++
			for _, name := range metric.FindAllString(tg.Expr, -1) {
				if !described[name] {
					t.Errorf("panel %q: %s: the exporter serves no %s", p.Title, tg.Expr, name)
				}
			}
			q := grafana.Replace(tg.Expr)
			r := query(t, api, q)
			if r.Status != "success" {
				t.Errorf("panel %q: %s: status %q", p.Title, q, r.Status)
			}
			if len(r.Data.Result) > 0 {
				answered++
			}
		}
	}
	if answered < queries/2 {
		t.Errorf("%d of the dashboard's %d queries answered with series from the simulated devices", answered, queries)
	}
	if queries < 10 {
		t.Errorf("the dashboard has %d queries; want one per panel target (10 or more)", queries)
	}
}

// describedNames returns the names of the metrics the exporter's
// collector describes, with Habana's names.
func describedNames(t *testing.T) map[string]bool {
	t.Helper()
	ch := make(chan *prometheus.Desc, 256)
	go func() {
		newCollector(devstat.Options{}, true).Describe(ch)
		close(ch)
	}()
	names := map[string]bool{}
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		if m := fq.FindStringSubmatch(d.String()); m != nil {
			names[m[1]] = true
		}
	}
	if len(names) < 10 {
		t.Fatalf("the collector describes %d metrics", len(names))
	}
	return names
}

// rulesAnswer is the part of /api/v1/rules the test reads.
type rulesAnswer struct {
	Status string `json:"status"`
	Data   struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Name           string `json:"name"`
				Health         string `json:"health"`
				State          string `json:"state"`
				LastError      string `json:"lastError"`
				LastEvaluation string `json:"lastEvaluation"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"data"`
}

// evaluatedAll reports whether every rule has been evaluated.
func (a rulesAnswer) evaluatedAll() bool {
	n := 0
	for _, g := range a.Data.Groups {
		for _, r := range g.Rules {
			if r.LastEvaluation == "" || strings.HasPrefix(r.LastEvaluation, "0001-") {
				return false
			}
			n++
		}
	}
	return n > 0
}

func getRules(t *testing.T, base string) rulesAnswer {
	t.Helper()
	var a rulesAnswer
	getJSON(t, base+"/api/v1/rules", &a)
	return a
}

// TestSystemdUnit checks the example unit with systemd-analyze verify
// (its ExecStart pointed at a real hlexporter binary) and that the
// command line it runs is one hlexporter accepts.
func TestSystemdUnit(t *testing.T) {
	analyze := needProgram(t, "systemd-analyze", "Debian's systemd package")
	b, err := os.ReadFile(filepath.Join(deployDir, "systemd", "hlexporter.service"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ExecStart=(\S+)(.*)$`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatal("no ExecStart line")
	}
	args := strings.Fields(m[2])
	dir := t.TempDir()
	bin := filepath.Join(dir, "hlexporter")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	unit := filepath.Join(dir, "hlexporter.service")
	if err := os.WriteFile(unit, []byte(strings.Replace(string(b), "ExecStart="+m[1], "ExecStart="+bin, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", "--man=no", unit).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	cmd, c := newCommand(io.Discard, io.Discard)
	if err := cmd.Parse(args); err != nil || cmd.Flags.NArg() != 0 {
		t.Errorf("hlexporter refuses the unit's arguments %q: %v", args, err)
	}
	if c.listen != ":41611" {
		t.Errorf("the unit listens on %q; the alert rules' job and Habana's exporter use :41611", c.listen)
	}
}
