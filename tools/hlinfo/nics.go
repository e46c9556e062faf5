package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gaudi-go/gaudi/ib"
)

// nicReport describes one RDMA device and its PCIe distance to each Gaudi.
type nicReport struct {
	Name           string        `json:"name"`
	Driver         string        `json:"driver"`
	DriverID       uint32        `json:"driver_id"`
	DriverIDSource string        `json:"driver_id_source"`
	Uverbs         string        `json:"uverbs"`
	PCIAddress     string        `json:"pci_address"`
	NUMANode       int           `json:"numa_node"`
	Ports          []string      `json:"ports"` // "1 ACTIVE Ethernet"
	DMABuf         bool          `json:"dmabuf_capable_driver"`
	Distances      []gaudiReport `json:"distances"`
}

// gaudiReport is a NIC's distance to one Gaudi.
type gaudiReport struct {
	Index    int    `json:"gaudi"`
	Distance string `json:"distance"`
}

// collectNICs adds the RDMA devices of s (nics, already listed) and their
// distance to each device of inv.
func collectNICs(inv *inventory, s ib.SysFS, nics []ib.Device) {
	pre := map[string]bool{}
	if p, err := s.PeerPrereqs(); err == nil {
		for _, n := range p.DMABufNICs {
			pre[n] = true
		}
	}
	for _, n := range nics {
		r := nicReport{
			Name: n.Name, Driver: n.DriverID.String(), DriverID: uint32(n.DriverID), DriverIDSource: n.DriverIDSource,
			Uverbs: n.UverbsPath, PCIAddress: n.PCIAddress, NUMANode: n.NUMANode, DMABuf: pre[n.Name],
			Ports: []string{}, Distances: []gaudiReport{},
		}
		for _, p := range n.Ports {
			r.Ports = append(r.Ports, fmt.Sprintf("%d %s %s", p.Number, p.State, p.LinkLayer))
		}
		for _, g := range inv.Devices {
			d := ib.Other
			if n.PCIAddress != "" && g.PCIAddress != "" {
				if v, err := s.Distance(n.PCIAddress, g.PCIAddress); err == nil {
					d = v
				}
			}
			r.Distances = append(r.Distances, gaudiReport{Index: g.Index, Distance: d.String()})
		}
		inv.NICs = append(inv.NICs, r)
	}
}

// writeNICs prints the RDMA section of the table output.
func writeNICs(w io.Writer, inv *inventory) error {
	if len(inv.NICs) == 0 {
		_, err := fmt.Fprintln(w, "\nno RDMA devices")
		return err
	}
	fmt.Fprintf(w, "\n%d RDMA device(s)\n", len(inv.NICs))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDRIVER\tUVERBS\tPCI\tNUMA\tPORTS\tDMA-BUF\tDISTANCE")
	for _, n := range inv.NICs {
		var dist []string
		for _, d := range n.Distances {
			dist = append(dist, fmt.Sprintf("%d:%s", d.Index, d.Distance))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", n.Name, n.Driver, dash(n.Uverbs), dash(n.PCIAddress), n.NUMANode,
			dash(strings.Join(n.Ports, ", ")), yesNo(n.DMABuf), dash(strings.Join(dist, " ")))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
