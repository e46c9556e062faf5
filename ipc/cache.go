package ipc

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/gaudi-go/gaudi/internal/errclosed"
)

// cacheKey names an export across processes: the exporter (pid in its pid
// namespace) and the buffer id. The buffer id is random per export, so a
// reused device VA or pid never hits a stale entry of an old buffer.
type cacheKey struct {
	pid      uint32
	pidNS    uint64
	bufferID [16]byte
}

func keyOf(h Handle) cacheKey {
	return cacheKey{pid: h.PID, pidNS: h.PIDNamespace, bufferID: h.BufferID}
}

// Cache keeps imported descriptors for reuse, with reference counts and a
// limit on the number of idle entries kept (least recently used first out).
// Entries in use are never closed; invalidation drops an entry at once for
// new Gets, closes the Revoked channel of its CachedImports, and closes its
// descriptor when the last reference is released.
//
// The Cache watches every exporter it imports from (see Watch): an entry is
// invalidated when its exporter revokes the buffer, and every entry of an
// exporter when the exporter closes or dies. Invalidate does the same by
// hand.
//
// A Cache is safe for concurrent use.
type Cache struct {
	limit int
	opts  ImportOptions

	mu      sync.Mutex
	entries map[cacheKey]*cacheEntry
	idle    *list.List // of *cacheEntry with refs == 0, most recent at the front
	watches map[string]*cacheWatch
	closed  bool
	wg      sync.WaitGroup // watch goroutines

	deferred []error // of closes the watch goroutines did, for Close
}

type cacheEntry struct {
	key     cacheKey
	addr    string
	ready   chan struct{} // closed when im or err is set
	im      *Imported
	err     error
	refs    int
	stale   bool          // removed from entries; close at refs == 0
	revoked chan struct{} // closed when stale is set
	elem    *list.Element // in idle while refs == 0
}

// cacheWatch is the Cache's watch of one exporter.
type cacheWatch struct {
	ready chan struct{} // closed when w or err is set
	w     *Watcher
	err   error
}

// NewCache returns a Cache that keeps at most limit idle imports (at
// least 1), with the default ImportOptions.
func NewCache(limit int) *Cache { return NewCacheWith(limit, ImportOptions{}) }

// NewCacheWith is NewCache whose imports and watches accept the exporters
// opts allows: every Get checks, as ImportWith and WatchExporter do, that
// the socket's owner is the handle's exporter, also when it imports again
// after an exporter went away (ErrUnexpectedPeer).
func NewCacheWith(limit int, opts ImportOptions) *Cache {
	if limit < 1 {
		limit = 1
	}
	return &Cache{limit: limit, opts: opts, entries: map[cacheKey]*cacheEntry{}, idle: list.New(), watches: map[string]*cacheWatch{}}
}

// CachedImport is a reference to an import held in a Cache.
type CachedImport struct {
	*Imported
	c    *Cache
	e    *cacheEntry
	once sync.Once
}

// Release drops the reference. When that closes imports (this one, if it
// was invalidated or the Cache closed, or idle ones beyond the limit), it
// returns the errors of closing them. It is idempotent. Do not close the
// Imported of a CachedImport: the Cache owns it.
func (ci *CachedImport) Release() error {
	var err error
	ci.once.Do(func() { err = ci.c.release(ci.e) })
	return err
}

// Revoked is closed when the entry is invalidated: the exporter revoked the
// buffer or went away, Invalidate was called, or the Cache closed. The
// descriptor stays valid until Release; holders should stop using the
// memory and release it.
func (ci *CachedImport) Revoked() <-chan struct{} { return ci.e.revoked }

// Get returns the import of h from the exporter at addr, importing it on a
// miss (concurrent Gets of one handle share one import). Failed imports are
// not cached. The first Get for an exporter also starts watching it, and
// fails if it cannot.
func (c *Cache) Get(ctx context.Context, addr string, h Handle) (*CachedImport, error) {
	k := keyOf(h)
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, errclosed.New("ipc: cache")
		}
		e, ok := c.entries[k]
		if !ok {
			e = &cacheEntry{key: k, addr: addr, ready: make(chan struct{}), refs: 1, revoked: make(chan struct{})}
			c.entries[k] = e
			c.mu.Unlock()
			// Watch before importing: a revocation after the import is
			// then always heard, one before it makes the import fail.
			im, err := (*Imported)(nil), c.watch(ctx, addr, h)
			if err == nil {
				im, err = ImportWith(ctx, addr, h, c.opts)
			}
			c.mu.Lock()
			e.im, e.err = im, err
			close(e.ready)
			if err != nil {
				if c.entries[k] == e {
					delete(c.entries, k)
				}
				c.mu.Unlock()
				return nil, err
			}
			if e.stale {
				// Revoked (or the Cache closed) while importing.
				e.refs--
				e.im = nil
				c.mu.Unlock()
				return nil, errors.Join(fmt.Errorf("ipc: import from %s: %w", addr, ErrRevoked), im.Close())
			}
			c.mu.Unlock()
			return &CachedImport{Imported: im, c: c, e: e}, nil
		}
		if e.elem != nil {
			c.idle.Remove(e.elem)
			e.elem = nil
		}
		e.refs++
		c.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), c.release(e))
		}
		c.mu.Lock()
		im, failed := e.im, e.err != nil || e.stale
		c.mu.Unlock()
		if failed || im == nil {
			// The first Get failed, or the entry went stale; try again.
			// A stale entry's import this closes is not this Get's.
			c.report(c.release(e))
			continue
		}
		return &CachedImport{Imported: im, c: c, e: e}, nil
	}
}

// release drops a reference to e and returns the errors of closing the
// imports that closes.
func (c *Cache) release(e *cacheEntry) error {
	c.mu.Lock()
	e.refs--
	var toClose []*Imported
	if e.refs == 0 && e.im != nil {
		if e.stale || c.closed {
			toClose = append(toClose, e.im)
			e.im = nil
		} else {
			e.elem = c.idle.PushFront(e)
			toClose = c.trimLocked()
		}
	}
	c.mu.Unlock()
	return closeAll(toClose)
}

// closeAll closes imports and returns the errors.
func closeAll(ims []*Imported) error {
	var errs []error
	for _, im := range ims {
		if err := im.Close(); err != nil {
			errs = append(errs, fmt.Errorf("ipc: close import: %w", err))
		}
	}
	return errors.Join(errs...)
}

// report keeps the error of a close that no call can return, for Close.
func (c *Cache) report(err error) {
	if err == nil {
		return
	}
	c.mu.Lock()
	c.deferred = append(c.deferred, err)
	c.mu.Unlock()
}

// trimLocked evicts idle entries beyond the limit.
func (c *Cache) trimLocked() []*Imported {
	var out []*Imported
	for c.idle.Len() > c.limit {
		e := c.idle.Remove(c.idle.Back()).(*cacheEntry)
		e.elem = nil
		delete(c.entries, e.key)
		out = append(out, e.im)
		e.im = nil
	}
	return out
}

// Invalidate drops the entry of h, if any: new Gets import again, and its
// descriptor is closed once no reference remains (now if none does, and
// the error of that close returned).
func (c *Cache) Invalidate(h Handle) error {
	c.mu.Lock()
	var im *Imported
	if e, ok := c.entries[keyOf(h)]; ok {
		im = c.dropLocked(e)
	}
	c.mu.Unlock()
	if im == nil {
		return nil
	}
	return closeAll([]*Imported{im})
}

// dropLocked makes e stale and returns its import if it is idle, for the
// caller to close.
func (c *Cache) dropLocked(e *cacheEntry) *Imported {
	if c.entries[e.key] == e {
		delete(c.entries, e.key)
	}
	if e.stale {
		return nil
	}
	e.stale = true
	close(e.revoked)
	if e.elem == nil {
		return nil
	}
	c.idle.Remove(e.elem)
	e.elem = nil
	im := e.im
	e.im = nil
	return im
}

// watch makes sure the exporter at addr, the one that issued h, is being
// watched.
func (c *Cache) watch(ctx context.Context, addr string, h Handle) error {
	c.mu.Lock()
	cw, ok := c.watches[addr]
	if !ok {
		cw = &cacheWatch{ready: make(chan struct{})}
		c.watches[addr] = cw
		c.mu.Unlock()
		w, err := WatchExporter(ctx, addr, h, c.opts)
		c.mu.Lock()
		cw.w, cw.err = w, err
		close(cw.ready)
		switch {
		case err != nil:
			delete(c.watches, addr)
		case c.closed:
			delete(c.watches, addr)
			c.mu.Unlock()
			w.Close()
			return errclosed.New("ipc: cache")
		default:
			c.wg.Add(1)
			go c.follow(addr, cw)
		}
		c.mu.Unlock()
		return err
	}
	c.mu.Unlock()
	select {
	case <-cw.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	if cw.err != nil {
		return c.watch(ctx, addr, h) // the first attempt failed; try for ourselves
	}
	return nil
}

// follow invalidates entries of addr as its exporter revokes them, and all
// of them when the exporter goes away.
func (c *Cache) follow(addr string, cw *cacheWatch) {
	defer c.wg.Done()
	defer cw.w.Close()
	for {
		id, err := cw.w.Next(context.Background())
		var toClose []*Imported
		c.mu.Lock()
		for _, e := range c.entries {
			if e.addr == addr && (err != nil || e.key.bufferID == id) {
				if im := c.dropLocked(e); im != nil {
					toClose = append(toClose, im)
				}
			}
		}
		if err != nil && c.watches[addr] == cw {
			delete(c.watches, addr)
		}
		c.mu.Unlock()
		c.report(closeAll(toClose))
		if err != nil {
			return
		}
	}
}

// Watching returns the number of exporters the Cache is watching.
func (c *Cache) Watching() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.watches)
}

// Len returns the number of entries (in use or idle).
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Close stops watching, closes every idle import now and every import in
// use at its last Release; later Gets fail with an error matching
// ErrClosed. It returns the errors of the imports it closed, and of those
// closed before on a revocation the Cache heard. It is idempotent.
func (c *Cache) Close() error {
	c.mu.Lock()
	c.closed = true
	var out []*Imported
	for _, e := range c.entries {
		if im := c.dropLocked(e); im != nil {
			out = append(out, im)
		}
	}
	var ws []*Watcher
	for addr, cw := range c.watches {
		select {
		case <-cw.ready:
			if cw.w != nil {
				ws = append(ws, cw.w)
			}
		default: // Watch in flight: watch closes it
		}
		delete(c.watches, addr)
	}
	c.mu.Unlock()
	for _, w := range ws {
		w.Close()
	}
	c.wg.Wait()
	c.mu.Lock()
	errs := c.deferred
	c.deferred = nil
	c.mu.Unlock()
	return errors.Join(append(errs, closeAll(out))...)
}
