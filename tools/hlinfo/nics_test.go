package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/tools/internal/devstat"
)

// nicTree builds a small sysfs: a Gaudi at 0000:1a:00.0 and mlx5_0 at
// 0000:1b:00.0 below one PCIe switch, efa_0 on another NUMA node, rxe0
// without PCI.
func nicTree(t *testing.T) ib.SysFS {
	t.Helper()
	root := t.TempDir()
	pci := map[string]struct{ path, numa string }{
		"0000:1a:00.0": {"pci0000:17/0000:17:02.0/0000:18:00.0/0000:19:00.0/0000:1a:00.0", "0"},
		"0000:1b:00.0": {"pci0000:17/0000:17:02.0/0000:18:00.0/0000:19:01.0/0000:1b:00.0", "0"},
		"0000:b2:00.0": {"pci0000:b1/0000:b1:02.0/0000:b2:00.0", "1"},
	}
	write := func(rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(rel, target string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	for addr, d := range pci {
		write("sys/devices/"+d.path+"/numa_node", d.numa)
		link("sys/bus/pci/devices/"+addr, "../../../devices/"+d.path)
	}
	nic := func(name, addr, uverbs string) {
		dir := "sys/devices/virtual/infiniband/" + name
		if addr != "" {
			dir = "sys/devices/" + pci[addr].path + "/infiniband/" + name
			link(dir+"/device", "../../../"+addr)
		}
		link("sys/class/infiniband/"+name, "../../"+strings.TrimPrefix(dir, "sys/"))
		write(dir+"/node_type", "1: CA")
		write(dir+"/ports/1/state", "4: ACTIVE")
		write(dir+"/ports/1/link_layer", "Ethernet")
		write("sys/class/infiniband_verbs/"+uverbs+"/ibdev", name)
	}
	nic("mlx5_0", "0000:1b:00.0", "uverbs0")
	nic("efa_0", "0000:b2:00.0", "uverbs1")
	nic("rxe0", "", "uverbs2")
	return ib.SysFS{Root: root}
}

func TestNICSection(t *testing.T) {
	s := nicTree(t)
	old := listNICs
	listNICs = func() (ib.SysFS, []ib.Device, error) {
		nics, err := s.Devices()
		return s, nics, err
	}
	defer func() { listNICs = old }()
	sel, err := cli.ParseSelection("-device", "sim")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := devstat.Collect(devstat.Options{Selection: sel})
	if err != nil {
		t.Fatal(err)
	}
	nics, err := collectNICs(snap)
	if err != nil {
		t.Fatal(err)
	}
	// The simulator's first Gaudi claims PCI address 0000:19:00.0, the
	// second 0000:1a:00.0, which the tree places below mlx5_0's switch.
	type row struct{ Name, Driver, PCI, Dist string }
	var got []row
	for _, n := range nics {
		var d []string
		for _, x := range n.Distances {
			d = append(d, x.Distance)
		}
		got = append(got, row{n.Name, n.Driver, n.PCIAddress, strings.Join(d, ",")})
	}
	want := []row{
		{"efa_0", "efa", "0000:b2:00.0", "other,other"},
		{"mlx5_0", "mlx5", "0000:1b:00.0", "other,same-switch"},
		{"rxe0", "rxe", "", "other,other"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("NICs (-want +got):\n%s", d)
	}
	var text bytes.Buffer
	if err := writeText(&text, snap, nics, &config{}); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"3 RDMA device(s)", "mlx5_0  mlx5    uverbs0  0000:1b:00.0  0     1:ACTIVE  yes      0:other 1:same-switch"} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("text output lacks %q:\n%s", line, text.String())
		}
	}
	var js bytes.Buffer
	if err := writeJSON(&js, snap, nics, false); err != nil {
		t.Fatal(err)
	}
	var back struct {
		NICs []nicReport `json:"rdma_devices"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.NICs) != 3 || back.NICs[1].DriverID != 1 ||
		len(back.NICs[1].Ports) != 1 || back.NICs[1].Ports[0] != (portReport{Number: 1, State: "ACTIVE", LinkLayer: "Ethernet"}) {
		t.Errorf("JSON round trip: %v, %+v", err, back.NICs)
	}
}
