package ib

// The provider seam: what differs from one driver's user-space data path
// to another's. The kernel objects (CQ, QP, their states) are the same
// uverbs commands for every driver; the queues are not. rxe (Soft-RoCE)
// shares kernel-allocated rings that user space maps from the uverbs file
// and kicks with a POST_SEND write; mlx5 has user-allocated buffers that
// the kernel only pins, doorbell records and a UAR page for MMIO. The
// package doc says what an mlx5 provider needs.

// provider makes the rings of one driver.
type provider interface {
	// cqUdata returns the driver's private input to CREATE_CQ and the
	// size of its private output.
	cqUdata(entries uint32) (in []byte, outLen int)
	// newCQRing maps or adopts the CQ's ring from CREATE_CQ's private
	// output.
	newCQRing(f verbsFile, out []byte) (cqRing, error)
	// qpUdata returns the driver's private input to CREATE_QP and the size
	// of its private output.
	qpUdata(caps QPCaps) (in []byte, outLen int)
	// newQPRings maps the QP's send and receive queues from CREATE_QP's
	// private output; handle is the QP's, for the doorbell.
	newQPRings(f verbsFile, out []byte, handle uint32, caps QPCaps) (sendRing, recvRing, error)
}

// cqRing is a completion queue's ring. Calls are serialised by the CQ.
type cqRing interface {
	// poll moves up to len(wcs) completions into wcs and returns how many.
	poll(wcs []WC) int
	// unmap releases the ring once the kernel's CQ is gone.
	unmap() error
}

// sendRing is a send queue. Calls are serialised by the QP.
type sendRing interface {
	// post writes one work request into the next free slot and publishes
	// it; the request is refused with a *wrError when it does not fit.
	post(wr *SendWR) error
	// doorbell tells the NIC that requests were posted.
	doorbell() error
	unmap() error
}

// recvRing is a receive queue. Calls are serialised by the QP.
type recvRing interface {
	post(wr *RecvWR) error
	unmap() error
}

// providerFor returns the data path of a driver, or nil when the package
// has none for it.
func providerFor(id DriverID) provider {
	if id == DriverRXE {
		return rxeProvider{}
	}
	return nil
}
