package rdma

import (
	"context"

	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/ib/cm"
)

// nic is what a Conn's data path asks of the NIC and the connection: post
// work requests, wait for completions, move the queue pair to the error
// state, disconnect. ibNIC is the real one; tests drive the zero-copy
// path end to end on a fake NIC that accepts dma-buf registrations (no
// NIC here does: rxe refuses them).
type nic interface {
	postSend(wr ib.SendWR) error
	postRecv(wr ib.RecvWR) error
	// poll waits for completions, as ib.CQ.Wait.
	poll(ctx context.Context, wcs []ib.WC) (int, error)
	// fail moves the queue pair to the error state: what was posted
	// completes, flushed if it had not run.
	fail() error
	// disconnect tells the peer (the CM's DISCONNECT) and fails the
	// queue pair.
	disconnect() error
}

// ringKey names a staging ring to the NIC: its keys and address.
type ringKey struct {
	lkey, rkey uint32
	iova       uint64
}

// ibNIC is a Conn's queue pair, CQ and RDMA CM ID.
type ibNIC struct {
	qp *ib.QP
	cq *ib.CQ
	id *cm.ID
}

func (n ibNIC) postSend(wr ib.SendWR) error {
	_, err := n.qp.PostSend(wr)
	return err
}

func (n ibNIC) postRecv(wr ib.RecvWR) error {
	_, err := n.qp.PostRecv(wr)
	return err
}

func (n ibNIC) poll(ctx context.Context, wcs []ib.WC) (int, error) { return n.cq.Wait(ctx, wcs) }

func (n ibNIC) fail() error {
	return n.qp.Modify(&ib.QPAttr{Mask: ib.AttrState, State: ib.QPSErr})
}

func (n ibNIC) disconnect() error { return n.id.Disconnect(n.qp) }
