package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/tools/internal/devstat"
)

// nicReport describes one RDMA device and its PCIe distance to each Gaudi.
type nicReport struct {
	Name           string        `json:"name"`
	Driver         string        `json:"driver"`
	DriverID       uint32        `json:"driver_id"`
	DriverIDSource string        `json:"driver_id_source"`
	Uverbs         string        `json:"uverbs"`
	PCIAddress     string        `json:"pci_address"`
	NUMANode       *int          `json:"numa_node"`
	Ports          []portReport  `json:"ports"`
	DMABuf         bool          `json:"dmabuf_capable_driver"`
	Distances      []gaudiReport `json:"distances"`
}

// portReport is one port of a NIC.
type portReport struct {
	Number    int    `json:"number"`
	State     string `json:"state"`      // "ACTIVE", ...
	LinkLayer string `json:"link_layer"` // "Ethernet", "InfiniBand"
}

// gaudiReport is a NIC's distance to one Gaudi.
type gaudiReport struct {
	Index    int    `json:"gaudi"`
	Distance string `json:"distance"`
}

// collectNICs lists the RDMA devices and their distance to each device of
// snap.
func collectNICs(snap *devstat.Snapshot) ([]nicReport, error) {
	s, nics, err := listNICs()
	if err != nil {
		return nil, fmt.Errorf("list rdma devices: %w", err)
	}
	out := []nicReport{}
	pre := map[string]bool{}
	if p, err := s.PeerPrereqs(); err == nil {
		for _, n := range p.DMABufNICs {
			pre[n] = true
		}
	}
	for _, n := range nics {
		r := nicReport{
			Name: n.Name, Driver: n.DriverID.String(), DriverID: uint32(n.DriverID), DriverIDSource: n.DriverIDSource,
			Uverbs: n.UverbsPath, PCIAddress: n.PCIAddress, DMABuf: pre[n.Name],
			Ports: []portReport{}, Distances: []gaudiReport{},
		}
		if n.NUMANode >= 0 {
			numa := n.NUMANode
			r.NUMANode = &numa
		}
		for _, p := range n.Ports {
			r.Ports = append(r.Ports, portReport{Number: int(p.Number), State: p.State.String(), LinkLayer: p.LinkLayer})
		}
		for _, g := range snap.Devices {
			d := ib.Other
			if n.PCIAddress != "" && g.PCIAddress != "" {
				if v, err := s.Distance(n.PCIAddress, g.PCIAddress); err == nil {
					d = v
				}
			}
			r.Distances = append(r.Distances, gaudiReport{Index: g.Index, Distance: d.String()})
		}
		out = append(out, r)
	}
	return out, nil
}

// listNICs lists the RDMA devices and the sysfs they were read from;
// tests replace it with a fixture.
var listNICs = func() (ib.SysFS, []ib.Device, error) {
	nics, err := ib.Devices()
	return ib.SysFS{}, nics, err
}

// writeNICs prints the RDMA section of the table output.
func writeNICs(w io.Writer, nics []nicReport) error {
	if len(nics) == 0 {
		_, err := fmt.Fprintln(w, "\nno RDMA devices")
		return err
	}
	fmt.Fprintf(w, "\n%d RDMA device(s)\n", len(nics))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDRIVER\tUVERBS\tPCI\tNUMA\tPORTS\tDMA-BUF\tDISTANCE TO GAUDI")
	for _, n := range nics {
		var dist []string
		for _, d := range n.Distances {
			dist = append(dist, fmt.Sprintf("%d:%s", d.Index, d.Distance))
		}
		var ports []string
		for _, p := range n.Ports {
			ports = append(ports, fmt.Sprintf("%d:%s", p.Number, p.State))
		}
		numa := "-"
		if n.NUMANode != nil {
			numa = fmt.Sprint(*n.NUMANode)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, n.Driver, baseOrDash(n.Uverbs), dash(n.PCIAddress), numa,
			dash(strings.Join(ports, ",")), yesNo(n.DMABuf), dash(strings.Join(dist, " ")))
	}
	return tw.Flush()
}

// baseOrDash prints a path's last element, or "-" for none.
func baseOrDash(p string) string {
	if p == "" {
		return "-"
	}
	return filepath.Base(p)
}
