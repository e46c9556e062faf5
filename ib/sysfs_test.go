package ib

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// unpackTree writes a fixture archive below dir: "-- path --" starts a
// file holding the lines up to the next marker, "-- path/ --" is a
// directory and "-- path -> target --" a symbolic link; lines before the
// first marker are a comment.
func unpackTree(dir, archive string) error {
	var (
		file string
		body []string
	)
	flush := func() error {
		if file == "" {
			return nil
		}
		err := os.WriteFile(filepath.Join(dir, file), []byte(strings.Join(body, "")), 0o644)
		file, body = "", nil
		return err
	}
	for _, line := range strings.SplitAfter(archive, "\n") {
		t := strings.TrimSuffix(line, "\n")
		if !strings.HasPrefix(t, "-- ") || !strings.HasSuffix(t, " --") || len(t) < 7 {
			if file != "" {
				body = append(body, line)
			}
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		entry := t[3 : len(t)-3]
		rel, target, isLink := strings.Cut(entry, " -> ")
		isDir := strings.HasSuffix(rel, "/")
		rel = strings.TrimSuffix(rel, "/")
		if !filepath.IsLocal(rel) || filepath.IsAbs(target) {
			return fmt.Errorf("fixture entry %q leaves the tree", entry)
		}
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		switch {
		case isLink:
			if err := os.Symlink(target, p); err != nil {
				return err
			}
		case isDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		default:
			file = rel
		}
	}
	return flush()
}

// nicsFixture unpacks testdata/sysfs-nics.txtar into a new root.
func nicsFixture(t testing.TB) SysFS {
	t.Helper()
	b, err := os.ReadFile("testdata/sysfs-nics.txtar")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := unpackTree(root, string(b)); err != nil {
		t.Fatalf("unpack fixture: %v", err)
	}
	return SysFS{Root: root}
}

var addrCmp = cmp.Comparer(func(a, b netip.Addr) bool { return a == b })

func TestSysFSDevices(t *testing.T) {
	s := nicsFixture(t)
	devs, err := s.Devices()
	if err != nil {
		t.Fatal(err)
	}
	gid := func(i int, s, typ string) GID { return GID{Index: i, GID: netip.MustParseAddr(s), Type: typ} }
	want := []Device{
		{
			Name: "bnxt_re0", Uverbs: "uverbs3", UverbsPath: "/dev/infiniband/uverbs3", ABIVersion: 1,
			DriverID: DriverBNXTRE, DriverIDSource: "driver", Driver: "bnxt_en", NodeType: 1, NodeTypeName: "CA",
			NodeGUID: "0a0b:0cff:fe0d:0e0f", SysImageGUID: "0a0b:0cff:fe0d:0e0f", FWVersion: "227.0.131.0",
			PCIAddress: "0000:40:00.1", NUMANode: 0,
			Ports: []Port{
				{Number: 1, State: PortActive, PhysState: "LinkUp", LinkLayer: "Ethernet", GIDs: []GID{gid(0, "fe80::80b:cff:fe0d:e0f", "RoCE v2")}},
				{Number: 2, State: PortDown, PhysState: "Disabled", LinkLayer: "Ethernet"},
			},
		},
		{
			Name: "efa_0", Uverbs: "uverbs4", UverbsPath: "/dev/infiniband/uverbs4", ABIVersion: 1,
			DriverID: DriverEFA, DriverIDSource: "driver", Driver: "efa", NodeType: 1, NodeTypeName: "CA",
			NodeGUID: "0000:0000:0000:0000", SysImageGUID: "0000:0000:0000:0000",
			PCIAddress: "0000:b2:00.0", NUMANode: 1,
			Ports: []Port{{Number: 1, State: PortActive, PhysState: "LinkUp", LinkLayer: "Unknown", GIDs: []GID{
				gid(0, "fe80::", ""), gid(1, "fe80::4c7:a7ff:fe21:1", ""),
			}}},
		},
		{
			Name: "irdma0", Uverbs: "uverbs1", UverbsPath: "/dev/infiniband/uverbs1", ABIVersion: 5,
			DriverID: DriverIRDMA, DriverIDSource: "driver", Driver: "ice", NodeType: 1, NodeTypeName: "CA",
			NodeGUID: "6efe:54ff:fe3d:1a20", SysImageGUID: "6efe:54ff:fe3d:1a20", FWVersion: "1.70",
			PCIAddress: "0000:20:00.0", NUMANode: 0,
			Ports: []Port{{Number: 1, State: PortActive, PhysState: "LinkUp", LinkLayer: "Ethernet", GIDs: []GID{gid(0, "fe80::6efe:54ff:fe3d:1a20", "RoCE v2")}}},
		},
		{
			Name: "mlx5_0", Uverbs: "uverbs0", UverbsPath: "/dev/infiniband/uverbs0", ABIVersion: 1,
			DriverID: DriverMLX5, DriverIDSource: "driver", Driver: "mlx5_core", NodeType: 1, NodeTypeName: "CA",
			NodeGUID: "b8ce:f603:00a1:b2c4", SysImageGUID: "b8ce:f603:00a1:b2c4", FWVersion: "28.39.1002",
			PCIAddress: "0000:1b:00.0", NUMANode: 0,
			Ports: []Port{{Number: 1, State: PortActive, PhysState: "LinkUp", LinkLayer: "Ethernet", GIDs: []GID{
				gid(0, "fe80::bace:f6ff:fea1:b2c4", "IB/RoCE v1"), gid(1, "fe80::bace:f6ff:fea1:b2c4", "RoCE v2"),
			}}},
		},
		{
			Name: "mlx5_1", ABIVersion: -1,
			DriverID: DriverMLX5, DriverIDSource: "driver", Driver: "mlx5_core", NodeType: 1, NodeTypeName: "CA",
			NodeGUID: "b8ce:f603:00a1:b2c5", SysImageGUID: "b8ce:f603:00a1:b2c5", FWVersion: "28.39.1002",
			PCIAddress: "0000:1c:00.0", NUMANode: 0,
			Ports: []Port{{Number: 1, State: PortDown, PhysState: "Disabled", LinkLayer: "InfiniBand"}},
		},
		{
			Name: "rxe0", Uverbs: "uverbs2", UverbsPath: "/dev/infiniband/uverbs2", ABIVersion: 2,
			DriverID: DriverRXE, DriverIDSource: "name", NodeType: 1, NodeTypeName: "CA",
			NodeGUID: "fc36:b4ff:fe80:9fc8", SysImageGUID: "fc36:b4ff:fe80:9fc8", NUMANode: -1,
			Ports: []Port{{Number: 1, State: PortActive, PhysState: "LinkUp", LinkLayer: "Ethernet", GIDs: []GID{
				gid(0, "fe80::fc36:b4ff:fe80:9fc8", "RoCE v2"), gid(1, "::ffff:10.77.0.1", "RoCE v2"),
			}}},
		},
	}
	if d := cmp.Diff(want, devs, addrCmp); d != "" {
		t.Errorf("Devices (-want +got):\n%s", d)
	}
}

func TestSysFSNoRDMA(t *testing.T) {
	devs, err := SysFS{Root: t.TempDir()}.Devices()
	if err != nil || devs != nil {
		t.Errorf("Devices on a machine without RDMA: %v, %v", devs, err)
	}
}

func TestDistance(t *testing.T) {
	s := nicsFixture(t)
	tests := []struct {
		nic, gaudi string
		want       Distance
		wantErr    bool
	}{
		{"0000:1b:00.0", "0000:1a:00.0", SameSwitch, false},
		{"0000:1c:00.0", "0000:1a:00.0", SameSwitch, false},
		{"0000:20:00.0", "0000:1a:00.0", SameNUMA, false},
		{"0000:40:00.1", "0000:40:00.0", SameRootPort, false},
		{"0000:40:00.1", "0000:1a:00.0", SameNUMA, false},
		{"0000:b2:00.0", "0000:1a:00.0", Other, false},
		{"0000:1b:00.0", "0000:40:00.0", SameNUMA, false},
		{"0000:99:00.0", "0000:1a:00.0", Other, true},
		{"rxe0", "0000:1a:00.0", Other, true},
		{"0000:1b:00.0", "../../etc", Other, true},
	}
	for _, tt := range tests {
		got, err := s.Distance(tt.nic, tt.gaudi)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("Distance(%s, %s) = %v, %v; want %v, error %v", tt.nic, tt.gaudi, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestNICsFor(t *testing.T) {
	s := nicsFixture(t)
	devs, err := s.Devices()
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Name string
		D    string
	}
	rank := func(gaudi string) []row {
		var out []row
		for _, n := range s.NICsFor(gaudi, devs) {
			out = append(out, row{n.NIC.Name, n.Distance.String()})
		}
		return out
	}
	want := []row{
		{"mlx5_0", "same-switch"}, {"mlx5_1", "same-switch"},
		{"bnxt_re0", "same-numa"}, {"irdma0", "same-numa"},
		{"efa_0", "other"}, {"rxe0", "other"},
	}
	if d := cmp.Diff(want, rank("0000:1a:00.0")); d != "" {
		t.Errorf("NICs for 0000:1a:00.0 (-want +got):\n%s", d)
	}
	want = []row{
		{"bnxt_re0", "same-root-port"},
		{"irdma0", "same-numa"}, {"mlx5_0", "same-numa"}, {"mlx5_1", "same-numa"},
		{"efa_0", "other"}, {"rxe0", "other"},
	}
	if d := cmp.Diff(want, rank("0000:40:00.0")); d != "" {
		t.Errorf("NICs for 0000:40:00.0 (-want +got):\n%s", d)
	}
}

func TestDistanceString(t *testing.T) {
	for d, want := range map[Distance]string{SameSwitch: "same-switch", SameRootPort: "same-root-port", SameNUMA: "same-numa", Other: "other", 9: "Distance(9)"} {
		if got := d.String(); got != want {
			t.Errorf("%d: %q, want %q", int(d), got, want)
		}
	}
}

func TestPeerPrereqs(t *testing.T) {
	s := nicsFixture(t)
	p, err := s.PeerPrereqs()
	if err != nil {
		t.Fatal(err)
	}
	if !p.Habanalabs {
		t.Errorf("habanalabs module not seen")
	}
	if d := cmp.Diff([]string{"/dev/accel/accel0", "/dev/accel/accel1"}, p.AccelNodes); d != "" {
		t.Errorf("accel nodes (-want +got):\n%s", d)
	}
	if len(p.LegacyNodes) != 0 || len(p.UverbsNodes) != 5 || len(p.NICs) != 6 {
		t.Errorf("legacy %v, uverbs %v, %d NICs", p.LegacyNodes, p.UverbsNodes, len(p.NICs))
	}
	if d := cmp.Diff([]string{"bnxt_re0", "efa_0", "irdma0", "mlx5_0", "mlx5_1"}, p.DMABufNICs); d != "" {
		t.Errorf("dma-buf capable NICs (-want +got):\n%s", d)
	}
	empty, err := SysFS{Root: t.TempDir()}.PeerPrereqs()
	if err != nil || empty.Habanalabs || len(empty.AccelNodes)+len(empty.NICs)+len(empty.DMABufNICs) != 0 {
		t.Errorf("empty machine: %+v, %v", empty, err)
	}
}

func TestMergeNetlink(t *testing.T) {
	s := nicsFixture(t)
	devs, err := s.Devices()
	if err != nil {
		t.Fatal(err)
	}
	nl := []NetlinkDevice{
		{Name: "rxe0", DriverID: DriverRXE, HasDriverID: true, Chardev: "uverbs2", HasChardev: true, ChardevABI: 2},
		{Name: "mlx5_1", DriverID: DriverMLX5, HasDriverID: true, Chardev: "uverbs7", HasChardev: true, ChardevABI: 1},
		{Name: "irdma0"}, // an old kernel: no driver id
		{Name: "gone0", DriverID: DriverSIW, HasDriverID: true},
	}
	got := map[string]Device{}
	for _, d := range mergeNetlink(devs, nl) {
		got[d.Name] = d
	}
	check := func(name string, id DriverID, src, uverbs string, abi int) {
		t.Helper()
		d := got[name]
		if d.DriverID != id || d.DriverIDSource != src || d.Uverbs != uverbs || d.ABIVersion != abi {
			t.Errorf("%s: driver id %v from %q, uverbs %q, abi %d; want %v from %q, %q, %d", name, d.DriverID, d.DriverIDSource, d.Uverbs, d.ABIVersion, id, src, uverbs, abi)
		}
	}
	check("rxe0", DriverRXE, "netlink", "uverbs2", 2)
	check("mlx5_1", DriverMLX5, "netlink", "uverbs7", 1)
	check("irdma0", DriverIRDMA, "driver", "uverbs1", 5)
	if _, ok := got["gone0"]; ok {
		t.Errorf("a netlink-only device was added")
	}
}

func TestGaudiPrereqsLive(t *testing.T) {
	// Whatever this machine has, the live report must agree with sysfs.
	p, err := GaudiPrereqs()
	if err != nil {
		t.Fatal(err)
	}
	_, statErr := os.Stat("/sys/module/habanalabs")
	if p.Habanalabs != (statErr == nil) {
		t.Errorf("habanalabs loaded %v, /sys/module/habanalabs: %v", p.Habanalabs, statErr)
	}
	m, _ := filepath.Glob("/dev/infiniband/uverbs[0-9]*")
	if len(p.UverbsNodes) != len(m) {
		t.Errorf("uverbs nodes %v, glob %v", p.UverbsNodes, m)
	}
}
