package memory

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/devio"
	"github.com/gaudi-go/gaudi/internal/errclosed"
	"github.com/gaudi-go/gaudi/internal/leak"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// Manager owns the memory of one open compute node: device buffers, host
// mappings, dma-buf exports, the address index and the registration cache.
// Everything it hands out is released by its owner's Close, or by the
// Manager's Close at the latest.
//
// A Manager is safe for concurrent use.
type Manager struct {
	dev *device.Device
	io  *ioctl.Device
	hw  device.HWIPInfo
	// virtualDRAM is set where device memory is mapped through the device
	// MMU (Gaudi2): ALLOC returns a handle and MAP a device VA. Without it
	// (Gaudi) DRAM is addressed physically and the library allocates it.
	virtualDRAM bool

	mu      sync.RWMutex
	closed  bool
	devVA   spans[*Buffer]     // device buffers by device address
	hostVA  spans[*HostBuffer] // host mappings by device address
	hostPtr spans[*HostBuffer] // host mappings by host address
	phys    *physAlloc         // DRAM allocator where the driver has none
	cache   *regCache

	errMu    sync.Mutex
	deferred []error // release errors no call could return, for Close

	moverMu sync.Mutex
	mover   Mover         // the DMA engine ReadAt and WriteAt use (io.go)
	stages  []*HostBuffer // pooled staging buffers of ReadAt and WriteAt

	leak      runtime.Cleanup // reports a Manager dropped without Close
	detach    func()          // leaves the device's dependents (device.Device.Close)
	closeDone chan struct{}   // closed when the first Close finished
}

// Options configure a Manager.
type Options struct {
	// CacheEntries and CacheBytes limit the registration cache of host
	// mappings (MapHostCached): least recently used mappings that nobody
	// holds are unmapped beyond them. Zero means 1024 entries and 64 GiB.
	CacheEntries int
	CacheBytes   uint64
}

// New returns a Manager for a compute node.
func New(d *device.Device, opts Options) (*Manager, error) {
	if d.IsControl() {
		return nil, ErrNotControl
	}
	hw := d.HWIPInfo()
	m := &Manager{
		dev:         d,
		io:          devio.Of(d),
		hw:          hw,
		virtualDRAM: d.ASIC().IsGaudi2() || d.ASIC().IsGaudi3(),
	}
	if !m.virtualDRAM {
		m.phys = newPhysAlloc(hw.DRAMBase, hw.DRAMSize)
	}
	if opts.CacheEntries <= 0 {
		opts.CacheEntries = 1024
	}
	if opts.CacheBytes == 0 {
		opts.CacheBytes = 64 << 30
	}
	m.cache = newRegCache(m, opts.CacheEntries, opts.CacheBytes)
	detach, err := devio.Attach(d, "*memory.Manager", m)
	if err != nil {
		return nil, fmt.Errorf("memory manager: %w", err)
	}
	m.detach = detach
	m.leak = leak.Track(m, leak.Info{Type: "*memory.Manager", Device: d.Path(), FD: -1}, 0)
	return m, nil
}

// Device returns the device the Manager allocates on.
func (m *Manager) Device() *device.Device { return m.dev }

// Close releases everything still allocated: cached host mappings, host
// buffers and device buffers (exports must be closed first; Close reports
// ErrInUse for buffers that still have one and leaves them). Memory a
// transfer holds (see Buffer.Hold) is released by the transfer's last
// Release instead, as with the buffers' own Close. It returns every error
// of the releases it did, joined, and the errors of releases nobody could
// return before (mappings the registration cache evicted). It is
// idempotent: a later or concurrent call waits for the first to finish and
// returns nil. The device's Close closes a Manager still open on it.
//
// A Manager dropped without Close is reported when the garbage collector
// finds it (see device.SetLeakReporter), with the buffers and mappings it
// still held; nothing is released then.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		done := m.closeDone
		m.mu.Unlock()
		<-done
		return nil
	}
	m.closed = true
	m.closeDone = make(chan struct{})
	m.leak.Stop()
	// Leave the device's dependents only when done, so that a concurrent
	// device Close waits for this one (through the wait above).
	defer m.detach()
	defer close(m.closeDone)
	var bufs []*Buffer
	for _, s := range m.devVA.s {
		bufs = append(bufs, s.val)
	}
	var hosts []*HostBuffer
	for _, s := range m.hostVA.s {
		hosts = append(hosts, s.val)
	}
	m.mu.Unlock()
	errs := []error{m.cache.clear()}
	for _, h := range hosts {
		errs = append(errs, h.shut())
	}
	for _, b := range bufs {
		errs = append(errs, b.Close())
	}
	m.errMu.Lock()
	errs = append(errs, m.deferred...)
	m.deferred = nil
	m.errMu.Unlock()
	return errors.Join(errs...)
}

// report keeps the error of a release that no call can return, for Close.
func (m *Manager) report(err error) {
	if err == nil {
		return
	}
	m.errMu.Lock()
	m.deferred = append(m.deferred, err)
	m.errMu.Unlock()
}

// memory issues MEMORY with args.
func (m *Manager) memory(args *hl.MemArgs) error {
	return m.io.Memory(args)
}

// releaseRetryFor bounds how long a release (UNMAP, FREE) is retried while
// the device is not operational; releaseRetryMax is the longest pause.
var (
	releaseRetryFor = 10 * time.Second
	releaseRetryMax = 100 * time.Millisecond
)

// releaseCall issues a MEMORY call that gives memory back. While the
// device is not operational (EBUSY, a reset in progress: the driver's
// hl_mem_ioctl checks hl_device_operational first) the call is retried
// with a growing pause, for up to releaseRetryFor: a transfer a reset
// aborted finishes, and releases its memory, while the reset still runs.
func (m *Manager) releaseCall(args *hl.MemArgs) error {
	saved := *args
	pause := time.Millisecond
	var start time.Time
	for {
		err := m.io.Memory(args)
		if err == nil || !errors.Is(err, ioctl.ErrNotOperational) {
			return err
		}
		if start.IsZero() {
			start = time.Now()
		} else if time.Since(start) > releaseRetryFor {
			return err
		}
		time.Sleep(pause)
		pause = min(2*pause, releaseRetryMax)
		*args = saved
	}
}

// pageSize is the unit device memory is allocated in.
func (m *Manager) pageSize() uint64 {
	if m.hw.DRAMPageSize != 0 {
		return m.hw.DRAMPageSize
	}
	return 2 << 20
}

// Kind says what an address is.
type Kind int

const (
	// Unknown is an address no live buffer or mapping covers.
	Unknown Kind = iota
	// DeviceMemory is an address in a device buffer.
	DeviceMemory
	// HostMemory is host memory mapped for the device: a host pointer, or
	// the device address of its mapping.
	HostMemory
)

// String returns "unknown", "device" or "host".
func (k Kind) String() string {
	switch k {
	case DeviceMemory:
		return "device"
	case HostMemory:
		return "host"
	}
	return "unknown"
}

// Region is what Lookup finds: the buffer or mapping that covers an
// address, and the address's offset in it.
type Region struct {
	Kind   Kind
	Offset uint64      // of the address within the buffer or mapping
	Device *Buffer     // for DeviceMemory
	Host   *HostBuffer // for HostMemory
}

// DeviceVA returns the device address of the region's start plus Offset.
func (r Region) DeviceVA() uint64 {
	switch r.Kind {
	case DeviceMemory:
		return r.Device.va + r.Offset
	case HostMemory:
		return r.Host.va + r.Offset
	}
	return 0
}

// Len returns how many bytes of the region follow the address.
func (r Region) Len() uint64 {
	switch r.Kind {
	case DeviceMemory:
		return r.Device.size - r.Offset
	case HostMemory:
		return r.Host.size - r.Offset
	}
	return 0
}

// Lookup finds what covers addr, which may be a device address (of a device
// buffer or of a host mapping) or a host pointer of a mapped host buffer.
// It takes O(log n) in the number of live buffers and mappings.
func (m *Manager) Lookup(addr uint64) Region {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if s, ok := m.devVA.find(addr); ok {
		// The allocation's padding past the buffer's Size is not the
		// buffer's: nothing covers it.
		if addr-s.start >= s.val.size {
			return Region{}
		}
		return Region{Kind: DeviceMemory, Offset: addr - s.start, Device: s.val}
	}
	if s, ok := m.hostVA.find(addr); ok {
		return Region{Kind: HostMemory, Offset: addr - s.start, Host: s.val}
	}
	if s, ok := m.hostPtr.find(addr); ok {
		return Region{Kind: HostMemory, Offset: addr - s.start, Host: s.val}
	}
	if h, off, ok := m.cache.lookupHost(addr); ok {
		return Region{Kind: HostMemory, Offset: off, Host: h}
	}
	return Region{}
}

func (m *Manager) errClosed(op string) error {
	return fmt.Errorf("%s: %w", op, errclosed.New("memory manager"))
}
