package ib

import (
	"os"
	"path/filepath"
	"slices"
)

// PeerPrereqs is what this machine shows of the prerequisites for a NIC
// to reach Gaudi memory directly (peer-to-peer over a dma-buf). It is
// plain data; it reports what is visible, not whether a transfer will
// work.
type PeerPrereqs struct {
	// Habanalabs reports whether the habanalabs module is loaded
	// (/sys/module/habanalabs).
	Habanalabs bool
	// AccelNodes are the accel compute nodes present (/dev/accel/accelN),
	// LegacyNodes the legacy ones (/dev/hlN).
	AccelNodes, LegacyNodes []string
	// UverbsNodes are the user verbs nodes present
	// (/dev/infiniband/uverbsN).
	UverbsNodes []string
	// NICs are the RDMA devices sysfs shows.
	NICs []Device
	// DMABufNICs are the NICs whose driver can register dma-bufs in
	// upstream 6.12 (mlx5, efa, irdma, bnxt_re, mana). Whether a given
	// kernel really can is what Context.ProbeDMABuf finds out.
	DMABufNICs []string
}

// dmabufDrivers have reg_user_mr_dmabuf in linux 6.12 (checked in the
// drivers' ib_device_ops).
var dmabufDrivers = []DriverID{DriverMLX5, DriverEFA, DriverIRDMA, DriverBNXTRE, DriverMANA}

// PeerPrereqs reports what the tree under the root shows (the device
// nodes are looked for under Root/dev).
func (s SysFS) PeerPrereqs() (PeerPrereqs, error) {
	var p PeerPrereqs
	if _, err := os.Stat(s.path("sys/module/habanalabs")); err == nil {
		p.Habanalabs = true
	}
	p.AccelNodes = s.glob("dev/accel/accel[0-9]*")
	p.LegacyNodes = s.glob("dev/hl[0-9]*")
	p.UverbsNodes = s.glob("dev/infiniband/uverbs[0-9]*")
	nics, err := s.Devices()
	if err != nil {
		return p, err
	}
	p.NICs = nics
	for _, n := range nics {
		if slices.Contains(dmabufDrivers, n.DriverID) {
			p.DMABufNICs = append(p.DMABufNICs, n.Name)
		}
	}
	return p, nil
}

// glob returns the matches of pattern under the root, as paths from "/".
func (s SysFS) glob(pattern string) []string {
	m, _ := filepath.Glob(s.path(pattern))
	out := make([]string, 0, len(m))
	root := s.path()
	for _, p := range m {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			continue
		}
		out = append(out, "/"+filepath.ToSlash(rel))
	}
	return out
}

// GaudiPrereqs reports what the live system shows of the prerequisites
// for NICs to reach Gaudi memory; see SysFS.PeerPrereqs.
func GaudiPrereqs() (PeerPrereqs, error) { return SysFS{}.PeerPrereqs() }
