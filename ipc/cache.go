package ipc

import (
	"container/list"
	"context"
	"sync"
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
// Entries in use are never closed; Invalidate drops an entry at once for new
// Gets and closes its descriptor when the last reference is released.
//
// The exporter does not push revocations: call Invalidate when told that a
// buffer was revoked. A Get that misses asks the exporter, which refuses a
// revoked buffer.
//
// A Cache is safe for concurrent use.
type Cache struct {
	limit int

	mu      sync.Mutex
	entries map[cacheKey]*cacheEntry
	idle    *list.List // of *cacheEntry with refs == 0, most recent at the front
	closed  bool
}

type cacheEntry struct {
	key   cacheKey
	ready chan struct{} // closed when im or err is set
	im    *Imported
	err   error
	refs  int
	stale bool          // removed from entries; close at refs == 0
	elem  *list.Element // in idle while refs == 0
}

// NewCache returns a Cache that keeps at most limit idle imports (at least 1).
func NewCache(limit int) *Cache {
	if limit < 1 {
		limit = 1
	}
	return &Cache{limit: limit, entries: map[cacheKey]*cacheEntry{}, idle: list.New()}
}

// CachedImport is a reference to an import held in a Cache.
type CachedImport struct {
	*Imported
	c    *Cache
	e    *cacheEntry
	once sync.Once
}

// Release drops the reference. It is idempotent. Do not close the Imported
// of a CachedImport: the Cache owns it.
func (ci *CachedImport) Release() {
	ci.once.Do(func() { ci.c.release(ci.e) })
}

// Get returns the import of h from the exporter at addr, importing it on a
// miss (concurrent Gets of one handle share one import). Failed imports are
// not cached.
func (c *Cache) Get(ctx context.Context, addr string, h Handle) (*CachedImport, error) {
	k := keyOf(h)
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		e, ok := c.entries[k]
		if !ok {
			e = &cacheEntry{key: k, ready: make(chan struct{}), refs: 1}
			c.entries[k] = e
			c.mu.Unlock()
			im, err := Import(ctx, addr, h)
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
			c.release(e)
			return nil, ctx.Err()
		}
		if e.err != nil {
			c.release(e)
			continue // the first Get failed; try for ourselves
		}
		return &CachedImport{Imported: e.im, c: c, e: e}, nil
	}
}

func (c *Cache) release(e *cacheEntry) {
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
	for _, im := range toClose {
		im.Close()
	}
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
// descriptor is closed once no reference remains.
func (c *Cache) Invalidate(h Handle) {
	c.mu.Lock()
	e, ok := c.entries[keyOf(h)]
	var im *Imported
	if ok {
		delete(c.entries, e.key)
		e.stale = true
		if e.elem != nil {
			c.idle.Remove(e.elem)
			e.elem = nil
			im, e.im = e.im, nil
		}
	}
	c.mu.Unlock()
	if im != nil {
		im.Close()
	}
}

// Len returns the number of entries (in use or idle).
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Close closes every idle import now and every import in use at its last
// Release; later Gets fail with ErrClosed.
func (c *Cache) Close() error {
	c.mu.Lock()
	c.closed = true
	var out []*Imported
	for c.idle.Len() > 0 {
		e := c.idle.Remove(c.idle.Front()).(*cacheEntry)
		e.elem = nil
		delete(c.entries, e.key)
		out = append(out, e.im)
		e.im = nil
	}
	for k, e := range c.entries {
		e.stale = true
		delete(c.entries, k)
	}
	c.mu.Unlock()
	for _, im := range out {
		im.Close()
	}
	return nil
}
