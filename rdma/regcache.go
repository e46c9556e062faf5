package rdma

import (
	"errors"
	"sync"

	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/internal/memlink"
	"github.com/gaudi-go/gaudi/memory"
)

// region is a registration of device memory with the NIC: what a
// zero-copy transfer names in its work requests.
type region interface {
	LKey() uint32
	RKey() uint32
	Close() error
}

// ibRegion is a region of ib.RegisterBuffer: a dma-buf export of the
// range and its memory region.
type ibRegion struct{ rb *ib.RegisteredBuffer }

func (r ibRegion) LKey() uint32 { return r.rb.MR().LKey() }
func (r ibRegion) RKey() uint32 { return r.rb.MR().RKey() }
func (r ibRegion) Close() error { return r.rb.Close() }

// regKey names one registration: the buffer (not its device address,
// which a later allocation may reuse), the page-aligned span and the
// access.
type regKey struct {
	buf    *memory.Buffer
	off, n uint64
	access ib.Access
}

// regEntry is a cached registration. refs counts the transfers using it;
// a dead entry (its buffer closing, or the cache closed) is closed by the
// last of them.
type regEntry struct {
	key    regKey
	reg    region
	refs   int
	dead   bool
	cancel func() // withdraws the buffer's close hook
}

// LKey and RKey are the region's keys.
func (e *regEntry) LKey() uint32 { return e.reg.LKey() }
func (e *regEntry) RKey() uint32 { return e.reg.RKey() }

// regCache keeps zero-copy registrations between transfers, so a buffer
// sent or received again costs no export, no registration and no
// deregistration. An entry goes when its buffer's Close is called (the
// buffer's close hook, memlink.OnClose, runs before Close checks for
// open exports, so the cache never keeps a buffer from closing), or when
// the Conn closes. No entry outlives its buffer: a closing buffer's
// entry is closed by the last transfer using it, and such a transfer
// holds the buffer (memlink.Hold), whose release waits for it. It is
// safe for concurrent use.
type regCache struct {
	// register makes a registration (ib.RegisterBuffer in a Conn).
	register func(b *memory.Buffer, off, n uint64, access ib.Access) (region, error)
	// off disables the cache: every get registers, every put closes.
	off bool

	mu     sync.Mutex
	m      map[regKey]*regEntry
	closed bool
}

// get returns the registration of key, registering it on a miss; put
// gives it back.
func (c *regCache) get(key regKey) (*regEntry, error) {
	c.mu.Lock()
	if e := c.m[key]; e != nil && !e.dead {
		e.refs++
		c.mu.Unlock()
		return e, nil
	}
	c.mu.Unlock()
	reg, err := c.register(key.buf, key.off, key.n, key.access)
	if err != nil {
		return nil, err
	}
	e := &regEntry{key: key, reg: reg, refs: 1}
	if c.off {
		e.dead = true
		return e, nil
	}
	// The hook may run at once after this (a Close racing the transfer):
	// it finds the entry in the map below, or finds it dead.
	cancel, err := memlink.OnClose(key.buf, func() { c.invalidate(e) })
	if err != nil {
		e.dead = true // the buffer is closing: use once, then close
		return e, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e.cancel = cancel
	if c.closed || c.m[key] != nil && !c.m[key].dead {
		// Closed meanwhile, or another transfer cached the same span
		// first: this one is used once.
		e.dead = true
		return e, nil
	}
	if c.m == nil {
		c.m = map[regKey]*regEntry{}
	}
	c.m[key] = e
	return e, nil
}

// put ends a get: a dead entry's last user closes it.
func (c *regCache) put(e *regEntry) error {
	c.mu.Lock()
	e.refs--
	last := e.dead && e.refs == 0
	c.mu.Unlock()
	if last {
		return e.close()
	}
	return nil
}

// invalidate is an entry's buffer's close hook.
func (c *regCache) invalidate(e *regEntry) {
	c.mu.Lock()
	if c.m[e.key] == e {
		delete(c.m, e.key)
	}
	idle := !e.dead && e.refs == 0
	e.dead = true
	c.mu.Unlock()
	if idle {
		_ = e.close() // the buffer's Close reports what the dma-buf's did not
	}
}

func (e *regEntry) close() error {
	if e.cancel != nil {
		e.cancel()
	}
	return e.reg.Close()
}

// close closes every idle entry and makes the cache register once per
// use from then on. The Conn calls it after its transfers finished and
// its QP is destroyed.
func (c *regCache) close() error {
	c.mu.Lock()
	c.closed = true
	var idle []*regEntry
	for k, e := range c.m {
		delete(c.m, k)
		if !e.dead && e.refs == 0 {
			idle = append(idle, e)
		}
		e.dead = true
	}
	c.mu.Unlock()
	var errs []error
	for _, e := range idle {
		errs = append(errs, e.close())
	}
	return errors.Join(errs...)
}
