package ipc

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultImportTimeout bounds Import when ctx has no deadline, so that an
// exporter that is alive but never answers cannot block the importer
// forever.
const DefaultImportTimeout = 30 * time.Second

// Imported is a descriptor of exported device memory that Import received.
// It is this process's own descriptor: close it with Close when done.
type Imported struct {
	File   *os.File // the dma-buf (a memfd on the simulator)
	Size   uint64   // bytes in the range
	Offset uint64   // offset of the range in the exporter's buffer
	Handle Handle   // the handle it was imported with
}

// Close closes the descriptor.
func (im *Imported) Close() error { return im.File.Close() }

// Import is ImportWith with the default ImportOptions: the exporter must
// run as this process's effective uid or root.
func Import(ctx context.Context, addr string, h Handle) (*Imported, error) {
	return ImportWith(ctx, addr, h, ImportOptions{})
}

// ImportWith asks the Exporter listening on addr (a path, or "@name" for an
// abstract socket) for the descriptor of h. It fails with ErrOtherHost for a
// handle of another boot, with ErrExporterGone when nobody listens on addr
// or the exporter closes or dies before it answers, with a *RefusedError
// (ErrNotAllowed, ErrUnknownBuffer, ErrRevoked, ...) when the exporter
// refuses, and with ctx's error when ctx ends first. Without a deadline in
// ctx, DefaultImportTimeout applies. Before it sends the handle it checks
// who listens on addr (SO_PEERCRED): the handle's exporter (its pid, in
// this pid namespace, else ErrOtherNamespace) running as a uid opts
// allows, else it fails with ErrUnexpectedPeer.
func ImportWith(ctx context.Context, addr string, h Handle, opts ImportOptions) (*Imported, error) {
	boot, err := BootID()
	if err != nil {
		return nil, err
	}
	if h.BootID != boot {
		return nil, fmt.Errorf("%w: handle boot id %s, this machine %s", ErrOtherHost, hex.EncodeToString(h.BootID[:]), hex.EncodeToString(boot[:]))
	}
	req, err := encodeRequest(h)
	if err != nil {
		return nil, err
	}
	c, r, err := roundTrip(ctx, addr, "import from", req, func(c *net.UnixConn) error { return checkPeer(c, &h, opts) })
	if err != nil {
		return nil, err
	}
	c.Close()
	closeAll := func() {
		for _, fd := range r.fds {
			unix.Close(fd)
		}
	}
	if len(r.fds) != 1 {
		closeAll()
		return nil, fmt.Errorf("%w: %d descriptors in the answer, want 1", ErrProtocol, len(r.fds))
	}
	if r.size != h.Size || r.offset != h.Offset {
		closeAll()
		return nil, fmt.Errorf("%w: answer is %d bytes at %d, handle says %d at %d", ErrProtocol, r.size, r.offset, h.Size, h.Offset)
	}
	fd := r.fds[0]
	// The file's size is the range's size (dma-bufs and memfds report it
	// through SEEK_END).
	if end, err := unix.Seek(fd, 0, io.SeekEnd); err == nil {
		unix.Seek(fd, 0, io.SeekStart)
		if uint64(end) != r.size {
			unix.Close(fd)
			return nil, fmt.Errorf("%w: descriptor of %d bytes, handle says %d", ErrProtocol, end, r.size)
		}
	}
	f := os.NewFile(uintptr(fd), "gaudi-ipc:"+hex.EncodeToString(h.BufferID[:]))
	return &Imported{File: f, Size: r.size, Offset: r.offset, Handle: h}, nil
}

// reply is an accepted answer of the exporter.
type reply struct {
	size, offset uint64
	fds          []int // descriptors that came with it, the caller's to close
}

// roundTrip connects to the exporter at addr, sends req and reads the
// answer, all within ctx (DefaultImportTimeout when ctx has no deadline).
// A refusal is a *RefusedError. On success the connection is returned with
// no deadline set, for the caller to close. what names the operation in
// errors ("import from"); check vets the peer before anything is sent.
//
// The exporter answers a connection it refuses (CodeNotAllowed, CodeBusy)
// and closes it without reading the request, so the request may fail
// (EPIPE) and the first read report the unread request (ECONNRESET)
// while the answer is queued: both are followed by a read of it.
func roundTrip(ctx context.Context, addr, what string, req []byte, check func(*net.UnixConn) error) (*net.UnixConn, reply, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultImportTimeout)
		defer cancel()
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unixpacket", addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, reply{}, fmt.Errorf("ipc: %s %s: %w", what, addr, ctx.Err())
		}
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return nil, reply{}, fmt.Errorf("%w: %s: %v", ErrExporterGone, addr, err)
		}
		return nil, reply{}, fmt.Errorf("ipc: %s %s: %w", what, addr, err)
	}
	c := nc.(*net.UnixConn)
	ok := false
	defer func() {
		if !ok {
			c.Close()
		}
	}()
	dl, _ := ctx.Deadline()
	c.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	fail := func(op string, err error) error {
		if ctx.Err() != nil {
			return fmt.Errorf("ipc: %s %s: %s: %w", what, addr, op, ctx.Err())
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// The socket deadline is ctx's; its timer may not have fired yet.
			return fmt.Errorf("ipc: %s %s: %s: %w", what, addr, op, context.DeadlineExceeded)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
			return fmt.Errorf("%w: %s: connection closed during %s (exporter died or closed)", ErrExporterGone, addr, op)
		}
		return fmt.Errorf("ipc: %s %s: %s: %w", what, addr, op, err)
	}
	if err := check(c); err != nil {
		return nil, reply{}, err
	}
	_, werr := c.Write(req)
	if werr != nil && !errors.Is(werr, syscall.EPIPE) && !errors.Is(werr, syscall.ECONNRESET) {
		return nil, reply{}, fail("request", werr)
	}
	buf := make([]byte, repHeaderLen+maxMessage+1)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, flags, err := recvMsg(c, buf, oob)
	if errors.Is(err, syscall.ECONNRESET) {
		n, oobn, flags, err = recvMsg(c, buf, oob)
	}
	if werr != nil && err == nil && n > 0 {
		if code, _, _, _, derr := decodeReply(buf[:n]); derr == nil && code == CodeOK {
			// An acceptance of a request that was never sent.
			closeRights(oob[:oobn])
			return nil, reply{}, fmt.Errorf("%w: accepted a request it never received", ErrProtocol)
		}
	}
	if werr != nil && (err != nil || n == 0) {
		closeRights(oob[:oobn])
		return nil, reply{}, fail("request", werr)
	}
	fds, perr := rights(oob[:oobn])
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	if err != nil {
		closeAll()
		return nil, reply{}, fail("reply", err)
	}
	if n == 0 {
		closeAll()
		return nil, reply{}, fail("reply", io.EOF)
	}
	if perr != nil || flags&(unix.MSG_CTRUNC|unix.MSG_TRUNC) != 0 {
		closeAll()
		return nil, reply{}, fmt.Errorf("%w: truncated reply or control message", ErrProtocol)
	}
	code, size, offset, msg, err := decodeReply(buf[:n])
	if err != nil {
		closeAll()
		return nil, reply{}, err
	}
	if code != CodeOK {
		closeAll()
		return nil, reply{}, &RefusedError{Code: code, Message: msg}
	}
	if !stop() {
		// ctx ended as the answer came: the deadline may be poisoned.
		closeAll()
		return nil, reply{}, fmt.Errorf("ipc: %s %s: %w", what, addr, ctx.Err())
	}
	c.SetDeadline(time.Time{})
	ok = true
	return c, reply{size: size, offset: offset, fds: fds}, nil
}

// rights returns the descriptors passed in oob.
func rights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	var bad error
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_RIGHTS {
			bad = errors.New("unexpected control message")
			continue
		}
		got, err := unix.ParseUnixRights(&m)
		if err != nil {
			bad = err
			continue
		}
		fds = append(fds, got...)
	}
	return fds, bad
}
