package ib

import (
	"errors"

	"github.com/gaudi-go/gaudi/uapi/rdma"
	"golang.org/x/sys/unix"
)

// probeCandidates are the driver ids probeDriverID tries, the common NICs
// first. Retired ids (CXGB3, NES) are left out.
var probeCandidates = []DriverID{
	DriverMLX5, DriverRXE, DriverIRDMA, DriverBNXTRE, DriverEFA, DriverMANA, DriverSIW, DriverERDMA, DriverMLX4,
	DriverID(rdma.RDMA_DRIVER_CXGB4), DriverID(rdma.RDMA_DRIVER_MTHCA), DriverID(rdma.RDMA_DRIVER_OCRDMA),
	DriverID(rdma.RDMA_DRIVER_VMW_PVRDMA), DriverID(rdma.RDMA_DRIVER_QEDR), DriverID(rdma.RDMA_DRIVER_HNS),
	DriverID(rdma.RDMA_DRIVER_USNIC), DriverID(rdma.RDMA_DRIVER_HFI1), DriverID(rdma.RDMA_DRIVER_QIB),
}

// errNoIoctl reports that the file has no uverbs ioctl at all (old kernel),
// so the driver id does not matter.
var errNoIoctl = errors.New("no uverbs ioctl")

// probeDriverID finds the device's driver id by asking the kernel, for
// when neither netlink nor the names in sysfs tell: an INVOKE_WRITE of
// QUERY_DEVICE without its request and response buffers passes the
// header check only with the right id, and then fails with ENOSPC (the
// buffers are too small); any other id fails the header check with
// EINVAL. It returns errNoIoctl on kernels without the uverbs ioctl.
func probeDriverID(f verbsFile) (DriverID, error) {
	for _, id := range probeCandidates {
		r := request{obj: uint16(rdma.UVERBS_OBJECT_DEVICE), method: uint16(rdma.UVERBS_METHOD_INVOKE_WRITE)}
		r.inline(uint16(rdma.UVERBS_ATTR_WRITE_CMD), 8, uint64(rdma.IB_USER_VERBS_CMD_QUERY_DEVICE))
		var err error
		for {
			r.encode(uint32(id)) // afresh: an interrupted call may have changed it
			err = f.ioctl(r.buf)
			if err != unix.EINTR {
				break
			}
		}
		switch err {
		case unix.ENOSPC:
			return id, nil
		case unix.EINVAL:
			continue
		case unix.ENOTTY, unix.EPROTONOSUPPORT:
			return DriverUnknown, errNoIoctl
		case nil:
			// No kernel answers this without buffers; do not trust it.
			continue
		}
		return DriverUnknown, &Error{Op: opProbeDriverID, Errno: errnoOf(err)}
	}
	// No id passed the header check: the device's driver is one this
	// package does not know.
	return DriverUnknown, &Error{Op: opProbeDriverID, Errno: unix.EINVAL, firstCall: true}
}

// errnoOf returns err's errno, or EIO for anything else.
func errnoOf(err error) unix.Errno {
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	return unix.EIO
}
