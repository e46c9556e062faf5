package ioctl

import (
	"errors"
	"fmt"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Encoding is the way a kernel numbers the habanalabs ioctls.
type Encoding uint8

const (
	// EncodingUnknown means the encoding has not been, or could not be,
	// determined.
	EncodingUnknown Encoding = iota
	// EncodingDRM is the accel/DRM numbering, _IOWR('d', 0x40+nr, args), used
	// by /dev/accel/accelN nodes (Linux 6.6 and later).
	EncodingDRM
	// EncodingLegacy is the original numbering, _IOWR('H', nr+1, args), used
	// by /dev/hlN nodes of kernels up to about 6.5.
	EncodingLegacy
)

// String returns "drm", "legacy" or "unknown".
func (e Encoding) String() string {
	switch e {
	case EncodingDRM:
		return "drm"
	case EncodingLegacy:
		return "legacy"
	}
	return "unknown"
}

// requests holds the request number of each ioctl for each encoding.
var requests = [...][numNr]uint{
	EncodingDRM: {
		nrInfo:   uint(hl.DRM_IOCTL_HL_INFO),
		nrCB:     uint(hl.DRM_IOCTL_HL_CB),
		nrCS:     uint(hl.DRM_IOCTL_HL_CS),
		nrWaitCS: uint(hl.DRM_IOCTL_HL_WAIT_CS),
		nrMemory: uint(hl.DRM_IOCTL_HL_MEMORY),
		nrDebug:  uint(hl.DRM_IOCTL_HL_DEBUG),
		nrNIC:    uint(hl.DRM_IOCTL_HL_NIC),
	},
	EncodingLegacy: {
		nrInfo:   uint(hl.HL_LEGACY_IOCTL_INFO),
		nrCB:     uint(hl.HL_LEGACY_IOCTL_CB),
		nrCS:     uint(hl.HL_LEGACY_IOCTL_CS),
		nrWaitCS: uint(hl.HL_LEGACY_IOCTL_WAIT_CS),
		nrMemory: uint(hl.HL_LEGACY_IOCTL_MEMORY),
		nrDebug:  uint(hl.HL_LEGACY_IOCTL_DEBUG),
		// nrNIC has no legacy number: the out-of-tree driver added it
		// after the move to accel; request refuses it with ENOTTY.
	},
}

// probeSize is the size of the HW_IP_INFO buffer used by the probe. The driver
// copies min(size, sizeof(struct hl_info_hw_ip_info)) bytes, so any non-zero
// size works.
const probeSize = 8

// encoding returns the probed encoding, probing on first use. The result is
// computed once; only a probe cut short by Close is tried again.
func (d *Device) encoding() (Encoding, error) {
	if e := Encoding(d.enc.Load()); e != EncodingUnknown {
		return e, nil
	}
	d.probeMu.Lock()
	defer d.probeMu.Unlock()
	if e := Encoding(d.enc.Load()); e != EncodingUnknown {
		return e, nil
	}
	if d.probeErr != nil {
		return EncodingUnknown, d.probeErr
	}
	e, err := d.probe()
	if err != nil {
		if !errors.Is(err, ErrClosed) {
			d.probeErr = err
		}
		return EncodingUnknown, err
	}
	d.enc.Store(uint32(e))
	return e, nil
}

// probe asks for HW_IP_INFO with the DRM request first. A DRM kernel
// dispatches it; a legacy kernel rejects the unknown number with ENOTTY, and
// other drivers answer ENOTTY or EINVAL. An EBADF comes from a descriptor
// that is not open, before any handler, and settles nothing: it is the
// probe's failure. Any other answer, success or not, comes from the
// habanalabs handler and settles the question. Only when DRM
// is rejected is the legacy request tried: a DRM kernel looks at the number
// alone, so a legacy request would reach an unrelated DRM core ioctl.
func (d *Device) probe() (Encoding, error) {
	var drmErr error
	for _, enc := range [...]Encoding{EncodingDRM, EncodingLegacy} {
		var (
			args hl.InfoArgs
			buf  [probeSize]byte
		)
		err := d.info(requests[enc][nrInfo], hl.HL_INFO_HW_IP_INFO, &args, buf[:])
		if err == nil {
			return enc, nil
		}
		var e *Error
		if errors.Is(err, ErrClosed) || !errors.As(err, &e) || e.Errno == unix.EBADF {
			return EncodingUnknown, err
		}
		if e.Errno != unix.ENOTTY && e.Errno != unix.EINVAL {
			return enc, nil
		}
		if enc == EncodingDRM {
			drmErr = err
			continue
		}
		return EncodingUnknown, fmt.Errorf("probe ioctl encoding of %s: %w (drm: %w; legacy: %w)",
			d.f.Name(), ErrNotSupported, drmErr, err)
	}
	panic("unreachable")
}
