package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/ib/cm"
	"github.com/gaudi-go/gaudi/internal/cli"
	"golang.org/x/sys/unix"
)

// rdmaConfig is the command line of hlperf -rdma, whose flags are named
// after perftest's (ib_write_bw, ib_write_lat).
type rdmaConfig struct {
	lat     bool
	size    cli.Size
	iters   int
	txDepth int
	cqMod   int
	port    int
	bind    string
	gbits   bool
	server  netip.Addr // the client's peer; invalid on the server
	// gaudi moves device memory on both ends with package rdma (as
	// perftest's --use_cuda does GPU memory), gaudiPath forces its path.
	gaudi     bool
	gaudiPath string
}

const rdmaSynopsis = `hlperf -rdma [-lat] [-s SIZE] [-n ITERS] [-t DEPTH] [-Q N] [-p PORT]
       [-bind ADDR] [-report_gbits] [-R] [SERVER]
hlperf -rdma -use_gaudi [-device SEL] [-gaudi_path auto|zero-copy|pipelined] [-s SIZE] [-n ITERS]
       [-p PORT] [-bind ADDR] [-report_gbits] [SERVER]`

const rdmaDoc = `hlperf -rdma measures RDMA WRITE bandwidth (as ib_write_bw does) or, with
-lat, RDMA WRITE ping-pong latency (as ib_write_lat does) between two hlperf
processes: without SERVER it waits for one client on -bind:-p, with SERVER it
connects there. Connections go through the kernel's RDMA CM (always: -R is
accepted for perftest's command lines), on the RDMA device that owns the
address; host memory is registered on both sides. The client prints the
report in perftest's columns: #bytes, #iterations, BW peak, BW average
(MB/sec = 2^20 bytes/s, or Gb/sec with -report_gbits), MsgRate (Mpps); or
t_min, t_max, t_typical, t_avg, t_stdev, 99% and 99.9% percentiles in usec
(half a round trip, the slowest 2 samples dropped, as perftest does).

With -use_gaudi (perftest's --use_cuda for Gaudi memory) both ends hold the
bytes in device memory and move them with package rdma: each of -n transfers
of -s bytes is one Send on the client and one Recv on the server (both sides
need the same -s and -n), timed from the call until the receiver has the
bytes in device memory; under the report, a line says which path each side
took: zero-copy (the NIC registered the device memory's dma-buf) or
pipelined (the DMA engines staged it through pinned host memory).`

// newRDMAConfig returns the -rdma command with its flags bound.
func newRDMAConfig() (*rdmaConfig, *cli.Command) {
	cfg := &rdmaConfig{}
	cmd := cli.New("hlperf", rdmaSynopsis, rdmaDoc)
	fs := cmd.Flags
	fs.Bool("rdma", true, "RDMA mode (this command line)")
	fs.BoolVar(&cfg.lat, "lat", false, "measure write latency (ib_write_lat) instead of bandwidth (ib_write_bw)")
	fs.Var(&cfg.size, "s", "message `SIZE` (default 65536, or 2 with -lat)")
	fs.IntVar(&cfg.iters, "n", 0, "iterations (default 5000, or 1000 with -lat)")
	fs.IntVar(&cfg.txDepth, "t", 128, "writes in flight (bandwidth)")
	fs.IntVar(&cfg.cqMod, "Q", 100, "one completion per this many writes (bandwidth)")
	fs.IntVar(&cfg.port, "p", 18515, "port")
	fs.StringVar(&cfg.bind, "bind", "0.0.0.0", "the server's address")
	fs.BoolVar(&cfg.gbits, "report_gbits", false, "report bandwidth in Gb/sec (1e9 bits)")
	fs.Bool("R", true, "connect with the RDMA CM (always)")
	fs.BoolVar(&cfg.gaudi, "use_gaudi", false, "device memory on both ends (package rdma), as perftest's --use_cuda")
	fs.StringVar(&cfg.gaudiPath, "gaudi_path", "auto", "with -use_gaudi, force a path: auto, zero-copy or pipelined")
	return cfg, cmd
}

// rdmaMaxSize bounds -s: perftest's MAX_SIZE for -a sweeps is 8 MiB; a
// single size may be larger, up to what one rxe message carries (2 GiB).
const rdmaMaxSize = 1 << 31

func (cfg *rdmaConfig) check(cmd *cli.Command) error {
	if cfg.size == 0 {
		cfg.size = 65536
		if cfg.lat {
			cfg.size = 2
		}
	}
	if cfg.iters == 0 {
		cfg.iters = 5000
		if cfg.lat {
			cfg.iters = 1000
		}
	}
	switch {
	case cfg.size > rdmaMaxSize:
		return cmd.UsageError("-s %d: at most %d", cfg.size, rdmaMaxSize)
	case cfg.iters < 5 || cfg.iters > 100_000_000: // perftest's MIN_ITER, MAX_ITER
		return cmd.UsageError("-n %d: between 5 and 100000000", cfg.iters)
	case cfg.txDepth < 1 || cfg.txDepth > 15000: // MIN_TX, MAX_TX
		return cmd.UsageError("-t %d: between 1 and 15000", cfg.txDepth)
	case cfg.cqMod < 1 || cfg.cqMod > 1024: // MIN_CQ_MOD, MAX_CQ_MOD
		return cmd.UsageError("-Q %d: between 1 and 1024", cfg.cqMod)
	case cfg.gaudi && cfg.lat:
		return cmd.UsageError("-use_gaudi measures bandwidth only, not -lat")
	case cfg.gaudiPath != "auto" && cfg.gaudiPath != "zero-copy" && cfg.gaudiPath != "pipelined":
		return cmd.UsageError("-gaudi_path %q: want auto, zero-copy or pipelined", cfg.gaudiPath)
	case cfg.port < 1 || cfg.port > 65535:
		return cmd.UsageError("-p %d: not a port", cfg.port)
	case cmd.Flags.NArg() > 1:
		return cmd.UsageError("one SERVER at most, got %q", cmd.Flags.Args())
	}
	if cmd.Flags.NArg() == 1 {
		a, err := netip.ParseAddr(cmd.Flags.Arg(0))
		if err != nil || !a.Is4() {
			return cmd.UsageError("SERVER %q: not an IPv4 address", cmd.Flags.Arg(0))
		}
		cfg.server = a
	}
	if _, err := netip.ParseAddr(cfg.bind); err != nil {
		return cmd.UsageError("-bind %q: not an IP address", cfg.bind)
	}
	return nil
}

// isRDMA reports whether the command line asks for the -rdma mode.
func isRDMA(args []string) bool {
	for _, a := range args {
		switch a {
		case "-rdma", "--rdma", "-rdma=true", "--rdma=true":
			return true
		case "--":
			return false
		}
	}
	return false
}

// hlperfRDMA runs hlperf -rdma and returns its exit status.
func hlperfRDMA(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, cmd := newRDMAConfig()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Parse(args); err != nil {
		return cli.ExitCode(err)
	}
	if err := cfg.check(cmd); err != nil {
		return cli.ExitCode(err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case cfg.gaudi && cfg.server.IsValid():
		err = rdmaGaudiClient(ctx, cmd, cfg, stdout)
	case cfg.gaudi:
		err = rdmaGaudiServer(ctx, cmd, cfg, stdout)
	case cfg.server.IsValid():
		err = rdmaClient(ctx, cfg, stdout)
	default:
		err = rdmaServer(ctx, cfg, stdout)
	}
	if err != nil && ctx.Err() != nil {
		cmd.Report(err)
		return 130
	}
	return cmd.Report(err)
}

// The hello each side sends in the CM's private data (the client's in
// CONNECT, at most 56 bytes; the server's in ACCEPT): magic "hlpf",
// version, test (0 bandwidth, 1 latency), size and iterations (client
// only), then the rkey and address of the buffer the peer writes into.
// Little-endian; the peer's numbers are checked, never trusted: a size
// the server did not agree to ends the run.
const (
	helloMagic   = "hlpf"
	helloVersion = 1
	helloLen     = 40
)

type hello struct {
	lat   bool
	size  uint64
	iters uint64
	rkey  uint32
	addr  uint64
}

func (h hello) encode() []byte {
	b := make([]byte, helloLen)
	copy(b, helloMagic)
	b[4] = helloVersion
	if h.lat {
		b[5] = 1
	}
	le := binary.LittleEndian
	le.PutUint64(b[8:], h.size)
	le.PutUint64(b[16:], h.iters)
	le.PutUint32(b[24:], h.rkey)
	le.PutUint64(b[32:], h.addr)
	return b
}

// errBadHello is a peer whose hello is not hlperf's.
var errBadHello = errors.New("the peer is not an hlperf -rdma of this version")

func decodeHello(b []byte) (hello, error) {
	if len(b) < helloLen || string(b[:4]) != helloMagic || b[4] != helloVersion || b[5] > 1 {
		return hello{}, errBadHello
	}
	le := binary.LittleEndian
	return hello{lat: b[5] == 1, size: le.Uint64(b[8:]), iters: le.Uint64(b[16:]), rkey: le.Uint32(b[24:]), addr: le.Uint64(b[32:])}, nil
}

// rdmaEnd is one side's verbs objects and its registered buffer: the
// bytes it writes from at 0, and the bytes the peer writes into at
// recvOff.
type rdmaEnd struct {
	ctx     *ib.Context
	pd      *ib.PD
	cq, rcq *ib.CQ
	qp      *ib.QP
	buf     []byte
	mr      *ib.MR
	recvOff int
}

// newRDMAEnd opens the device the CM resolved id to and makes a QP with
// depth send slots and a buffer for messages of size bytes.
func newRDMAEnd(id *cm.ID, size, depth int) (e *rdmaEnd, err error) {
	dev, err := id.Device()
	if err != nil {
		return nil, err
	}
	e = &rdmaEnd{}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.close())
			e = nil
		}
	}()
	// Page-aligned halves, so that the last byte of each message sits in
	// a word of its own half (the latency test polls it).
	e.recvOff = (size + 4095) &^ 4095
	if e.buf, err = unix.Mmap(-1, 0, 2*e.recvOff, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err != nil {
		return nil, fmt.Errorf("map %d bytes of host memory: %w", 2*e.recvOff, err)
	}
	if e.ctx, err = ib.Open(dev); err != nil {
		return e, err
	}
	if e.pd, err = e.ctx.AllocPD(); err != nil {
		return e, err
	}
	if e.cq, err = e.ctx.CreateCQ(ib.CQOptions{Entries: uint32(depth)}); err != nil {
		return e, err
	}
	if e.rcq, err = e.ctx.CreateCQ(ib.CQOptions{Entries: 1}); err != nil {
		return e, err
	}
	// 64 bytes of inline data at least: an 8-byte latency write goes
	// inline, as perftest's does (its default inline size for WRITE is
	// 220, DEF_INLINE_WRITE).
	if e.qp, err = e.pd.CreateQP(ib.QPOptions{SendCQ: e.cq, RecvCQ: e.rcq, Caps: ib.QPCaps{MaxSendWR: uint32(depth), MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInline: 64}}); err != nil {
		return e, err
	}
	if e.mr, err = e.pd.RegBytes(e.buf, ib.AccessLocalWrite|ib.AccessRemoteWrite); err != nil {
		return e, err
	}
	return e, id.ModifyQP(e.qp, ib.QPSInit)
}

func (e *rdmaEnd) close() error {
	var errs []error
	for _, c := range []interface{ Close() error }{e.qp, e.cq, e.rcq, e.mr, e.pd, e.ctx} {
		if c != nil && !isNilCloser(c) {
			errs = append(errs, c.Close())
		}
	}
	if e.buf != nil {
		errs = append(errs, unix.Munmap(e.buf))
		e.buf = nil
	}
	return errors.Join(errs...)
}

// isNilCloser reports a typed nil in the closer list (an object that was
// never made).
func isNilCloser(c interface{ Close() error }) bool {
	switch v := c.(type) {
	case *ib.QP:
		return v == nil
	case *ib.CQ:
		return v == nil
	case *ib.MR:
		return v == nil
	case *ib.PD:
		return v == nil
	case *ib.Context:
		return v == nil
	}
	return false
}

// helloFor is the hello that tells the peer where to write.
func (e *rdmaEnd) helloFor(cfg *rdmaConfig) hello {
	return hello{lat: cfg.lat, size: uint64(cfg.size), iters: uint64(cfg.iters), rkey: e.mr.RKey(), addr: e.mr.IOVA() + uint64(e.recvOff)}
}

// depth is the send queue's depth for a run.
func (cfg *rdmaConfig) depth() int {
	if cfg.lat {
		return 2
	}
	return cfg.txDepth
}

func rdmaServer(ctx context.Context, cfg *rdmaConfig, stdout io.Writer) error {
	ch, err := cm.Open()
	if err != nil {
		return err
	}
	defer ch.Close()
	lid, err := ch.CreateID()
	if err != nil {
		return err
	}
	defer lid.Close()
	if err := lid.Bind(netip.AddrPortFrom(netip.MustParseAddr(cfg.bind), uint16(cfg.port))); err != nil {
		return err
	}
	if err := lid.Listen(1); err != nil {
		return err
	}
	fmt.Fprintf(stdout, " Waiting for a client on %s port %d\n", cfg.bind, cfg.port)
	id, ev, err := lid.GetRequest(ctx)
	if err != nil {
		return err
	}
	defer id.Close()
	h, err := decodeHello(ev.PrivateData)
	if err == nil && (h.size > rdmaMaxSize || h.size == 0) {
		err = fmt.Errorf("the client asks for %d-byte messages: %w", h.size, errBadHello)
	}
	if err != nil {
		return errors.Join(err, id.Reject(nil))
	}
	cfg.lat, cfg.size, cfg.iters = h.lat, cli.Size(h.size), int(min(h.iters, 100_000_000))
	e, err := newRDMAEnd(id, int(cfg.size), cfg.depth())
	if err != nil {
		return errors.Join(err, id.Reject(nil))
	}
	defer e.close()
	if err := id.Accept(ctx, e.qp, cm.ConnParam{PrivateData: e.helloFor(cfg).encode()}); err != nil {
		return err
	}
	if cfg.lat {
		if _, err := pingPong(ctx, e, h, false, cfg.iters); err != nil {
			return err
		}
	}
	// The client disconnects when it is done.
	for {
		ev, err := id.NextEvent(ctx)
		if err != nil {
			return err
		}
		if ev.Type == cm.EventDisconnected {
			break
		}
	}
	fmt.Fprintf(stdout, " %s test of %d-byte writes, %d iterations, done by the client\n", map[bool]string{false: "Bandwidth", true: "Latency"}[cfg.lat], cfg.size, cfg.iters)
	return id.Disconnect(e.qp)
}

func rdmaClient(ctx context.Context, cfg *rdmaConfig, stdout io.Writer) error {
	ch, err := cm.Open()
	if err != nil {
		return err
	}
	defer ch.Close()
	id, err := ch.CreateID()
	if err != nil {
		return err
	}
	defer id.Close()
	dst := netip.AddrPortFrom(cfg.server, uint16(cfg.port))
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, dst); err != nil {
		return err
	}
	if err := id.ResolveRoute(ctx); err != nil {
		return err
	}
	e, err := newRDMAEnd(id, int(cfg.size), cfg.depth())
	if err != nil {
		return err
	}
	defer e.close()
	resp, err := id.Connect(ctx, e.qp, cm.ConnParam{PrivateData: e.helloFor(cfg).encode()})
	if err != nil {
		return err
	}
	peer, err := decodeHello(resp.PrivateData)
	if err != nil {
		return errors.Join(err, id.Disconnect(e.qp))
	}
	if cfg.lat {
		posted, err := pingPong(ctx, e, peer, true, cfg.iters)
		if err == nil {
			var r latReport
			if r, err = computeLat(uint64(cfg.size), posted); err == nil {
				writeLatHeader(stdout)
				writeLat(stdout, r)
				fmt.Fprintln(stdout, rdmaResultLine)
			}
		}
		return errors.Join(err, id.Disconnect(e.qp))
	}
	posted, completed, err := writeBurst(ctx, e, peer, cfg)
	if err == nil {
		writeBWHeader(stdout, cfg.gbits)
		writeBW(stdout, computeBW(uint64(cfg.size), posted, completed, cfg.cqMod, cfg.gbits))
		fmt.Fprintln(stdout, rdmaResultLine)
	}
	return errors.Join(err, id.Disconnect(e.qp))
}

// spinCheck is how many empty polls pass between looks at ctx.
const spinCheck = 1 << 12

// writeBurst posts cfg.iters RDMA WRITEs of cfg.size bytes to the peer's
// buffer, at most cfg.txDepth in flight, each cfg.cqMod-th (and the last)
// signalled, as ib_write_bw does; it returns when each write was posted
// and when the completions were polled (at signalled writes).
func writeBurst(ctx context.Context, e *rdmaEnd, peer hello, cfg *rdmaConfig) (posted, completed []time.Duration, err error) {
	n, size := cfg.iters, int(cfg.size)
	if peer.size < uint64(size) {
		return nil, nil, fmt.Errorf("the server took %d-byte messages, not %d: %w", peer.size, size, errBadHello)
	}
	posted = make([]time.Duration, n)
	completed = make([]time.Duration, n)
	sg := []ib.SGE{{Addr: e.mr.IOVA(), Length: uint32(size), LKey: e.mr.LKey()}}
	var wcs [16]ib.WC
	var wrs [64]ib.SendWR
	start := time.Now()
	scnt, ccnt, idle := 0, 0, 0
	for ccnt < n {
		k := 0
		for scnt+k < n && scnt+k-ccnt < cfg.txDepth && k < len(wrs) {
			i := scnt + k
			var fl ib.SendFlags
			if (i+1)%cfg.cqMod == 0 || i == n-1 {
				fl = ib.SendSignaled
			}
			wrs[k] = ib.SendWR{ID: uint64(i), Op: ib.OpRDMAWrite, Flags: fl, RemoteAddr: peer.addr, RKey: peer.rkey, SG: sg}
			k++
		}
		if k > 0 {
			t := time.Since(start)
			m, err := e.qp.PostSend(wrs[:k]...)
			for i := scnt; i < scnt+m; i++ {
				posted[i] = t
			}
			scnt += m
			if err != nil && !errors.Is(err, ib.ErrQueueFull) {
				return nil, nil, err
			}
		}
		m, err := e.cq.Poll(wcs[:])
		if err != nil {
			return nil, nil, err
		}
		t := time.Since(start)
		for _, wc := range wcs[:m] {
			if err := wc.Err(); err != nil {
				return nil, nil, err
			}
			ccnt = int(wc.ID) + 1
			completed[wc.ID] = t
		}
		if m == 0 {
			if idle++; idle%spinCheck == 0 && ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
		}
	}
	return posted, completed, nil
}

// pingPong runs ib_write_lat's exchange: each side writes size bytes
// into the peer's buffer, the last byte holding the iteration number,
// and waits to see the peer's write of the same number land in its own
// buffer before writing the next (the server waits first). It returns
// when each of the client's writes was posted.
func pingPong(ctx context.Context, e *rdmaEnd, peer hello, client bool, iters int) ([]time.Duration, error) {
	size := int(peer.size)
	if size < 1 || size > e.recvOff {
		return nil, fmt.Errorf("the peer's %d-byte messages do not fit the %d-byte buffer: %w", size, e.recvOff, errBadHello)
	}
	posted := make([]time.Duration, iters)
	out := e.buf[:size]
	wr := ib.SendWR{Op: ib.OpRDMAWrite, Flags: ib.SendSignaled, RemoteAddr: peer.addr, RKey: peer.rkey}
	inline := size <= int(e.qp.Caps().MaxInline)
	if inline {
		wr.Flags |= ib.SendInline
		wr.Inline = out
	} else {
		wr.SG = []ib.SGE{{Addr: e.mr.IOVA(), Length: uint32(size), LKey: e.mr.LKey()}}
	}
	var wcs [1]ib.WC
	start := time.Now()
	for i := range iters {
		if i > 0 || !client {
			if err := waitByte(ctx, e.buf, e.recvOff+size-1, byte(i+1-btoi(client))); err != nil {
				return nil, err
			}
		}
		posted[i] = time.Since(start)
		out[size-1] = byte(i + 1)
		wr.ID = uint64(i)
		if _, err := e.qp.PostSend(wr); err != nil {
			return nil, err
		}
		for idle := 1; ; idle++ {
			m, err := e.cq.Poll(wcs[:])
			if err != nil {
				return nil, err
			}
			if m == 1 {
				if err := wcs[0].Err(); err != nil {
					return nil, err
				}
				break
			}
			if idle%spinCheck == 0 && ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
	}
	if client {
		// The server's answer to the last write.
		if err := waitByte(ctx, e.buf, e.recvOff+size-1, byte(iters)); err != nil {
			return nil, err
		}
	}
	return posted, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
