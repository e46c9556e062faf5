package memory

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// regCache keeps host mappings alive after use so that mapping the same
// range, or a range inside it, again costs no ioctl. Entries nobody holds
// are unmapped, least recently used first, beyond the count and byte
// limits. Safe for concurrent use.
type regCache struct {
	m          *Manager
	maxEntries int
	maxBytes   uint64

	mu    sync.Mutex
	idx   spans[*cacheEntry] // by host address
	lru   cacheEntry         // sentinel: lru.next is the most recent
	bytes uint64

	hits, misses, evictions atomic.Uint64
}

// cacheEntry is one cached mapping.
type cacheEntry struct {
	h          *HostBuffer
	start      uint64 // host address
	refs       int
	indexed    bool // in idx and on the LRU list
	prev, next *cacheEntry
}

func newRegCache(m *Manager, maxEntries int, maxBytes uint64) *regCache {
	c := &regCache{m: m, maxEntries: maxEntries, maxBytes: maxBytes}
	c.lru.next, c.lru.prev = &c.lru, &c.lru
	return c
}

// HostRef is a held reference to a cached host mapping. Release it when the
// device no longer uses the memory; the mapping itself stays cached. The
// zero HostRef is invalid.
type HostRef struct {
	e  *cacheEntry
	va uint64
	n  uint64
}

// VA returns the device address of the memory passed to MapHostCached.
func (r HostRef) VA() uint64 { return r.va }

// Len returns the length of that memory.
func (r HostRef) Len() uint64 { return r.n }

// Release drops the reference. It returns the errors of unmapping what the
// cache released because of it: the mapping itself if it was invalidated
// while held, and mappings evicted beyond the cache's limits. Releasing
// twice is a bug that the cache detects and ignores.
func (r HostRef) Release() error {
	if r.e == nil {
		return nil
	}
	return r.e.h.m.cache.put(r.e)
}

// CacheStats counts the registration cache's work.
type CacheStats struct {
	Hits, Misses, Evictions uint64
	Entries                 int
	Bytes                   uint64
}

// MapHostCached maps caller-provided host memory like MapHost, through the
// registration cache: when a cached mapping already covers mem, it is
// reused without an ioctl. The memory must not be Go-heap memory
// (ErrGoHeap) and must stay valid until it is invalidated (InvalidateHost)
// or the Manager is closed. Mappings the call evicts are unmapped; errors
// of those unmaps are returned by the Manager's Close.
//
// The cache knows memory by its address only. Memory unmapped without
// InvalidateHost and mapped again at the same address is served the old
// mapping, whose pages the driver pinned at MAP: the device then reads and
// writes the old pages, not the new memory (the simulator's strict mode
// reports such a transfer). AllocHost drops cached mappings of the
// addresses it receives, which cannot be what they pinned.
func (m *Manager) MapHostCached(mem []byte) (HostRef, error) {
	if len(mem) == 0 {
		return HostRef{}, fmt.Errorf("map host memory: empty: %w", ErrRange)
	}
	start := addrOf(mem)
	n := uint64(len(mem))
	c := m.cache
	c.mu.Lock()
	if s, ok := c.idx.find(start); ok && start+n <= s.end {
		e := s.val
		e.refs++
		c.touch(e)
		c.mu.Unlock()
		c.hits.Add(1)
		return HostRef{e: e, va: e.h.va + (start - e.start), n: n}, nil
	}
	c.mu.Unlock()
	c.misses.Add(1)
	if onGoHeap(mem) {
		return HostRef{}, fmt.Errorf("map host memory at %#x: %w", start, ErrGoHeap)
	}
	// Entries that overlap the new range but do not cover it are dropped
	// when nobody holds them.
	m.report(c.invalidate(start, start+n, false))
	h, err := m.mapCachedHost(mem)
	if err != nil {
		return HostRef{}, err
	}
	e := &cacheEntry{h: h, start: start, refs: 1}
	c.mu.Lock()
	if c.idx.insert(start, start+n, e) {
		e.indexed = true
		c.bytes += n
		c.pushFront(e)
	}
	victims := c.trim()
	c.mu.Unlock()
	m.report(c.unmap(victims))
	return HostRef{e: e, va: h.va, n: n}, nil
}

// mapCachedHost maps mem for the cache: indexed by device address only,
// since the cache indexes host addresses itself.
func (m *Manager) mapCachedHost(mem []byte) (*HostBuffer, error) {
	h, err := m.mapHost(mem, false, false)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.hostPtr.remove(addrOf(mem))
	m.mu.Unlock()
	h.mu.Lock()
	h.cached = true
	h.mu.Unlock()
	return h, nil
}

// InvalidateHost drops cached mappings that overlap mem, for example before
// the memory is freed: mappings nobody holds are unmapped now, and the
// errors of those unmaps returned; the others are unmapped when their last
// reference is released (see HostRef.Release).
func (m *Manager) InvalidateHost(mem []byte) error {
	if len(mem) == 0 {
		return nil
	}
	start := addrOf(mem)
	return m.cache.invalidate(start, start+uint64(len(mem)), true)
}

// CacheStats returns the registration cache's counters.
func (m *Manager) CacheStats() CacheStats {
	c := m.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Evictions: c.evictions.Load(), Entries: c.idx.len(), Bytes: c.bytes}
}

// lookupHost finds the cached mapping covering a host address.
func (c *regCache) lookupHost(addr uint64) (*HostBuffer, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.idx.find(addr)
	if !ok {
		return nil, 0, false
	}
	return s.val.h, addr - s.start, true
}

// put drops one reference and returns the errors of the unmaps it caused.
func (c *regCache) put(e *cacheEntry) error {
	c.mu.Lock()
	if e.refs <= 0 {
		c.mu.Unlock()
		return nil
	}
	e.refs--
	var victims []*cacheEntry
	if e.refs == 0 && !e.indexed {
		victims = append(victims, e) // invalidated while held
	}
	victims = append(victims, c.trim()...)
	c.mu.Unlock()
	return c.unmap(victims)
}

// invalidate removes entries overlapping [start, end); with all set it
// also removes held ones (unmapped on their last release). It returns the
// errors of the unmaps it made.
func (c *regCache) invalidate(start, end uint64, all bool) error {
	c.mu.Lock()
	var victims []*cacheEntry
	for i := 0; i < len(c.idx.s); {
		s := c.idx.s[i]
		if s.end <= start || s.start >= end || (!all && s.val.refs > 0) {
			i++
			continue
		}
		c.drop(s.val)
		if s.val.refs == 0 {
			victims = append(victims, s.val)
		}
	}
	c.mu.Unlock()
	return c.unmap(victims)
}

// trim picks least recently used, unheld entries beyond the limits and
// takes them out of the cache. c.mu must be held.
func (c *regCache) trim() []*cacheEntry {
	var victims []*cacheEntry
	for e := c.lru.prev; e != &c.lru && (c.idx.len() > c.maxEntries || c.bytes > c.maxBytes); {
		prev := e.prev
		if e.refs == 0 {
			c.drop(e)
			victims = append(victims, e)
			c.evictions.Add(1)
		}
		e = prev
	}
	return victims
}

// drop takes e out of the index and the LRU list. c.mu must be held.
func (c *regCache) drop(e *cacheEntry) {
	if !e.indexed {
		return
	}
	c.idx.remove(e.start)
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	e.indexed = false
	c.bytes -= e.h.size
}

func (c *regCache) pushFront(e *cacheEntry) {
	e.prev, e.next = &c.lru, c.lru.next
	c.lru.next.prev = e
	c.lru.next = e
}

func (c *regCache) touch(e *cacheEntry) {
	if !e.indexed || c.lru.next == e {
		return
	}
	e.prev.next, e.next.prev = e.next, e.prev
	c.pushFront(e)
}

// unmap releases the mappings of entries taken out of the cache, each
// once no transfer holds it, and returns the errors of the releases done
// now (the last Release of a held one returns its own).
func (c *regCache) unmap(victims []*cacheEntry) error {
	var errs []error
	for _, e := range victims {
		errs = append(errs, e.h.shut())
	}
	return errors.Join(errs...)
}

// clear unmaps every entry nobody holds and forgets the rest, which are
// unmapped on their last release.
func (c *regCache) clear() error { return c.invalidate(0, ^uint64(0), true) }
