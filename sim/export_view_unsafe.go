package sim

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapView maps view v's runs in order, as the files that hold them (the
// DRAM memfd, segments' memfds) hold them, with share (MAP_SHARED, or
// MAP_PRIVATE for a read-only import). Unmapped with unix.MunmapPtr.
func (m *sparseMem) mapView(v *view, share int) ([]byte, error) {
	if err := m.ensure(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed || v.witness < 0 {
		return nil, unix.EOPNOTSUPP
	}
	base, err := unix.MmapPtr(-1, 0, nil, uintptr(v.size), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, err
	}
	pos := uintptr(0)
	for _, r := range v.runs {
		err = m.spans(r.off, r.n, func(s span) error {
			_, err := unix.MmapPtr(s.fd, int64(s.fileOff), unsafe.Add(base, pos), uintptr(s.n), unix.PROT_READ|unix.PROT_WRITE, share|unix.MAP_FIXED)
			pos += uintptr(s.n)
			return err
		})
		if err != nil {
			unix.MunmapPtr(base, uintptr(v.size))
			return nil, err
		}
	}
	return unsafe.Slice((*byte)(base), v.size), nil
}
