package rdma

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/ib/cm"
	"github.com/gaudi-go/gaudi/internal/warm"
	"github.com/gaudi-go/gaudi/memory"
)

// Conn is an RDMA connection that carries device memory: an RC queue pair
// connected through the RDMA CM, on the NIC the peer's address resolves
// to, with its staging rings of pinned host memory (mapped for the
// Gaudi's DMA engines and registered with the NIC), and the DMA Engine
// that fills and drains them.
//
// A Conn is safe for concurrent use; one Send and one Recv may run at a
// time. A transfer that fails or is cancelled shuts the connection
// (ErrBroken afterwards): the peer's state is unknown then.
type Conn struct {
	mem   *memory.Manager
	eng   *dma.Engine
	opts  Options
	chunk uint32     // the chunk both ends use: the smaller ChunkSize
	peer  Descriptor // the peer's receive ring, from the CM private data

	ch   *sharedChannel
	id   *cm.ID
	ictx *ib.Context
	pd   *ib.PD
	cc   *ib.CompChannel
	cq   *ib.CQ // sends and receives both
	qp   *ib.QP

	// sbuf holds the send staging slots (Depth of opts.ChunkSize) and
	// then the control receive buffers; rbuf is the receive ring the peer
	// writes into. smr and rmr are their registrations.
	sbuf, rbuf *memory.HostBuffer
	smr, rmr   *ib.MR
	// nic is the queue pair, CQ and CM ID as the data path uses them
	// (ibNIC; a fake NIC in tests); skey and rkey name sbuf and rbuf to it.
	nic        nic
	skey, rkey ringKey
	// regs caches the zero-copy registrations of device ranges.
	regs regCache
	// refused is the error with which the NIC refused a dma-buf
	// registration as something it cannot do at all
	// (ib.ErrDMABufNotSupported): a property of the NIC, not of a buffer,
	// so later transfers take the pipeline without exporting and asking
	// again.
	refused atomic.Pointer[error]
	// committed is set once this side's fin told the peer that every
	// later Recv takes the ring (ringOnly): they send no descriptor, and
	// the peer's Sends write at once. peerCommitted is set once the
	// peer's fin said so. Each belongs to its side's transfers, which
	// begin and end one after another.
	committed     bool
	peerCommitted bool
	// probing is set while a keep-alive probe is outstanding; probed
	// counts the probes the peer's NIC acknowledged.
	probing atomic.Bool
	probed  atomic.Int64
	ctlOff  uint64 // where the control buffers start in sbuf
	nctl    int

	snd, rcv side

	life context.Context // ends at Close: the dispatcher and watcher stop
	stop context.CancelFunc
	bg   sync.WaitGroup // dispatcher, CM watcher
	xfer sync.WaitGroup // transfers, also those finishing in the background
	// bodies runs the transfers' bodies on goroutines kept from one
	// transfer to the next (internal/warm): one per side stays.
	bodies *warm.Pool
	// mu orders begin's xfer.Add before Close's xfer.Wait: closing is set
	// under it, and no transfer begins after.
	mu      sync.Mutex
	closing bool

	brokeOnce sync.Once
	broken    chan struct{} // closed when the connection is shut
	brokenErr error

	// left is why the peer left (its DISCONNECT), set before the QP goes
	// to the error state: the shut waits for the flushed receives, behind
	// every completion that came before, so that a transfer the peer
	// finished before it left is not reported as failed.
	leftMu sync.Mutex
	left   error

	closeOnce sync.Once
	closeErr  error
}

// side is one direction's state: the dispatcher's events for it, and
// whether a transfer runs.
type side struct {
	ev   chan event
	mu   sync.Mutex
	busy bool
}

// event is what the dispatcher hands a side.
type event struct {
	kind  eventKind
	value uint32 // seq, credit count, path, abort code
	n     uint32 // byte length of a chunk
	// last marks a chunk that carries the sender's done, path its path.
	last bool
	path Path
	desc Descriptor
	err  error
}

type eventKind uint8

const (
	evDesc    eventKind = iota + 1 // sender: the receiver's descriptor
	evCredit                       // sender: a slot is free again
	evSent                         // a data WRITE completed (seq)
	evCtlSent                      // a control SEND completed
	evChunk                        // receiver: chunk seq arrived
	evDone                         // receiver: the sender is done
	evAbort                        // the peer gave up
	evFin                          // sender: the receiver has every byte
)

// sharedChannel is a CM channel shared by a Listener and the Conns it
// accepted: closing it destroys every ID on it, so it closes with its
// last user.
type sharedChannel struct {
	ch   *cm.Channel
	mu   sync.Mutex
	refs int
}

func (s *sharedChannel) ref() { s.mu.Lock(); s.refs++; s.mu.Unlock() }

func (s *sharedChannel) unref() error {
	s.mu.Lock()
	s.refs--
	last := s.refs == 0
	s.mu.Unlock()
	if last {
		return s.ch.Close()
	}
	return nil
}

// Dial connects to a Listener at addr (an IP address of an RDMA device,
// resolved by the RDMA CM) and returns the connection. m and e are the
// Gaudi's memory manager and a DMA Engine of it: the staging rings are
// allocated from m and copied by e.
func Dial(ctx context.Context, addr netip.AddrPort, m *memory.Manager, e *dma.Engine, opts Options) (*Conn, error) {
	if err := opts.normalize(); err != nil {
		return nil, fmt.Errorf("rdma dial: %w", err)
	}
	ch, err := cm.Open()
	if err != nil {
		return nil, fmt.Errorf("rdma dial: %w", err)
	}
	sc := &sharedChannel{ch: ch, refs: 1}
	id, err := ch.CreateID()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("rdma dial: %w", err), sc.unref())
	}
	fail := func(err error) (*Conn, error) {
		return nil, errors.Join(fmt.Errorf("rdma dial %v: %w", addr, err), id.Close(), sc.unref())
	}
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, addr); err != nil {
		return fail(err)
	}
	if err := id.ResolveRoute(ctx); err != nil {
		return fail(err)
	}
	c, err := newConn(id, sc, m, e, opts) // owns id and sc from here
	if err != nil {
		return nil, fmt.Errorf("rdma dial %v: %w", addr, err)
	}
	ring, err := c.ringDescriptor().MarshalBinary()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("rdma dial %v: %w", addr, err), c.Close())
	}
	ev, err := id.Connect(ctx, c.qp, cm.ConnParam{PrivateData: ring})
	if err == nil {
		err = c.setPeer(ev.PrivateData)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("rdma dial %v: %w", addr, err), c.Close())
	}
	c.start()
	return c, nil
}

// Listener accepts connections on an address. It is safe for concurrent
// use.
type Listener struct {
	mem  *memory.Manager
	eng  *dma.Engine
	opts Options
	sc   *sharedChannel
	id   *cm.ID

	mu     sync.Mutex
	closed bool
}

// Listen listens for Dial on addr, an IP address of an RDMA device (the
// zero address: every one) and a port.
func Listen(addr netip.AddrPort, m *memory.Manager, e *dma.Engine, opts Options) (*Listener, error) {
	if err := opts.normalize(); err != nil {
		return nil, fmt.Errorf("rdma listen: %w", err)
	}
	ch, err := cm.Open()
	if err != nil {
		return nil, fmt.Errorf("rdma listen: %w", err)
	}
	sc := &sharedChannel{ch: ch, refs: 1}
	id, err := ch.CreateID()
	if err == nil {
		if err = id.Bind(addr); err == nil {
			err = id.Listen(0)
		}
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("rdma listen %v: %w", addr, err), sc.unref())
	}
	return &Listener{mem: m, eng: e, opts: opts, sc: sc, id: id}, nil
}

// Accept waits for a connection request and accepts it. A request whose
// private data holds no valid descriptor is rejected with an error
// matching ErrBadDescriptor (or the version errors).
func (l *Listener) Accept(ctx context.Context) (*Conn, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, fmt.Errorf("rdma accept: %w", ErrClosed)
	}
	l.sc.ref()
	l.mu.Unlock()
	id, ev, err := l.id.GetRequest(ctx)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("rdma accept: %w", err), l.sc.unref())
	}
	var peer Descriptor
	if err := peer.UnmarshalBinary(ev.PrivateData); err != nil {
		return nil, errors.Join(fmt.Errorf("rdma accept: %w", err), id.Reject(nil), id.Close(), l.sc.unref())
	}
	c, err := newConn(id, l.sc, l.mem, l.eng, l.opts) // owns id and the reference from here
	if err != nil {
		// Closing the ID rejects the request (the kernel's DESTROY_ID).
		return nil, fmt.Errorf("rdma accept: %w", err)
	}
	if err := c.setPeer(ev.PrivateData); err != nil {
		return nil, errors.Join(fmt.Errorf("rdma accept: %w", err), id.Reject(nil), c.Close())
	}
	ring, err := c.ringDescriptor().MarshalBinary()
	if err == nil {
		err = id.Accept(ctx, c.qp, cm.ConnParam{PrivateData: ring})
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("rdma accept: %w", err), c.Close())
	}
	c.start()
	return c, nil
}

// Close stops listening. Connections it accepted stay up. Closing twice
// does nothing.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	return errors.Join(l.id.Close(), l.sc.unref())
}

// newConn makes the connection's objects on the ID's device, moves the
// QP to INIT and posts the control receives. It owns id and a reference
// to sc from then on, also when it fails.
func newConn(id *cm.ID, sc *sharedChannel, m *memory.Manager, e *dma.Engine, opts Options) (_ *Conn, err error) {
	c := &Conn{mem: m, eng: e, opts: opts, chunk: opts.ChunkSize, ch: sc, id: id, broken: make(chan struct{}), bodies: warm.New(2)}
	c.life, c.stop = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
		}
	}()
	if m == nil || e == nil {
		return nil, fmt.Errorf("nil memory manager or DMA engine: %w", ErrBadOptions)
	}
	dev, err := id.Device()
	if err != nil {
		return nil, err
	}
	depth := opts.Depth
	nsend := 2*depth + ctlExtra
	c.initSides()
	if c.ictx, err = ib.Open(dev); err != nil {
		return nil, err
	}
	if c.pd, err = c.ictx.AllocPD(); err != nil {
		return nil, err
	}
	c.regs.register = func(b *memory.Buffer, off, n uint64, access ib.Access) (region, error) {
		rb, err := ib.RegisterBuffer(c.pd, b, off, n, access)
		if err != nil {
			return nil, err
		}
		return ibRegion{rb}, nil
	}
	if c.cc, err = c.ictx.CreateCompChannel(); err != nil {
		return nil, err
	}
	if c.cq, err = c.ictx.CreateCQ(ib.CQOptions{Entries: uint32(nsend + c.nctl), Channel: c.cc}); err != nil {
		return nil, err
	}
	if c.qp, err = c.pd.CreateQP(ib.QPOptions{SendCQ: c.cq, RecvCQ: c.cq, SignalAll: true,
		Caps: ib.QPCaps{MaxSendWR: uint32(nsend), MaxRecvWR: uint32(c.nctl), MaxInline: DescriptorSize}}); err != nil {
		return nil, err
	}
	if err := c.allocRings(); err != nil {
		return nil, err
	}
	if c.smr, err = c.pd.RegBytes(c.sbuf.Bytes(), ib.AccessLocalWrite); err != nil {
		return nil, err
	}
	if c.rmr, err = c.pd.RegBytes(c.rbuf.Bytes(), ib.AccessLocalWrite|ib.AccessRemoteWrite); err != nil {
		return nil, err
	}
	c.skey = ringKey{lkey: c.smr.LKey(), iova: c.smr.IOVA()}
	c.rkey = ringKey{rkey: c.rmr.RKey(), iova: c.rmr.IOVA()}
	c.nic = ibNIC{qp: c.qp, cq: c.cq, id: id}
	if err := id.ModifyQP(c.qp, ib.QPSInit); err != nil {
		return nil, err
	}
	for i := range c.nctl {
		if err := c.postRecv(i); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// initSides sizes the control slots and the sides' event queues. The
// receives cover what may arrive at once while both directions run: the
// peer's chunks into this side's ring (Depth), the credits for this
// side's chunks in the peer's ring (as many again when both ends have the
// same Depth), and ctlExtra for the rest. A peer with a deeper ring may
// send more credits at once; the QP's RNR retries (7, without limit)
// hold them until the dispatcher reposts.
func (c *Conn) initSides() {
	depth := c.opts.Depth
	c.nctl = 2*depth + ctlExtra
	evCap := 4*depth + 2*ctlExtra
	c.snd.ev = make(chan event, evCap)
	c.rcv.ev = make(chan event, evCap)
}

// allocRings allocates the staging rings: sbuf, Depth send slots and
// then the control receive buffers; rbuf, the receive ring.
func (c *Conn) allocRings() error {
	ring := uint64(c.opts.Depth) * uint64(c.opts.ChunkSize)
	c.ctlOff = ring
	var err error
	if c.sbuf, err = c.mem.AllocHost(ring+uint64(c.nctl*ctlSize), memory.HostOptions{}); err != nil {
		return err
	}
	c.rbuf, err = c.mem.AllocHost(ring, memory.HostOptions{})
	return err
}

// ringDescriptor describes this side's receive ring.
func (c *Conn) ringDescriptor() Descriptor {
	return Descriptor{Path: PathPipelined, RKey: c.rkey.rkey, Addr: c.rkey.iova,
		ChunkSize: c.opts.ChunkSize, Slots: uint16(c.opts.Depth)}
}

// setPeer reads the peer's ring from the CM private data and settles the
// chunk size: the smaller of the two ends'.
func (c *Conn) setPeer(pdata []byte) error {
	if err := c.peer.UnmarshalBinary(pdata); err != nil {
		return err
	}
	if c.peer.Path != PathPipelined || c.peer.ChunkSize < 4096 || c.peer.ChunkSize > maxChunk || c.peer.Slots < 2 {
		return fmt.Errorf("peer's ring: chunk %d, %d slots: %w", c.peer.ChunkSize, c.peer.Slots, ErrBadDescriptor)
	}
	c.chunk = min(c.opts.ChunkSize, c.peer.ChunkSize)
	return nil
}

// postRecv posts the control receive of slot i.
func (c *Conn) postRecv(i int) error {
	sg := [1]ib.SGE{{Addr: c.skey.iova + c.ctlOff + uint64(i*ctlSize), Length: ctlSize, LKey: c.skey.lkey}}
	return c.nic.postRecv(ib.RecvWR{ID: wrRecv | uint64(i), SG: sg[:]})
}

// start runs the dispatcher, the CM watcher and the keep-alive prober.
func (c *Conn) start() {
	c.bg.Add(1)
	go c.dispatch()
	if c.id != nil { // a fake NIC has no CM
		c.bg.Add(1)
		go c.watch()
	}
	if c.opts.KeepAlive > 0 {
		c.bg.Add(1)
		go c.keepAlive()
	}
}

// keepAlive probes the peer every Options.KeepAlive while a transfer is
// in progress (see wire.go): a peer that vanished without a disconnect
// leaves the probe unacknowledged, and its failed completion shuts the
// connection (route), which fails the transfers with ErrPeerGone.
func (c *Conn) keepAlive() {
	defer c.bg.Done()
	t := time.NewTicker(c.opts.KeepAlive)
	defer t.Stop()
	for {
		select {
		case <-c.life.Done():
			return
		case <-c.broken:
			return
		case <-t.C:
		}
		if !c.snd.isBusy() && !c.rcv.isBusy() || !c.probing.CompareAndSwap(false, true) {
			continue
		}
		if err := c.nic.postSend(ib.SendWR{ID: wrCtl | ctlProbe, Op: ib.OpSendImm, Imm: imm(kindProbe, 0)}); err != nil {
			c.probing.Store(false) // the send queue is full: traffic flows
		}
	}
}

// isBusy reports whether a transfer holds the side.
func (s *side) isBusy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.busy
}

// watch waits for the CM's DISCONNECTED (the peer disconnected, closed
// its ID or exited) and shuts the connection.
func (c *Conn) watch() {
	defer c.bg.Done()
	for {
		ev, err := c.id.NextEvent(c.life)
		if err != nil {
			if c.life.Err() == nil {
				c.shut(&goneError{err})
			}
			return
		}
		switch ev.Type {
		case cm.EventDisconnected, cm.EventDeviceRemoval:
			c.peerLeft(&goneError{cm.ErrDisconnected})
			return
		}
	}
}

// peerLeft records why the peer left and moves the QP to the error
// state; the dispatcher shuts the connection when the flushed receives
// come, after every completion before them.
func (c *Conn) peerLeft(cause error) {
	c.leftMu.Lock()
	if c.left == nil {
		c.left = cause
	}
	c.leftMu.Unlock()
	if err := c.nic.fail(); err != nil {
		c.shut(cause)
	}
}

// leftCause is peerLeft's cause, or nil.
func (c *Conn) leftCause() error {
	c.leftMu.Lock()
	defer c.leftMu.Unlock()
	return c.left
}

// shut shuts the connection once: the QP goes to the error state (the
// NIC stops using every buffer it names; what was posted completes as
// flushed) and the peer is told (DISCONNECT). cause is what transfers
// that meet the shut connection report.
func (c *Conn) shut(cause error) {
	c.brokeOnce.Do(func() {
		c.brokenErr = cause
		close(c.broken)
		// The errors are moot: the QP may be in the error state already,
		// or the ID disconnected by the peer.
		_ = c.nic.disconnect()
	})
}

// dispatch reads the completion queue and hands each completion to its
// direction, reposting receives as it goes. It allocates nothing per
// completion.
func (c *Conn) dispatch() {
	defer c.bg.Done()
	wcs := make([]ib.WC, 16)
	for {
		n, err := c.nic.poll(c.life, wcs)
		if err != nil {
			if c.life.Err() == nil {
				c.shut(&goneError{err})
			}
			return
		}
		for i := range wcs[:n] {
			c.route(&wcs[i])
		}
	}
}

// route handles one completion.
func (c *Conn) route(wc *ib.WC) {
	v := wc.ID & wrValue
	switch wc.ID & wrKind {
	case wrData:
		c.push(&c.snd, event{kind: evSent, value: uint32(v), err: wc.Err()})
	case wrCtl:
		s := &c.rcv
		if v&roleBit != 0 {
			s = &c.snd
		}
		err := wc.Err()
		if err != nil && !errors.Is(err, ib.ErrFlushed) {
			// A credit, descriptor, done, abort or probe the peer never
			// took.
			c.shut(&goneError{err})
		}
		if v == ctlProbe {
			if err == nil {
				c.probed.Add(1)
			}
			c.probing.Store(false) // no transfer waits for it
			return
		}
		c.push(s, event{kind: evCtlSent, value: uint32(v &^ roleBit), err: err})
	case wrRecv:
		if err := wc.Err(); err != nil {
			cause := error(&goneError{err})
			if l := c.leftCause(); l != nil && errors.Is(err, ib.ErrFlushed) {
				cause = l
			}
			c.shut(cause) // a no-op when this side shut first
			return
		}
		c.receive(wc, int(v))
		if err := c.postRecv(int(v)); err != nil {
			c.shut(&goneError{err})
		}
	}
}

// receive decodes a control message from slot i.
func (c *Conn) receive(wc *ib.WC, i int) {
	kind, val := immKind(wc.Imm), immValue(wc.Imm)
	switch {
	case wc.Opcode == ib.WCRecvRDMAImm && kind == kindData:
		ev := event{kind: evChunk, value: val, n: wc.ByteLen}
		if wc.Imm&lastBit != 0 { // the sender's done rides on its last chunk
			ev.last, ev.path = true, Path(wc.Imm>>pathShift&pathMask)
		}
		c.push(&c.rcv, ev)
	case wc.Opcode == ib.WCRecv && wc.Flags&ib.WCWithImm != 0 && kind == kindCredit:
		c.push(&c.snd, event{kind: evCredit, value: val})
	case wc.Opcode == ib.WCRecv && wc.Flags&ib.WCWithImm != 0 && kind == kindDone:
		c.push(&c.rcv, event{kind: evDone, value: val})
	case wc.Opcode == ib.WCRecv && wc.Flags&ib.WCWithImm != 0 && kind == kindFin:
		c.push(&c.snd, event{kind: evFin, value: val})
	case wc.Opcode == ib.WCRecv && wc.Flags&ib.WCWithImm != 0 && kind == kindProbe:
		// The peer's keep-alive: its NIC's acknowledgement was the point.
	case wc.Opcode == ib.WCRecv && wc.Flags&ib.WCWithImm != 0 && kind == kindAbort:
		// An abort from the peer's sending side is for our receiving side.
		s := &c.snd
		if wc.Imm&roleBit != 0 {
			s = &c.rcv
		}
		c.push(s, event{kind: evAbort, value: val})
	case wc.Opcode == ib.WCRecv && wc.Flags&ib.WCWithImm == 0:
		off := c.ctlOff + uint64(i*ctlSize)
		n := min(uint64(wc.ByteLen), ctlSize)
		var d Descriptor
		err := d.UnmarshalBinary(c.sbuf.Bytes()[off : off+n])
		c.push(&c.snd, event{kind: evDesc, desc: d, err: err})
	default:
		c.shut(fmt.Errorf("completion opcode %d, immediate %#x: %w", wc.Opcode, wc.Imm, ErrProtocol))
	}
}

// push hands ev to a side. A side whose queue is full has been sent more
// than the protocol allows (the queue holds twice what credits permit):
// the peer is broken or hostile, and the connection is shut rather than
// let it grow.
func (c *Conn) push(s *side, ev event) {
	select {
	case s.ev <- ev:
	default:
		c.shut(fmt.Errorf("more messages than the protocol allows: %w", ErrProtocol))
	}
}

// begin claims a side for a transfer.
func (c *Conn) begin(s *side, op string) error {
	select {
	case <-c.broken:
		return fmt.Errorf("rdma %s: %w (%w)", op, ErrBroken, c.brokenErr)
	case <-c.life.Done():
		return fmt.Errorf("rdma %s: %w", op, ErrClosed)
	default:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return fmt.Errorf("rdma %s: %w", op, ErrClosed)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.busy {
		return fmt.Errorf("rdma %s: %w", op, ErrBusy)
	}
	s.busy = true
	c.xfer.Add(1)
	return nil
}

func (c *Conn) end(s *side) {
	s.mu.Lock()
	s.busy = false
	s.mu.Unlock()
	c.xfer.Done()
}

// Close shuts the connection, waits for transfers still finishing in the
// background (each is bounded: what it posted completes or is flushed
// once the QP is in the error state, and its DMA transfers are bounded by
// the Engine's timeout), then destroys the QP (after which the NIC
// touches none of the staging memory), the CQ and channel, and frees the
// staging rings. Closing twice does nothing.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		var errs []error
		c.mu.Lock()
		c.closing = true
		c.mu.Unlock()
		if c.nic != nil {
			c.shut(ErrClosed)
		}
		c.xfer.Wait()
		c.bodies.Stop()
		c.stop()
		c.bg.Wait()
		// In order, each only if made: the QP (after which the NIC names
		// none of the staging memory), its CQ and channel, the regions,
		// the PD, the context.
		if c.qp != nil {
			errs = append(errs, c.qp.Close())
		}
		if c.cq != nil {
			errs = append(errs, c.cq.Close())
		}
		if c.cc != nil {
			errs = append(errs, c.cc.Close())
		}
		// The cached device registrations: no transfer uses them now.
		errs = append(errs, c.regs.close())
		for _, mr := range []*ib.MR{c.smr, c.rmr} {
			if mr != nil {
				errs = append(errs, mr.Close())
			}
		}
		if c.pd != nil {
			errs = append(errs, c.pd.Close())
		}
		if c.ictx != nil {
			errs = append(errs, c.ictx.Close())
		}
		// The NIC no longer names the staging memory: free it.
		for _, h := range []*memory.HostBuffer{c.sbuf, c.rbuf} {
			if h != nil {
				errs = append(errs, h.Close())
			}
		}
		if c.id != nil {
			errs = append(errs, c.id.Close(), c.ch.unref())
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}
