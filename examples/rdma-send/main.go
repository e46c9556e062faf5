// Command rdma-send moves Gaudi device memory to another Gaudi over RDMA
// and verifies every byte: the receiving node listens, the sending node
// connects; both ends hold the bytes in device memory, and package rdma
// chooses the path (zero copy where the NIC registers device memory, the
// DMA-engine pipeline through pinned host memory where it does not) and
// says which ran.
//
//	go run ./examples/rdma-send -listen 10.0.0.1:7471 [-size 64M]    # receiving node
//	go run ./examples/rdma-send -connect 10.0.0.1:7471 [-size 64M]   # sending node
//	go run ./examples/rdma-send -loopback 10.0.0.1:7471 [-size 64M]  # both ends, one process
//
// The address is an IP address of an RDMA device (its RoCE GID), which
// the RDMA CM resolves; both ends must agree on -size. Soft-RoCE makes
// one on any machine: modprobe rdma_rxe rdma_ucm && rdma link add rxe0
// type rxe netdev eth0.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"

	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/rdma"
)

// config is the command line.
type config struct {
	listen, connect, loopback string
	size                      cli.Size
	path                      string
}

func newCommand(cfg *config) *cli.Command {
	cmd := cli.New("rdma-send", "rdma-send [-device SEL] (-listen|-connect|-loopback) ADDR:PORT [-size SIZE] [-path auto|zero-copy|pipelined]",
		"rdma-send sends device memory from one Gaudi to another over RDMA and verifies it on the\n"+
			"receiving side.")
	cfg.size = 64 << 20
	cmd.Flags.StringVar(&cfg.listen, "listen", "", "receive: listen on `ADDR:PORT`, an address of an RDMA device")
	cmd.Flags.StringVar(&cfg.connect, "connect", "", "send: connect to the receiver at `ADDR:PORT`")
	cmd.Flags.StringVar(&cfg.loopback, "loopback", "", "both ends in this process, the receiver listening on `ADDR:PORT`")
	cmd.Flags.Var(&cfg.size, "size", "bytes to send (`SIZE`)")
	cmd.Flags.StringVar(&cfg.path, "path", "auto", "force a path: auto, zero-copy or pipelined")
	return cmd
}

func main() {
	var cfg config
	cmd := newCommand(&cfg)
	cmd.ParseOrExit(os.Args[1:])
	if cmd.Flags.NArg() > 0 {
		cmd.Fatal(cmd.UsageError("unexpected argument %q", cmd.Flags.Arg(0)))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cmd.Fatal(run(ctx, cmd, &cfg, os.Stdout))
}

// pattern is the bytes the sender sends and the receiver expects: both
// derive them from the size alone.
func pattern(n uint64) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*131 + i>>12)
	}
	return p
}

// node is one end: the Gaudi's memory, a DMA engine, a device buffer.
type node struct {
	m   *memory.Manager
	e   *dma.Engine
	buf *memory.Buffer
}

func run(ctx context.Context, cmd *cli.Command, cfg *config, w io.Writer) error {
	var opts rdma.Options
	switch cfg.path {
	case "auto":
	case "zero-copy":
		opts.Path = rdma.PathZeroCopy
	case "pipelined":
		opts.Path = rdma.PathPipelined
	default:
		return cmd.UsageError("-path %q: want auto, zero-copy or pipelined", cfg.path)
	}
	n := cfg.size.Bytes()
	if n == 0 {
		return cmd.UsageError("-size 0: nothing to send")
	}
	d, err := cmd.OpenDevice()
	if err != nil {
		return err
	}
	defer d.Close()
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		return err
	}
	defer m.Close()
	e, err := dma.New(m, dma.Options{})
	if err != nil {
		return err
	}
	defer e.Close()
	modes := 0
	for _, s := range []string{cfg.listen, cfg.connect, cfg.loopback} {
		if s != "" {
			modes++
		}
	}
	if modes != 1 {
		fmt.Fprintln(w, "rdma-send: give one of -listen, -connect or -loopback ADDR:PORT (an address of an RDMA device); see -h")
		fmt.Fprintf(w, "rdma-send: %s is ready; nothing sent\n", d)
		return nil
	}
	newNode := func() (*node, error) {
		b, err := m.Alloc(n, memory.AllocOptions{})
		return &node{m: m, e: e, buf: b}, err
	}

	switch {
	case cfg.listen != "":
		addr, err := netip.ParseAddrPort(cfg.listen)
		if err != nil {
			return cmd.UsageError("-listen: %v", err)
		}
		r, err := newNode()
		if err != nil {
			return err
		}
		defer r.buf.Close()
		return receive(ctx, w, addr, r, opts, nil)
	case cfg.connect != "":
		addr, err := netip.ParseAddrPort(cfg.connect)
		if err != nil {
			return cmd.UsageError("-connect: %v", err)
		}
		s, err := newNode()
		if err != nil {
			return err
		}
		defer s.buf.Close()
		return send(ctx, w, addr, s, opts)
	}
	addr, err := netip.ParseAddrPort(cfg.loopback)
	if err != nil {
		return cmd.UsageError("-loopback: %v", err)
	}
	r, err := newNode()
	if err != nil {
		return err
	}
	defer r.buf.Close()
	s, err := newNode()
	if err != nil {
		return err
	}
	defer s.buf.Close()
	listening := make(chan struct{})
	got := make(chan error, 1)
	go func() { got <- receive(ctx, w, addr, r, opts, listening) }()
	select {
	case <-listening:
	case err := <-got:
		return err
	}
	return errors.Join(send(ctx, w, addr, s, opts), <-got)
}

// receive listens on addr, takes one connection and one transfer into
// r's buffer, and verifies it. listening, when not nil, is closed once
// the listener is up.
func receive(ctx context.Context, w io.Writer, addr netip.AddrPort, r *node, opts rdma.Options, listening chan<- struct{}) error {
	l, err := rdma.Listen(addr, r.m, r.e, opts)
	if err != nil {
		return err
	}
	defer l.Close()
	fmt.Fprintf(w, "receiver: listening on %v, %d bytes of device memory at %#x\n", addr, r.buf.Size(), r.buf.VA())
	if listening != nil {
		close(listening)
	}
	c, err := l.Accept(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	res, err := c.Recv(ctx, r.buf.All())
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "receiver: %d bytes in %d chunks, path %v (sender's: %v)\n", res.Bytes, res.Chunks, res.Path, res.PeerPath)
	h, err := r.m.AllocHost(r.buf.Size(), memory.HostOptions{})
	if err != nil {
		return err
	}
	defer h.Close()
	if err := r.e.CopyToHost(ctx, h.All(), r.buf.All()); err != nil {
		return err
	}
	want := pattern(r.buf.Size())
	for i, b := range h.Bytes() {
		if b != want[i] {
			return fmt.Errorf("receiver: byte %d is %#x, want %#x", i, b, want[i])
		}
	}
	fmt.Fprintf(w, "receiver: verified: %d bytes of device memory identical to the sender's\n", r.buf.Size())
	return c.Close()
}

// send fills s's buffer with the pattern, connects to addr and sends it.
func send(ctx context.Context, w io.Writer, addr netip.AddrPort, s *node, opts rdma.Options) error {
	h, err := s.m.AllocHost(s.buf.Size(), memory.HostOptions{})
	if err != nil {
		return err
	}
	defer h.Close()
	copy(h.Bytes(), pattern(s.buf.Size()))
	if err := s.e.CopyToDevice(ctx, s.buf.All(), h.All()); err != nil {
		return err
	}
	c, err := rdma.Dial(ctx, addr, s.m, s.e, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	res, err := c.Send(ctx, s.buf.All())
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "sender: %d bytes of device memory at %#x sent in %d chunks, path %v (receiver's: %v)\n",
		res.Bytes, s.buf.VA(), res.Chunks, res.Path, res.PeerPath)
	return c.Close()
}
