package ipc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/internal/errclosed"
)

// Watcher receives an exporter's revocations. Watch opens one.
//
// Next returns the buffer id of each buffer the exporter revokes, in order.
// When the exporter closes, dies, or drops a watcher that fell behind, Next
// returns ErrExporterGone: from then on every buffer of that exporter must
// be taken as revoked.
//
// A Watcher is safe for concurrent use; Close is idempotent.
type Watcher struct {
	addr      string
	c         *net.UnixConn
	keepalive time.Duration // the exporter's interval
	ids       chan [16]byte // revoked buffer ids, closed after err is set
	err       error         // why the stream ended; read after ids is closed
	once      sync.Once
	done      chan struct{} // closed by Close
	ended     chan struct{} // closed when the reader stops
}

// Watch connects to the exporter at addr and asks to be told of every
// revocation from now on. It is subject to the same credential policy as
// Import, and fails the same ways (ErrExporterGone, *RefusedError, ctx's
// error; DefaultImportTimeout bounds it when ctx has no deadline). ctx
// bounds the connection only, not the life of the Watcher. It checks that
// the socket's owner runs as this process's effective uid or root
// (ErrUnexpectedPeer); WatchExporter also checks its pid.
//
// The exporter sends keepalives at the interval it states in its
// acceptance and the Watcher answers them: an exporter that says nothing
// for watchTimeoutIntervals intervals is taken as gone (ErrExporterGone),
// and a Watcher that stops answering (its reader blocked because Next is
// not called) is dropped by the exporter.
func Watch(ctx context.Context, addr string) (*Watcher, error) {
	return watch(ctx, addr, nil, ImportOptions{})
}

// WatchExporter is Watch of the exporter that issued h, which must be the
// process listening on addr (its pid, in this pid namespace, and its start
// time) and run as a
// uid opts allows; otherwise it fails with ErrUnexpectedPeer (or
// ErrOtherNamespace).
func WatchExporter(ctx context.Context, addr string, h Handle, opts ImportOptions) (*Watcher, error) {
	return watch(ctx, addr, &h, opts)
}

// watchTimeoutIntervals is how many keepalive intervals of silence end a
// watch, on either side.
const watchTimeoutIntervals = 3

func watch(ctx context.Context, addr string, h *Handle, opts ImportOptions) (*Watcher, error) {
	c, r, err := roundTrip(ctx, addr, "watch", encodeWatchRequest(), func(c *net.UnixConn) error { return checkPeer(c, h, opts) })
	if err != nil {
		return nil, err
	}
	if len(r.fds) != 0 {
		for _, fd := range r.fds {
			unix.Close(fd)
		}
		c.Close()
		return nil, fmt.Errorf("%w: %d descriptors in a watch answer", ErrProtocol, len(r.fds))
	}
	if r.size == 0 || r.size > uint64(time.Hour) {
		c.Close()
		return nil, fmt.Errorf("%w: watch keepalive interval of %d ns", ErrProtocol, r.size)
	}
	w := &Watcher{
		addr:      addr,
		c:         c,
		keepalive: time.Duration(r.size),
		ids:       make(chan [16]byte, 16),
		done:      make(chan struct{}),
		ended:     make(chan struct{}),
	}
	go w.read()
	return w, nil
}

// read turns notices into ids until the connection ends.
func (w *Watcher) read() {
	defer close(w.ended)
	buf := make([]byte, noticeLen+1)
	for {
		w.c.SetReadDeadline(time.Now().Add(watchTimeoutIntervals * w.keepalive))
		n, _, _, err := recvMsg(w.c, buf, nil)
		if err == nil && n == 0 {
			err = io.EOF
		}
		if err != nil {
			select {
			case <-w.done:
				w.err = errclosed.New("ipc: watcher")
			default:
				if errors.Is(err, os.ErrDeadlineExceeded) {
					w.err = fmt.Errorf("%w: %s: no keepalive for %v (exporter stalled)", ErrExporterGone, w.addr, watchTimeoutIntervals*w.keepalive)
				} else {
					w.err = fmt.Errorf("%w: %s: watch connection closed (exporter closed, died, or dropped this watcher)", ErrExporterGone, w.addr)
				}
			}
			w.c.Close()
			close(w.ids)
			return
		}
		kind, id, err := decodeNotice(buf[:n])
		if err != nil {
			w.err = err
			close(w.ids)
			w.c.Close()
			return
		}
		if kind == noticeKeepalive {
			writeWithin(w.c, encodeAck(), w.keepalive) // a failure shows as the end of the connection
			continue
		}
		select {
		case w.ids <- id:
		case <-w.done:
			w.err = errclosed.New("ipc: watcher")
			close(w.ids)
			return
		}
	}
}

// Next returns the id of the next revoked buffer, blocking until there is
// one or ctx ends. It returns ErrExporterGone when the exporter is gone,
// ErrClosed after Close, ErrProtocol for a malformed notice, and ctx's
// error when ctx ends first.
func (w *Watcher) Next(ctx context.Context) ([16]byte, error) {
	select {
	case id, ok := <-w.ids:
		if !ok {
			return id, w.err
		}
		return id, nil
	case <-ctx.Done():
		return [16]byte{}, ctx.Err()
	}
}

// Close ends the watch and waits for its reader to stop. It is idempotent.
func (w *Watcher) Close() error {
	w.once.Do(func() {
		close(w.done)
		w.c.Close()
	})
	<-w.ended
	return nil
}
