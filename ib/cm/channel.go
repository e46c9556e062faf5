package cm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"github.com/gaudi-go/gaudi/uapi/rdma"
	"golang.org/x/sys/unix"
)

// DevicePath is the RDMA CM's device node (a misc device of the rdma_ucm
// module, mode 0666: drivers/infiniband/core/ucma.c).
const DevicePath = "/dev/infiniband/rdma_cm"

// Channel is an open RDMA CM device: the IDs created on it and their
// events. One goroutine per Channel reads the events (GET_EVENT on the
// non-blocking descriptor, waiting in the runtime poller while none is
// queued) and hands each to its ID.
//
// A Channel is safe for concurrent use. Close destroys every ID on it
// (the kernel does when the file closes) and stops the reader.
type Channel struct {
	f  *os.File
	rc syscall.RawConn

	mu     sync.Mutex
	closed bool
	err    error          // why the reader stopped
	ids    map[uint64]*ID // by uid
	nextID uint64
	done   chan struct{} // closed when the reader returns
}

// Open opens DevicePath. The device exists once the rdma_ucm module is
// loaded.
func Open() (*Channel, error) { return OpenPath(DevicePath) }

// OpenPath opens an RDMA CM device node at path.
func OpenPath(path string) (*Channel, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, &Error{Op: "OPEN", Errno: err.(unix.Errno)}
	}
	f := os.NewFile(uintptr(fd), path)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("rdma_cm: %w", err)
	}
	ch := &Channel{f: f, rc: rc, ids: map[uint64]*ID{}, done: make(chan struct{})}
	go ch.read()
	return ch, nil
}

// command writes one CM command: the header struct rdma_ucm_cmd_hdr {cmd,
// in, out} (in and out are bytes, ucma.c ucma_write), then body, whose
// response field (when out > 0) the caller pointed at resp.
func (ch *Channel) command(op string, cmd uint32, body, resp []byte) error {
	b := make([]byte, 8+len(body))
	le := binary.LittleEndian
	le.PutUint32(b[0:], cmd)
	le.PutUint16(b[4:], uint16(len(body)))
	le.PutUint16(b[6:], uint16(len(resp)))
	copy(b[8:], body)
	var werr error
	err := ch.rc.Control(func(fd uintptr) {
		for {
			werr = writeCmd(fd, b, resp)
			if werr != unix.EINTR {
				return
			}
		}
	})
	if err != nil {
		return closedErr(op)
	}
	if werr != nil {
		errno, _ := werr.(unix.Errno)
		return &Error{Op: op, Errno: errno}
	}
	return nil
}

// read is the Channel's event reader.
func (ch *Channel) read() {
	defer close(ch.done)
	resp := make([]byte, eventRespSize)
	body := make([]byte, 8) // struct rdma_ucm_get_event {response}
	binary.LittleEndian.PutUint64(body, addrOf(resp))
	b := make([]byte, 16)
	le := binary.LittleEndian
	le.PutUint32(b[0:], rdma.RDMA_USER_CM_CMD_GET_EVENT)
	le.PutUint16(b[4:], 8)
	le.PutUint16(b[6:], eventRespSize)
	copy(b[8:], body)
	for {
		var werr error
		err := ch.rc.Read(func(fd uintptr) bool {
			werr = writeCmd(fd, b, resp)
			return werr != unix.EAGAIN
		})
		if err == nil && werr == unix.EINTR {
			continue
		}
		if err == nil && werr != nil {
			err = &Error{Op: "GET_EVENT", Errno: werr.(unix.Errno)}
		}
		if err != nil {
			ch.stop(err)
			return
		}
		r, derr := decodeEvent(resp)
		if derr != nil {
			continue
		}
		ch.deliver(r)
	}
}

// deliver hands an event to its ID. A CONNECT_REQUEST names the
// listener's uid and the new ID's handle; the new ID is made here.
func (ch *Channel) deliver(r rawEvent) {
	ch.mu.Lock()
	id := ch.ids[r.uid]
	if id == nil || ch.closed {
		ch.mu.Unlock()
		return
	}
	if r.ev.Type == EventConnectRequest {
		req := ch.newIDLocked(r.id)
		req.peer = r.ev
		r.ev.request = req
	}
	ch.mu.Unlock()
	if !id.push(r.ev) && r.ev.request != nil {
		// The listener closed meanwhile: nobody will take the request.
		r.ev.request.Close()
	}
}

// newIDLocked registers an ID for kernel handle h.
func (ch *Channel) newIDLocked(h uint32) *ID {
	ch.nextID++
	id := &ID{ch: ch, handle: h, uid: ch.nextID, notify: make(chan struct{}, 1)}
	ch.ids[id.uid] = id
	return id
}

func (ch *Channel) forget(id *ID) {
	ch.mu.Lock()
	delete(ch.ids, id.uid)
	ch.mu.Unlock()
}

// stop records why the reader ended and wakes every waiter.
func (ch *Channel) stop(err error) {
	ch.mu.Lock()
	if errors.Is(err, os.ErrClosed) || ch.closed {
		err = closedErr("GET_EVENT")
	}
	ch.err = err
	ids := make([]*ID, 0, len(ch.ids))
	for _, id := range ch.ids {
		ids = append(ids, id)
	}
	ch.mu.Unlock()
	for _, id := range ids {
		id.wake()
	}
}

// Close closes the device, which destroys every ID on it, and waits for
// the event reader to stop. Closing twice does nothing.
func (ch *Channel) Close() error {
	ch.mu.Lock()
	if ch.closed {
		ch.mu.Unlock()
		return nil
	}
	ch.closed = true
	ids := ch.ids
	ch.ids = map[uint64]*ID{}
	ch.mu.Unlock()
	for _, id := range ids {
		id.abandon()
	}
	err := ch.f.Close()
	<-ch.done
	return err
}
