package ipc

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"

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
	addr  string
	c     *net.UnixConn
	ids   chan [16]byte // revoked buffer ids, closed after err is set
	err   error         // why the stream ended; read after ids is closed
	once  sync.Once
	done  chan struct{} // closed by Close
	ended chan struct{} // closed when the reader stops
}

// Watch connects to the exporter at addr and asks to be told of every
// revocation from now on. It is subject to the same credential policy as
// Import, and fails the same ways (ErrExporterGone, *RefusedError, ctx's
// error; DefaultImportTimeout bounds it when ctx has no deadline). ctx
// bounds the connection only, not the life of the Watcher.
func Watch(ctx context.Context, addr string) (*Watcher, error) {
	c, r, err := roundTrip(ctx, addr, "watch", encodeWatchRequest())
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
	w := &Watcher{
		addr:  addr,
		c:     c,
		ids:   make(chan [16]byte, 16),
		done:  make(chan struct{}),
		ended: make(chan struct{}),
	}
	go w.read()
	return w, nil
}

// read turns notices into ids until the connection ends.
func (w *Watcher) read() {
	defer close(w.ended)
	buf := make([]byte, noticeLen+1)
	for {
		n, _, _, err := recvMsg(w.c, buf, nil)
		if err == nil && n == 0 {
			err = io.EOF
		}
		if err != nil {
			select {
			case <-w.done:
				w.err = errclosed.New("ipc: watcher")
			default:
				w.err = fmt.Errorf("%w: %s: watch connection closed (exporter closed, died, or dropped this watcher)", ErrExporterGone, w.addr)
			}
			close(w.ids)
			return
		}
		_, id, err := decodeNotice(buf[:n])
		if err != nil {
			w.err = err
			close(w.ids)
			w.c.Close()
			return
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
