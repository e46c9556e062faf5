package rdma

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/internal/warm"
	"github.com/gaudi-go/gaudi/memory"
	"golang.org/x/sys/unix"
)

// A fake fabric: two NICs that accept dma-buf registrations and carry
// RC traffic between them. RDMA WRITE copies between registered regions:
// host rings through their bytes, device memory through the buffer's
// ReadAt and WriteAt (the simulated device's bus, standing for the
// peer-to-peer DMA a real NIC does to a dma-buf). Each NIC works through
// its send queue in order on its own goroutine, as a NIC does beside the
// CPU, and completes each request after its bytes moved.

// fakeMem is a registered region.
type fakeMem struct {
	base uint64
	n    uint64
	host []byte         // a staging ring
	dev  *memory.Buffer // or device memory, devOff bytes into dev
	off  uint64
}

func (m *fakeMem) access(addr uint64, p []byte, write bool) error {
	if addr < m.base || addr-m.base > m.n || uint64(len(p)) > m.n-(addr-m.base) {
		return fmt.Errorf("[%#x, +%d) outside the region [%#x, +%d)", addr, len(p), m.base, m.n)
	}
	o := addr - m.base
	if m.host != nil {
		if write {
			copy(m.host[o:], p)
		} else {
			copy(p, m.host[o:])
		}
		return nil
	}
	var err error
	if write {
		_, err = m.dev.WriteAt(p, int64(m.off+o))
	} else {
		_, err = m.dev.ReadAt(p, int64(m.off+o))
	}
	return err
}

type fakeFabric struct {
	mu      sync.Mutex
	regions map[uint32]*fakeMem
	nextKey uint32
	devRegs int // device registrations made
	live    int // device registrations not yet closed
	// beforeWrite, when set, runs on the NIC before each RDMA WRITE
	// touches memory.
	beforeWrite func(wr *ib.SendWR)
}

func (f *fakeFabric) add(m *fakeMem) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.regions == nil {
		f.regions = map[uint32]*fakeMem{}
	}
	f.nextKey++
	f.regions[f.nextKey] = m
	return f.nextKey
}

func (f *fakeFabric) lookup(key uint32) *fakeMem {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.regions[key]
}

// fakeDevRegion is a dma-buf registration on the fake NIC: it holds a
// real export of the range, as ib.RegisterBuffer does, and its key stops
// working at Close.
type fakeDevRegion struct {
	f   *fakeFabric
	d   *memory.DMABuf
	key uint32
}

func (r *fakeDevRegion) LKey() uint32 { return r.key }
func (r *fakeDevRegion) RKey() uint32 { return r.key }
func (r *fakeDevRegion) Close() error {
	r.f.mu.Lock()
	delete(r.f.regions, r.key)
	r.f.live--
	r.f.mu.Unlock()
	return r.d.Close()
}

func (f *fakeFabric) register(b *memory.Buffer, off, n uint64, _ ib.Access) (region, error) {
	d, err := b.Export(off, n, memory.ExportOptions{})
	if err != nil {
		return nil, err
	}
	key := f.add(&fakeMem{base: b.VA() + off, n: n, dev: b, off: off})
	f.mu.Lock()
	f.devRegs++
	f.live++
	f.mu.Unlock()
	return &fakeDevRegion{f: f, d: d, key: key}, nil
}

func (f *fakeFabric) counts() (regs, live int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.devRegs, f.live
}

// fakeEnd is one NIC's queue pair and CQ; it implements nic.
type fakeEnd struct {
	f      *fakeFabric
	peer   *fakeEnd
	onLeft func() // the peer's CM watcher seeing DISCONNECTED

	work chan ib.SendWR
	cq   chan ib.WC
	quit chan struct{}
	done chan struct{}

	mu     sync.Mutex
	recvs  []ib.RecvWR
	failed bool
	// vanished makes the peer silent, as a machine that went down
	// without a disconnect: every request from now on completes with
	// the retry-exceeded error the NIC gives after its retries.
	vanished atomic.Bool
	// probes counts the keep-alive probes this end carried, carried
	// every request.
	probes, carried atomic.Int32
	// creditDelay, when set, is how long this end's NIC takes to carry a
	// credit: a slow NIC, or a busy one.
	creditDelay time.Duration
	// unacked, when set, picks requests this end's NIC carries out but
	// never sees acknowledged, as when the peer's NIC took them and was
	// torn down before it acknowledged them: they complete flushed once
	// this end fails. It runs on the NIC's goroutine.
	unacked func(wr *ib.SendWR) bool
	failedC chan struct{} // closed when the end fails
}

func newFakeEnd(f *fakeFabric, depth int) *fakeEnd {
	e := &fakeEnd{f: f, work: make(chan ib.SendWR, 4*depth+16), cq: make(chan ib.WC, 16*depth+64),
		quit: make(chan struct{}), done: make(chan struct{}), failedC: make(chan struct{})}
	go e.run()
	return e
}

func (e *fakeEnd) postSend(wr ib.SendWR) error {
	wr.SG = append([]ib.SGE(nil), wr.SG...)
	wr.Inline = append([]byte(nil), wr.Inline...)
	select {
	case e.work <- wr:
		return nil
	default:
		return &ib.Error{Op: "post send", Errno: unix.ENOMEM}
	}
}

func (e *fakeEnd) postRecv(wr ib.RecvWR) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failed {
		e.cq <- ib.WC{ID: wr.ID, Status: ib.WCFlushErr, Opcode: ib.WCRecv}
		return nil
	}
	wr.SG = append([]ib.SGE(nil), wr.SG...)
	e.recvs = append(e.recvs, wr)
	return nil
}

func (e *fakeEnd) poll(ctx context.Context, wcs []ib.WC) (int, error) {
	select {
	case wc := <-e.cq:
		wcs[0] = wc
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	n := 1
	for n < len(wcs) {
		select {
		case wcs[n] = <-e.cq:
			n++
		default:
			return n, nil
		}
	}
	return n, nil
}

// fail flushes the posted receives; later requests complete flushed.
func (e *fakeEnd) fail() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.failed {
		e.failed = true
		close(e.failedC)
		for _, r := range e.recvs {
			e.cq <- ib.WC{ID: r.ID, Status: ib.WCFlushErr, Opcode: ib.WCRecv}
		}
		e.recvs = nil
	}
	return nil
}

func (e *fakeEnd) disconnect() error {
	if e.peer.onLeft != nil {
		e.peer.onLeft()
	}
	return e.fail()
}

// stop ends the NIC's goroutine; the Conns are closed by then.
func (e *fakeEnd) stop() {
	close(e.quit)
	<-e.done
}

func (e *fakeEnd) isFailed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.failed
}

// takeRecv consumes the peer's next posted receive.
func (e *fakeEnd) takeRecv() (ib.RecvWR, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failed || len(e.recvs) == 0 {
		return ib.RecvWR{}, false
	}
	r := e.recvs[0]
	e.recvs = e.recvs[1:]
	return r, true
}

func (e *fakeEnd) run() {
	defer close(e.done)
	for {
		select {
		case wr := <-e.work:
			wc := e.execute(&wr)
			if wc.Status == ib.WCSuccess && e.unacked != nil && e.unacked(&wr) {
				wc.Status = ib.WCFlushErr
				go func() {
					select {
					case <-e.failedC:
						e.cq <- wc
					case <-e.quit:
					}
				}()
				continue
			}
			e.cq <- wc
		case <-e.quit:
			return
		}
	}
}

// execute carries out one request and returns its completion.
func (e *fakeEnd) execute(wr *ib.SendWR) ib.WC {
	e.carried.Add(1)
	wc := ib.WC{ID: wr.ID, Opcode: ib.WCSend}
	if e.isFailed() {
		wc.Status = ib.WCFlushErr
		return wc
	}
	if e.vanished.Load() {
		wc.Status = ib.WCRetryExcErr
		return wc
	}
	var data []byte
	if wr.Flags&ib.SendInline != 0 {
		data = wr.Inline
	} else {
		for _, sg := range wr.SG {
			m := e.f.lookup(sg.LKey)
			p := make([]byte, sg.Length)
			if m == nil || m.access(sg.Addr, p, false) != nil {
				wc.Status = ib.WCLocProtErr
				return wc
			}
			data = append(data, p...)
		}
	}
	switch wr.Op {
	case ib.OpRDMAWrite, ib.OpRDMAWriteImm:
		wc.Opcode = ib.WCRDMAWrite
		if e.f.beforeWrite != nil {
			e.f.beforeWrite(wr)
		}
		m := e.f.lookup(wr.RKey)
		if m == nil || m.access(wr.RemoteAddr, data, true) != nil {
			wc.Status = ib.WCRemAccessErr
			return wc
		}
		if wr.Op == ib.OpRDMAWriteImm {
			r, ok := e.peer.takeRecv()
			if !ok {
				wc.Status = ib.WCRNRRetryExcErr
				return wc
			}
			e.peer.cq <- ib.WC{ID: r.ID, Opcode: ib.WCRecvRDMAImm, Flags: ib.WCWithImm, Imm: wr.Imm, ByteLen: uint32(len(data))}
		}
	case ib.OpSend, ib.OpSendImm:
		if wr.Op == ib.OpSendImm && immKind(wr.Imm) == kindProbe {
			e.probes.Add(1)
		}
		if wr.Op == ib.OpSendImm && immKind(wr.Imm) == kindCredit && e.creditDelay > 0 {
			time.Sleep(e.creditDelay)
			if e.isFailed() {
				wc.Status = ib.WCFlushErr
				return wc
			}
		}
		r, ok := e.peer.takeRecv()
		if !ok {
			wc.Status = ib.WCRNRRetryExcErr
			return wc
		}
		in := ib.WC{ID: r.ID, Opcode: ib.WCRecv, ByteLen: uint32(len(data))}
		if wr.Op == ib.OpSendImm {
			in.Flags, in.Imm = ib.WCWithImm, wr.Imm
		}
		if len(data) > 0 {
			sg := r.SG[0]
			m := e.f.lookup(sg.LKey)
			if uint32(len(data)) > sg.Length || m == nil || m.access(sg.Addr, data, true) != nil {
				in.Status = ib.WCLocLenErr
			}
		}
		e.peer.cq <- in
	default:
		wc.Status = ib.WCLocQPOpErr
	}
	return wc
}

// newFakeConn makes a Conn on end: its staging rings registered with the
// fake fabric, its device ranges registered by the fabric.
func newFakeConn(t testing.TB, n *node, end *fakeEnd, opts Options) *Conn {
	t.Helper()
	if err := opts.normalize(); err != nil {
		t.Fatal(err)
	}
	c := &Conn{mem: n.m, eng: n.e, opts: opts, chunk: opts.ChunkSize, broken: make(chan struct{}), bodies: warm.New(2)}
	c.life, c.stop = context.WithCancel(context.Background())
	c.initSides()
	if err := c.allocRings(); err != nil {
		t.Fatal(err)
	}
	f := end.f
	c.skey = ringKey{iova: 1 << 40, lkey: f.add(&fakeMem{base: 1 << 40, n: uint64(len(c.sbuf.Bytes())), host: c.sbuf.Bytes()})}
	rk := f.add(&fakeMem{base: 2 << 40, n: uint64(len(c.rbuf.Bytes())), host: c.rbuf.Bytes()})
	c.rkey = ringKey{iova: 2 << 40, rkey: rk}
	c.regs.register = f.register
	c.nic = end
	end.onLeft = func() { c.peerLeft(&goneError{errors.New("fake peer disconnected")}) }
	for i := range c.nctl {
		if err := c.postRecv(i); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// fakePair connects two Conns over a fake fabric: a's client, z's server.
// Cleanup closes them, then stops the NICs.
func fakePair(t testing.TB, a, z *node, oa, oz Options) (*fakeFabric, *Conn, *Conn) {
	t.Helper()
	f := &fakeFabric{}
	ea, ez := newFakeEnd(f, 64), newFakeEnd(f, 64)
	ea.peer, ez.peer = ez, ea
	client, server := newFakeConn(t, a, ea, oa), newFakeConn(t, z, ez, oz)
	for _, p := range [][2]*Conn{{client, server}, {server, client}} {
		ring, err := p[1].ringDescriptor().MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if err := p[0].setPeer(ring); err != nil {
			t.Fatal(err)
		}
	}
	client.start()
	server.start()
	t.Cleanup(func() {
		for _, c := range []*Conn{client, server} {
			if err := c.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		}
		ea.stop()
		ez.stop()
		if _, live := f.counts(); live != 0 {
			t.Errorf("%d device registrations left on the fake NIC", live)
		}
	})
	return f, client, server
}
