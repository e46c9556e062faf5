package ib

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/gaudi-go/gaudi/uapi/rdma"
	"golang.org/x/sys/unix"
)

// CompChannel is a completion channel: the descriptor on which the kernel
// reports that an armed CQ got a completion (CREATE_COMP_CHANNEL,
// include/uapi/rdma/ib_user_verbs.h; each read(2) returns one struct
// ib_uverbs_comp_event_desc holding the CQ's user handle,
// drivers/infiniband/core/uverbs_main.c). The descriptor is non-blocking
// and waits in the Go runtime's poller, so a wait costs no thread.
//
// A CompChannel is safe for concurrent use; waits are served one at a
// time. It belongs to its Context; Close closes the descriptor (CQs
// still bound to it keep the kernel's channel alive until they go).
type CompChannel struct {
	c  *Context
	f  *os.File
	rc syscall.RawConn
	// sem admits one waiter into the poller at a time, so the read
	// deadline that cancels a wait belongs to that waiter's ctx.
	sem chan struct{}

	mu     sync.Mutex
	closed bool
	cqs    map[uint64]*CQ // by user handle
}

// CreateCompChannel creates a completion channel (the write command
// CREATE_COMP_CHANNEL through INVOKE_WRITE).
func (c *Context) CreateCompChannel() (*CompChannel, error) {
	if err := c.use(opCreateCompChannel); err != nil {
		return nil, err
	}
	core := make([]byte, 8) // response
	resp, _, err := c.invokeWrite(opCreateCompChannel, rdma.IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, core, 4, nil, 0)
	if err != nil {
		return nil, err
	}
	fd := int(int32(binary.LittleEndian.Uint32(resp)))
	if fd < 0 {
		return nil, &Error{Op: opCreateCompChannel, Device: c.dev.Name, Errno: unix.EBADF}
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("completion channel: %w", err)
	}
	f := os.NewFile(uintptr(fd), "[infinibandevent]")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("completion channel: %w", err)
	}
	ch := &CompChannel{c: c, f: f, rc: rc, sem: make(chan struct{}, 1), cqs: map[uint64]*CQ{}}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		f.Close()
		return nil, closedErr(opCreateCompChannel, c.dev.Name)
	}
	c.channels[ch] = struct{}{}
	c.mu.Unlock()
	return ch, nil
}

// attach records cq as a CQ bound to the channel.
func (ch *CompChannel) attach(cq *CQ) bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.closed {
		return false
	}
	ch.cqs[cq.userHandle] = cq
	return true
}

func (ch *CompChannel) detach(cq *CQ) {
	ch.mu.Lock()
	delete(ch.cqs, cq.userHandle)
	ch.mu.Unlock()
}

// aLongTimeAgo is a read deadline in the past: it wakes a poller wait.
var aLongTimeAgo = time.Unix(1, 0)

// waitFor blocks until the kernel reports a completion event for cq (an
// event for another CQ of the channel is recorded on that CQ), ctx ends,
// or the channel closes.
func (ch *CompChannel) waitFor(ctx context.Context, cq *CQ) error {
	select {
	case ch.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-ch.sem }()
	if err := ctx.Err(); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { ch.f.SetReadDeadline(aLongTimeAgo) })
	defer func() {
		if !stop() {
			// The deadline was set (or is being set): clear it for the
			// next waiter once the func is done.
			ch.f.SetReadDeadline(time.Time{})
		}
	}()
	var buf [8]byte
	for {
		if cq.notified.Swap(false) {
			return nil
		}
		var n int
		var rerr error
		err := ch.rc.Read(func(fd uintptr) bool {
			n, rerr = unix.Read(int(fd), buf[:])
			return rerr != unix.EAGAIN
		})
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			if ctx.Err() != nil {
				return ctx.Err()
			}
			ch.f.SetReadDeadline(time.Time{})
			continue
		case errors.Is(err, os.ErrClosed):
			return closedErr(opGetCompEvent, ch.c.dev.Name)
		case err != nil:
			return fmt.Errorf("completion channel: %w", err)
		case rerr == unix.EINTR:
			continue
		case rerr != nil:
			return &Error{Op: opGetCompEvent, Device: ch.c.dev.Name, Errno: rerr.(unix.Errno)}
		case n != len(buf):
			return fmt.Errorf("completion channel: %d-byte event: %w", n, ErrMalformed)
		}
		h := binary.LittleEndian.Uint64(buf[:])
		ch.mu.Lock()
		other := ch.cqs[h]
		ch.mu.Unlock()
		if other == cq {
			return nil
		}
		if other != nil {
			other.notified.Store(true)
		}
	}
}

// interrupt wakes the waiter in the poller, which looks at its CQ's flag
// again (another CQ's waiter clears the deadline and goes on waiting).
func (ch *CompChannel) interrupt() {
	ch.f.SetReadDeadline(aLongTimeAgo)
}

// Close closes the channel's descriptor; a wait in progress returns
// ErrClosed. Closing twice does nothing.
func (ch *CompChannel) Close() error {
	c := ch.c
	c.mu.Lock()
	delete(c.channels, ch)
	c.mu.Unlock()
	return ch.abandon()
}

// abandon closes the descriptor once: for Close, and for a closing
// Context (which has already forgotten its channels).
func (ch *CompChannel) abandon() error {
	ch.mu.Lock()
	if ch.closed {
		ch.mu.Unlock()
		return nil
	}
	ch.closed = true
	ch.mu.Unlock()
	return ch.f.Close()
}
