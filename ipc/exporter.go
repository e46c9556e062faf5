package ipc

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/errclosed"
	"github.com/gaudi-go/gaudi/memory"
)

// DeviceID identifies the device an export belongs to.
type DeviceID struct {
	PCIAddress string
	ModuleID   uint32
}

// DeviceIDOf returns the identity of d: its PCI address (from the simulator's
// configuration, or from sysfs for a real device; "" when unknown) and its
// module id.
func DeviceIDOf(d *device.Device) DeviceID {
	id := DeviceID{ModuleID: d.HWIPInfo().ModuleID}
	if d.Simulated() {
		id.PCIAddress, _ = d.PCIAddress()
		return id
	}
	if nodes, err := device.Nodes(); err == nil {
		for _, n := range nodes {
			if n.Path == d.Path() || n.ControlPath == d.Path() {
				id.PCIAddress = n.PCIAddress
				break
			}
		}
	}
	return id
}

// ExporterOptions adjust NewExporter.
type ExporterOptions struct {
	// AllowUIDs lists the user ids whose processes may import. Empty means
	// the exporter's own (effective) uid only. The uid is the one the
	// kernel reports for the connecting peer (SO_PEERCRED).
	AllowUIDs []uint32
	// RequestTimeout bounds how long one importer may take to send its
	// request and take the answer; 0 means 5 s.
	RequestTimeout time.Duration
	// MaxConnections bounds the import requests served at once; 0 means
	// DefaultMaxConnections. A connection beyond it is answered CodeBusy
	// (ErrBusy) and closed at once. Connections of a uid the policy does
	// not allow are answered CodeNotAllowed and closed at once, before
	// their request is read: they cost no handler.
	MaxConnections int
	// MaxWatchers bounds the open watch connections; 0 means
	// DefaultMaxWatchers. A watch beyond it is answered CodeBusy.
	MaxWatchers int
	// WatchKeepalive is the interval of the keepalives sent on watch
	// connections; 0 means DefaultWatchKeepalive. A watcher that answers
	// none for three intervals is dropped (its connection closed).
	WatchKeepalive time.Duration
}

// Defaults of ExporterOptions.
const (
	DefaultMaxConnections = 64
	DefaultMaxWatchers    = 256
	DefaultWatchKeepalive = 10 * time.Second
)

// Exporter passes descriptors of exported device memory to other processes
// over a Unix socket (SOCK_SEQPACKET): an importer sends a Handle, the
// Exporter checks the peer's credentials (SO_PEERCRED) against its policy
// and answers with the descriptor (SCM_RIGHTS) or with the reason it will
// not.
//
// The Exporter keeps its own duplicate of every exported descriptor until
// Revoke or Close. An export made with Export is revoked when its
// memory.DMABuf closes, so the device buffer can be freed after it. A
// descriptor already passed stays valid in the importer: Revoke stops
// further imports, it cannot take back what was given, so it tells the
// importers instead: every connection opened with Watch (and every Cache,
// which watches the exporters it imports from) receives the buffer id of
// each revocation, and sees the connection end when the Exporter closes or
// dies. (On the simulator an export stays alive while any duplicate is
// open.)
//
// All methods are safe for concurrent use.
type Exporter struct {
	ln        *net.UnixListener
	addr      string
	allow     []uint32
	timeout   time.Duration
	maxConn   int
	maxWatch  int
	keepalive time.Duration
	pid       uint32
	pidNS     uint64
	boot      [16]byte
	start     uint64 // this process's start time (Handle.StartTime)

	mu       sync.Mutex
	entries  map[[16]byte]*entry
	revoked  map[[16]byte]bool
	conns    map[*net.UnixConn]bool
	watchers map[*watcher]bool
	closed   bool
	deferred []error // of revocations a DMABuf's Close did, for Close
	wg       sync.WaitGroup

	// beforeReply (guarded by mu), when set (tests), runs after a request is accepted and
	// before the descriptor is sent.
	beforeReply func()
}

type entry struct {
	h    Handle
	mu   sync.RWMutex // held for reading while the fd is being sent
	fd   int          // exporter's duplicate, -1 once revoked
	stop func() bool  // cancels the DMABuf close hook of Export; nil for ExportFD
}

// watcher is an importer's open watch connection.
type watcher struct {
	c  *net.UnixConn
	mu sync.Mutex // serialises notices
}

// noticeTimeout bounds the write of one notice: a watcher that does not
// read is dropped (its connection closed, which it takes as "everything
// revoked") rather than allowed to stall Revoke.
const noticeTimeout = time.Second

// NewExporter listens on addr and serves imports until Close. addr is a
// file system path, or "@name" for a Linux abstract socket, or "" for a
// fresh abstract name (see Addr). A path socket is removed by Close.
func NewExporter(addr string, opts ExporterOptions) (*Exporter, error) {
	boot, err := BootID()
	if err != nil {
		return nil, err
	}
	ns, err := PIDNamespace()
	if err != nil {
		return nil, err
	}
	start, err := selfStartTime()
	if err != nil {
		return nil, err
	}
	if addr == "" {
		var r [8]byte
		rand.Read(r[:])
		addr = fmt.Sprintf("@gaudi-ipc-%d-%s", os.Getpid(), hex.EncodeToString(r[:]))
	}
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: addr, Net: "unixpacket"})
	if err != nil {
		return nil, fmt.Errorf("ipc: listen: %w", err)
	}
	e := &Exporter{
		ln:      ln,
		addr:    addr,
		allow:   slices.Clone(opts.AllowUIDs),
		timeout: opts.RequestTimeout,
		pid:     uint32(os.Getpid()),
		pidNS:   ns,
		boot:    boot,
		start:   start,
		entries: map[[16]byte]*entry{},
		revoked: map[[16]byte]bool{},
		conns:   map[*net.UnixConn]bool{},

		watchers: map[*watcher]bool{},
	}
	if len(e.allow) == 0 {
		e.allow = []uint32{uint32(os.Geteuid())}
	}
	if e.timeout <= 0 {
		e.timeout = 5 * time.Second
	}
	e.maxConn, e.maxWatch, e.keepalive = opts.MaxConnections, opts.MaxWatchers, opts.WatchKeepalive
	if e.maxConn <= 0 {
		e.maxConn = DefaultMaxConnections
	}
	if e.maxWatch <= 0 {
		e.maxWatch = DefaultMaxWatchers
	}
	if e.keepalive <= 0 {
		e.keepalive = DefaultWatchKeepalive
	}
	e.wg.Add(1)
	go e.serve()
	return e, nil
}

// Addr returns the socket address importers pass to Import.
func (e *Exporter) Addr() string { return e.addr }

// Export makes the range of x importable and returns its handle. The
// Exporter duplicates x's descriptor; x remains the caller's. Closing x
// revokes the export (see Revoke), so that after x.Close no new importer
// receives the memory and the buffer may be freed.
func (e *Exporter) Export(x *memory.DMABuf, dev DeviceID) (Handle, error) {
	h, err := e.ExportFD(x.Fd(), dev, x.DeviceVA(), x.Size(), x.Offset())
	if err != nil {
		return h, err
	}
	stop := x.AfterClose(func() {
		if err := e.Revoke(h); err != nil && !errors.Is(err, ErrUnknownBuffer) {
			e.mu.Lock()
			e.deferred = append(e.deferred, err)
			e.mu.Unlock()
		}
	})
	e.mu.Lock()
	if en, ok := e.entries[h.BufferID]; ok {
		en.stop = stop
		stop = nil
	}
	e.mu.Unlock()
	if stop != nil {
		stop() // revoked or closed in the meantime
	}
	return h, nil
}

// ExportFD is Export for any descriptor fd of size bytes (a dma-buf, or a
// memfd in tests), described by dev, va and offset.
func (e *Exporter) ExportFD(fd int, dev DeviceID, va, size, offset uint64) (Handle, error) {
	if size == 0 {
		return Handle{}, errors.New("ipc: export of 0 bytes")
	}
	if len(dev.PCIAddress) > MaxPCIAddressLen {
		return Handle{}, fmt.Errorf("ipc: PCI address %q too long", dev.PCIAddress)
	}
	id, err := newBufferID()
	if err != nil {
		return Handle{}, fmt.Errorf("ipc: buffer id: %w", err)
	}
	h := Handle{
		PCIAddress: dev.PCIAddress, ModuleID: dev.ModuleID,
		DeviceVA: va, Size: size, Offset: offset,
		PID: e.pid, PIDNamespace: e.pidNS, BootID: e.boot, StartTime: e.start, BufferID: id,
	}
	if _, err := h.MarshalBinary(); err != nil {
		return Handle{}, err
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return Handle{}, fmt.Errorf("ipc: dup fd %d: %w", fd, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		if err := unix.Close(dup); err != nil {
			return Handle{}, errors.Join(errclosed.New("ipc: exporter"), fmt.Errorf("ipc: close dup of fd %d: %w", fd, err))
		}
		return Handle{}, errclosed.New("ipc: exporter")
	}
	e.entries[id] = &entry{h: h, fd: dup}
	return h, nil
}

// Revoke stops serving h, closes the Exporter's duplicate of its
// descriptor after any send in flight, and sends the buffer id to every
// watcher. It returns ErrUnknownBuffer if h is not served (never exported
// here, or already revoked), and the error of closing the duplicate.
func (e *Exporter) Revoke(h Handle) error {
	e.mu.Lock()
	en, ok := e.entries[h.BufferID]
	var ws []*watcher
	if ok {
		delete(e.entries, h.BufferID)
		e.revoked[h.BufferID] = true
		for w := range e.watchers {
			ws = append(ws, w)
		}
	}
	e.mu.Unlock()
	if !ok {
		return ErrUnknownBuffer
	}
	if en.stop != nil {
		en.stop()
	}
	err := en.close()
	msg := encodeNotice(noticeRevoked, h.BufferID)
	for _, w := range ws {
		w.notify(msg)
	}
	return err
}

// notify sends msg, closing the connection of a watcher that cannot take
// it within noticeTimeout.
func (w *watcher) notify(msg []byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := writeWithin(w.c, msg, noticeTimeout); err != nil {
		w.c.Close()
		return false
	}
	return true
}

// Watchers returns the number of open watch connections.
func (e *Exporter) Watchers() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.watchers)
}

// close closes the Exporter's duplicate, once no send uses it.
func (en *entry) close() error {
	en.mu.Lock()
	defer en.mu.Unlock()
	if en.fd < 0 {
		return nil
	}
	fd := en.fd
	en.fd = -1
	if err := unix.Close(fd); err != nil {
		return fmt.Errorf("ipc: close the duplicate of buffer %s: %w", hex.EncodeToString(en.h.BufferID[:]), err)
	}
	return nil
}

// Exported returns the number of buffers being served.
func (e *Exporter) Exported() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.entries)
}

// Close stops the service: it closes the socket and every connection in
// progress, waits for the handlers, and closes every duplicate descriptor.
// It returns the errors of closing them, and of the duplicates closed
// before when a DMABuf closed (see Export). It is idempotent.
func (e *Exporter) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	err := e.ln.Close()
	for c := range e.conns {
		c.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
	e.mu.Lock()
	entries := e.entries
	e.entries = map[[16]byte]*entry{}
	errs := e.deferred
	e.deferred = nil
	e.mu.Unlock()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		errs = append(errs, err)
	}
	for _, en := range entries {
		if en.stop != nil {
			en.stop()
		}
		errs = append(errs, en.close())
	}
	return errors.Join(errs...)
}

func (e *Exporter) serve() {
	defer e.wg.Done()
	for {
		c, err := e.ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// EMFILE and the like: back off instead of spinning.
			time.Sleep(10 * time.Millisecond)
			e.mu.Lock()
			closed := e.closed
			e.mu.Unlock()
			if closed {
				return
			}
			continue
		}
		if !e.admit(c) {
			c.Close()
			continue
		}
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			c.Close()
			return
		}
		if e.importingLocked() >= e.maxConn {
			// Decided here, in the order of arrival: the connections
			// served keep their handlers.
			e.mu.Unlock()
			e.refuse(c, CodeBusy, fmt.Sprintf("%d import requests served, the bound", e.maxConn))
			c.Close()
			continue
		}
		e.conns[c] = true
		e.wg.Add(1)
		e.mu.Unlock()
		go func() {
			defer e.wg.Done()
			e.handle(c)
			e.mu.Lock()
			delete(e.conns, c)
			e.mu.Unlock()
			c.Close()
		}()
	}
}

// admit checks a new connection's uid (SO_PEERCRED, taken at connect)
// before anything else, so that a peer the policy refuses costs no
// handler: it is answered at once, without its request being read.
func (e *Exporter) admit(c *net.UnixConn) bool {
	cred, err := peerCred(c)
	if err != nil {
		e.refuse(c, CodeInternal, "reading peer credentials: "+err.Error())
		return false
	}
	if !slices.Contains(e.allow, cred.Uid) {
		e.refuse(c, CodeNotAllowed, fmt.Sprintf("uid %d (pid %d) may not import from this exporter", cred.Uid, cred.Pid))
		return false
	}
	return true
}

// refuse answers a connection the accept loop will close, without
// waiting: a fresh connection's queue has room, and a peer that made it
// full loses the answer. The write is tried once, without waiting
// (writeWithin, given no time), rather than bounded by a deadline: a deadline of a few milliseconds expired
// before the write whenever the goroutine was descheduled between the two
// (a loaded host, a TCG guest), and Go then refuses to write at all, so a
// refused importer heard the connection close instead of the refusal
// (ipc TestOtherUIDRefused failed so once in CI's VM).
func (e *Exporter) refuse(c *net.UnixConn, code Code, msg string) {
	if h := testHookRefusing.Load(); h != nil {
		(*h)()
	}
	// No wait for room: a peer that filled the queue loses the answer.
	writeWithin(c, encodeReply(code, 0, 0, msg), 0)
}

// testHookRefusing, when set, runs in refuse before the answer is written.
var testHookRefusing atomic.Pointer[func()]

// handlers returns the number of connections being served (tests).
func (e *Exporter) handlers() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.conns)
}

// importing counts the connections that are not watchers. e.mu must be
// held.
func (e *Exporter) importingLocked() int { return len(e.conns) - len(e.watchers) }

func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var serr error
	if err := rc.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, serr
}

// closeRights closes every descriptor passed in the control message oob.
func closeRights(oob []byte) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return
	}
	for _, m := range msgs {
		if fds, err := unix.ParseUnixRights(&m); err == nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
		}
	}
}

func (e *Exporter) reply(c *net.UnixConn, code Code, msg string) {
	c.Write(encodeReply(code, 0, 0, msg))
}

func (e *Exporter) handle(c *net.UnixConn) {
	c.SetDeadline(time.Now().Add(e.timeout))
	buf := make([]byte, maxRequest+1)
	oob := make([]byte, unix.CmsgSpace(16*4))
	n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	closeRights(oob[:oobn]) // importers have no business sending descriptors
	if err != nil || n == 0 {
		return
	}
	cred, err := peerCred(c)
	if err != nil {
		e.reply(c, CodeInternal, "reading peer credentials: "+err.Error())
		return
	}
	if !slices.Contains(e.allow, cred.Uid) {
		e.reply(c, CodeNotAllowed, fmt.Sprintf("uid %d (pid %d) may not import from this exporter", cred.Uid, cred.Pid))
		return
	}
	if flags&unix.MSG_TRUNC != 0 || n > maxRequest {
		e.reply(c, CodeBadRequest, "request too long")
		return
	}
	op, h, err := decodeRequest(buf[:n])
	if err != nil {
		e.reply(c, CodeBadRequest, err.Error())
		return
	}
	if op == opWatch {
		e.watch(c)
		return
	}
	if h.PID != e.pid || h.PIDNamespace != e.pidNS || h.BootID != e.boot || h.StartTime != e.start {
		e.reply(c, CodeUnknown, fmt.Sprintf("handle of pid %d (pid namespace %d, started at tick %d) was not exported by pid %d (pid namespace %d, started at tick %d) of this boot", h.PID, h.PIDNamespace, h.StartTime, e.pid, e.pidNS, e.start))
		return
	}
	e.mu.Lock()
	en, ok := e.entries[h.BufferID]
	revoked := e.revoked[h.BufferID]
	closed := e.closed
	hook := e.beforeReply
	e.mu.Unlock()
	switch {
	case closed:
		e.reply(c, CodeClosing, "")
		return
	case revoked:
		e.reply(c, CodeRevoked, "buffer "+hex.EncodeToString(h.BufferID[:])+" was revoked")
		return
	case !ok:
		e.reply(c, CodeUnknown, "no buffer "+hex.EncodeToString(h.BufferID[:]))
		return
	case en.h != h:
		e.reply(c, CodeUnknown, "handle does not match buffer "+hex.EncodeToString(h.BufferID[:]))
		return
	}
	if hook != nil {
		hook()
	}
	en.mu.RLock()
	defer en.mu.RUnlock()
	if en.fd < 0 {
		e.reply(c, CodeRevoked, "buffer "+hex.EncodeToString(h.BufferID[:])+" was revoked")
		return
	}
	if _, _, err := c.WriteMsgUnix(encodeReply(CodeOK, en.h.Size, en.h.Offset, ""), unix.UnixRights(en.fd), nil); err != nil {
		e.reply(c, CodeInternal, "sending the descriptor: "+err.Error())
	}
}

// watch serves a watch connection until the importer or the Exporter
// closes it.
func (e *Exporter) watch(c *net.UnixConn) {
	w := &watcher{c: c}
	// w.mu is held from registration to the acceptance, so that no notice
	// overtakes it and none sent after it is missed.
	w.mu.Lock()
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		w.mu.Unlock()
		e.reply(c, CodeClosing, "")
		return
	}
	if len(e.watchers) >= e.maxWatch {
		e.mu.Unlock()
		w.mu.Unlock()
		e.reply(c, CodeBusy, fmt.Sprintf("%d watchers, the bound", e.maxWatch))
		return
	}
	e.watchers[w] = true
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.watchers, w)
		e.mu.Unlock()
	}()
	err := writeWithin(c, encodeReply(CodeOK, uint64(e.keepalive), 0, ""), noticeTimeout)
	w.mu.Unlock()
	if err != nil {
		return
	}
	// The importer sends only acknowledgements of keepalives: a read
	// returns one, or fails when the importer closes the connection, when
	// Close or a failed notice closes it here, or at the next keepalive.
	// A watcher silent for watchTimeoutIntervals intervals is dropped.
	keepalive := encodeNotice(noticeKeepalive, [16]byte{})
	ack := encodeAck()
	heard := time.Now()
	next := heard.Add(e.keepalive)
	b := make([]byte, len(ack)+1)
	for {
		c.SetReadDeadline(next)
		n, err := c.Read(b)
		now := time.Now()
		switch {
		case err == nil && n == len(ack) && [8]byte(b[:8]) == [8]byte(ack):
			heard = now
			continue
		case err == nil:
			return // a watcher sends nothing else
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return
		}
		if now.Sub(heard) >= watchTimeoutIntervals*e.keepalive {
			return
		}
		if !w.notify(keepalive) {
			return
		}
		next = now.Add(e.keepalive)
	}
}

// setBeforeReply installs a test hook.
func (e *Exporter) setBeforeReply(f func()) {
	e.mu.Lock()
	e.beforeReply = f
	e.mu.Unlock()
}
