package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/rdma"
)

// gaudiEnd is one end of hlperf -rdma -use_gaudi: the Gaudi's memory, a
// DMA engine and the device buffer that is sent or received.
type gaudiEnd struct {
	m   *memory.Manager
	e   *dma.Engine
	buf *memory.Buffer
}

// openGaudiEnd opens the -device Gaudi and allocates size bytes on it.
func openGaudiEnd(cmd *cli.Command, size uint64) (g *gaudiEnd, closeAll func() error, err error) {
	d, err := cmd.OpenDevice()
	if err != nil {
		return nil, nil, err
	}
	g = &gaudiEnd{}
	closeAll = func() error {
		var errs []error
		if g.buf != nil {
			errs = append(errs, g.buf.Close())
		}
		if g.e != nil {
			errs = append(errs, g.e.Close())
		}
		if g.m != nil {
			errs = append(errs, g.m.Close())
		}
		return errors.Join(append(errs, d.Close())...)
	}
	if g.m, err = memory.New(d, memory.Options{}); err == nil {
		if g.e, err = dma.New(g.m, dma.Options{}); err == nil {
			g.buf, err = g.m.Alloc(size, memory.AllocOptions{})
		}
	}
	if err != nil {
		return nil, nil, errors.Join(err, closeAll())
	}
	return g, closeAll, nil
}

// rdmaOptions are the rdma.Options of -gaudi_path.
func (cfg *rdmaConfig) rdmaOptions() rdma.Options {
	switch cfg.gaudiPath {
	case "zero-copy":
		return rdma.Options{Path: rdma.PathZeroCopy}
	case "pipelined":
		return rdma.Options{Path: rdma.PathPipelined}
	}
	return rdma.Options{}
}

// writePath prints which path each side took, under the report.
func writePath(w io.Writer, who string, r rdma.Result) {
	fmt.Fprintf(w, " Device memory path: %v here, %v at the %s\n", r.Path, r.PeerPath, who)
}

// rdmaGaudiServer receives cfg.iters transfers of cfg.size bytes into
// device memory (package rdma's Recv).
func rdmaGaudiServer(ctx context.Context, cmd *cli.Command, cfg *rdmaConfig, stdout io.Writer) error {
	g, closeAll, err := openGaudiEnd(cmd, uint64(cfg.size))
	if err != nil {
		return err
	}
	defer closeAll()
	l, err := rdma.Listen(netip.AddrPortFrom(netip.MustParseAddr(cfg.bind), uint16(cfg.port)), g.m, g.e, cfg.rdmaOptions())
	if err != nil {
		return err
	}
	defer l.Close()
	fmt.Fprintf(stdout, " Waiting for a client on %s port %d (device memory, %d bytes at %#x)\n", cfg.bind, cfg.port, g.buf.Size(), g.buf.VA())
	c, err := l.Accept(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	var res rdma.Result
	for range cfg.iters {
		if res, err = c.Recv(ctx, g.buf.All()); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, " Device memory bandwidth test of %d-byte transfers, %d iterations, done\n", cfg.size, cfg.iters)
	writePath(stdout, "sender", res)
	return c.Close()
}

// rdmaGaudiClient sends cfg.iters transfers of cfg.size bytes of device
// memory (package rdma's Send) and reports the bandwidth in perftest's
// columns, each transfer counted from its call to its return (when the
// receiver has the bytes in device memory), then the path each side took.
func rdmaGaudiClient(ctx context.Context, cmd *cli.Command, cfg *rdmaConfig, stdout io.Writer) error {
	g, closeAll, err := openGaudiEnd(cmd, uint64(cfg.size))
	if err != nil {
		return err
	}
	defer closeAll()
	if err := g.e.Memset(ctx, g.buf.All(), 0x5a5a5a5a5a5a5a5a); err != nil {
		return err
	}
	c, err := rdma.Dial(ctx, netip.AddrPortFrom(cfg.server, uint16(cfg.port)), g.m, g.e, cfg.rdmaOptions())
	if err != nil {
		return err
	}
	defer c.Close()
	posted := make([]time.Duration, cfg.iters)
	completed := make([]time.Duration, cfg.iters)
	var res rdma.Result
	start := time.Now()
	for i := range cfg.iters {
		posted[i] = time.Since(start)
		if res, err = c.Send(ctx, g.buf.All()); err != nil {
			return err
		}
		completed[i] = time.Since(start)
	}
	writeBWHeader(stdout, cfg.gbits)
	writeBW(stdout, computeBW(uint64(cfg.size), posted, completed, 1, cfg.gbits))
	fmt.Fprintln(stdout, rdmaResultLine)
	writePath(stdout, "receiver", res)
	return c.Close()
}
