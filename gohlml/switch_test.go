package gohlml_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/hlsimtest"
)

// buildClient builds testdata/client, a program written against Habana's
// github.com/HabanaAI/gohlml, in a temporary module that replaces that
// module with gohlml/compat, as the README tells users to: without cgo and
// fetching nothing (GOPROXY=off).
func buildClient(t *testing.T) string {
	t.Helper()
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "client", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	// The version the device plugin requires; the replace makes it ours.
	// This repository is not published, so the shim's own requirement is
	// replaced by the checkout too (a user of a published release needs
	// only the first replace).
	mod := fmt.Sprintf(`module example.com/hlmlclient

go 1.26.0

require github.com/HabanaAI/gohlml v1.14.0

replace github.com/HabanaAI/gohlml => %s

replace github.com/gaudi-go/gaudi => %s
`, filepath.Join(repo, "gohlml", "compat"), repo)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	// The checksums of the module's own dependencies, from the module cache.
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "client")
	cmd := exec.Command(goCommand(), "build", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the gohlml client: %v\n%s", err, out)
	}
	// Static: no interpreter, no libhlml.
	if out, err := exec.Command(goCommand(), "version", "-m", bin).Output(); err != nil || !strings.Contains(string(out), "CGO_ENABLED=0") {
		t.Fatalf("client not built with CGO_ENABLED=0: %v\n%s", err, out)
	}
	return bin
}

func goCommand() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}

// TestSwitchedProgram runs the gohlml client on served devices of each
// chip: it lists them with serials and UUIDs, reads every value, times out
// on a quiet device, and sees the critical event of a reset injected with
// "hlsim ctl", on both driver flavours.
func TestSwitchedProgram(t *testing.T) {
	hlsimtest.Skip(t)
	bin := buildClient(t)
	for _, spec := range []string{"gaudi2:2", "gaudi3:1", "gaudi:1", "gaudi2:1:oot", "gaudi:1:oot"} {
		t.Run(spec, func(t *testing.T) {
			srv := hlsimtest.Serve(t, spec)
			runClient(t, bin, srv)
		})
	}
}

func runClient(t *testing.T, bin string, srv *hlsimtest.Server) {
	cmd := exec.Command(bin)
	cmd.Env = srv.Env()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	// Bound the whole run: a client that hangs fails the test.
	timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()

	nodes, err := device.SysFS{Root: srv.Dir}.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	devRe := regexp.MustCompile(`^device (\d+) serial=(\S+) uuid=(\S+) id=([0-9a-f]+) bus=(\S+) node=(\S+) module=(\d+)`)
	var out []string
	serials := map[string]int{}
	metrics := map[string]string{}
	var resetSerial string
	sawType := false
	for l := range lines {
		out = append(out, l)
		switch f := strings.Fields(l); {
		case devRe.MatchString(l):
			m := devRe.FindStringSubmatch(l)
			i, _ := strconv.Atoi(m[1])
			if i >= len(nodes) {
				t.Fatalf("client lists device %d of %d", i, len(nodes))
			}
			n := nodes[i]
			if m[5] != n.PCIAddress || m[4] != strconv.FormatUint(uint64(n.DeviceID)<<16|0x1da3, 16) || m[6] != "/dev/accel/accel"+strconv.Itoa(n.Index) {
				t.Errorf("client: %q; sysfs: %s id %x accel%d", l, n.PCIAddress, n.DeviceID, n.Index)
			}
			if _, dup := serials[m[2]]; dup {
				t.Errorf("serial %s twice", m[2])
			}
			serials[m[2]] = n.Index
		case f[0] == "type":
			// The device plugin's resource name: habana.ai/gaudi.
			if l != "type gaudi" {
				t.Errorf("client: %q, want type gaudi", l)
			}
			sawType = true
		case f[0] == "metric" && len(f) == 4:
			metrics[f[1]+" "+f[2]] = f[3]
		case f[0] == "registered":
			// Reset the last device, as an operator would.
			resetIdx := nodes[len(nodes)-1].Index
			for s, i := range serials {
				if i == resetIdx {
					resetSerial = s
				}
			}
			ctl := exec.Command(hlsimtest.Binary(t), "ctl", "-dir", srv.Dir, "reset", strconv.Itoa(resetIdx))
			if b, err := ctl.CombinedOutput(); err != nil {
				t.Fatalf("hlsim ctl reset: %v\n%s", err, b)
			}
		case f[0] == "timeout":
			ms, _ := strconv.Atoi(strings.TrimPrefix(f[1], "elapsed_ms="))
			if ms < 300 {
				t.Errorf("WaitForEvent(300) on a quiet device returned after %d ms", ms)
			}
		case f[0] == "event":
			if want := "serial=" + resetSerial; f[1] != want {
				t.Errorf("event %q, want %s (the reset device)", l, want)
			}
		}
	}
	if err := <-exited; err != nil {
		t.Fatalf("client: %v\nstdout:\n%s\nstderr:\n%s", err, strings.Join(out, "\n"), stderr.String())
	}
	if !sawType {
		t.Errorf("client printed no device type:\n%s", strings.Join(out, "\n"))
	}
	if len(serials) != len(nodes) {
		t.Fatalf("client listed %d devices, sysfs %d:\n%s", len(serials), len(nodes), strings.Join(out, "\n"))
	}
	if resetSerial == "" || !strings.HasPrefix(out[len(out)-1], "event ") {
		t.Fatalf("no critical event after the reset:\n%s", strings.Join(out, "\n"))
	}
	// The metrics pass: what the driver gives equals what it reports to
	// this process; what it does not give is unsupported, never 0.
	for _, n := range nodes {
		i := strconv.Itoa(n.Index)
		d, err := device.OpenControl(srv.Node(n.Index, true))
		if err != nil {
			t.Fatal(err)
		}
		hw := d.HWIPInfo()
		drv, err := d.DriverInfo()
		d.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"memory_total": strconv.FormatUint(hw.DRAMSize, 10), "name": hw.CardName,
			"temperature_onchip": "unsupported", "board_id": "unsupported", "pcb_version": "unsupported",
		}
		// What only the out-of-tree driver serves: MODULE_PARAMS (ECC)
		// and the NIC port masks of HW_IP_INFO.
		t.Logf("device %s: driver %v, nic_ports %s, ecc_mode %s", i, drv.Driver, metrics[i+" nic_ports"], metrics[i+" ecc_mode"])
		if drv.Driver == device.DriverOutOfTree {
			ports := 0
			for m := hw.NICPortsMask; m != 0; m &= m - 1 {
				ports++
			}
			want["nic_ports"] = strconv.Itoa(ports)
			if p, err := strconv.ParseUint(metrics[i+" ecc_mode"], 10, 8); err != nil || p > 1 {
				t.Errorf("device %s metric ecc_mode = %q on the out-of-tree driver, want 0 or 1", i, metrics[i+" ecc_mode"])
			}
		} else {
			want["nic_ports"], want["ecc_mode"] = "unsupported", "unsupported"
		}
		for k, v := range want {
			if got := metrics[i+" "+k]; got != v {
				t.Errorf("device %s metric %s = %q, want %q", i, k, got, v)
			}
		}
		for _, k := range []string{"power_mw", "energy_mj", "utilization", "soc_clock", "pcie_tx"} {
			if _, err := strconv.ParseUint(metrics[i+" "+k], 10, 64); err != nil {
				t.Errorf("device %s metric %s = %q, want a number", i, k, metrics[i+" "+k])
			}
		}
	}
}
