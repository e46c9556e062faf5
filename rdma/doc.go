// Package rdma moves Gaudi device memory to and from remote peers over
// RDMA: Conn.Send sends a device range to a peer, Conn.Recv receives one
// into a device range, and each chooses how.
//
//	l, _ := rdma.Listen(addr, m, e, rdma.Options{})  // receiving node
//	c, _ := l.Accept(ctx)
//	res, err := c.Recv(ctx, dst.All())               // res.Path: which path ran
//
//	c, _ := rdma.Dial(ctx, addr, m, e, rdma.Options{}) // sending node
//	res, err := c.Send(ctx, src.All())
//
// # Paths
//
// Zero copy: the device range's dma-buf is registered with the NIC
// (ib.RegisterBuffer) and the NIC reads or writes device memory itself.
// Pipelined, when the NIC refuses dma-buf registrations (rxe does, and so
// would any NIC without peer-to-peer DMA): the Gaudi's DMA engines copy
// chunks of the range into registered pinned host buffers while earlier
// chunks are on the wire, Options.Depth buffers deep (triple-buffered by
// default), and the receiving side mirrors it: chunks land in its ring of
// registered host buffers, its DMA engines copy them into device memory,
// and each slot goes back to the sender with a credit once its copy is
// done. This is what UCX does where GPUDirect RDMA is not available. Each
// side chooses for itself, so the four combinations occur; Result.Path
// and Result.PeerPath say which ran, and Options.Path forces one.
//
// The receiver describes where the sender writes with a Descriptor:
// small, versioned and binary, which users may exchange however they
// like. A Conn exchanges them itself: the connection's receive rings in
// the RDMA CM private data of its connect and accept messages, each
// transfer's descriptor in a message that opens it.
//
// # Why a package of its own
//
// Package ib is the NIC (verbs), ib/cm the connection manager, dma the
// Gaudi's engines and memory its allocations; none of them needs the
// others beyond ib's registration of a memory.Buffer's dma-buf. Moving
// device memory across machines needs all four, so it lives above them,
// with the protocol (descriptors, chunks, credits) that only it speaks;
// its name is what it does, as UCX's and NCCL's transports are named.
//
// # Lifetimes
//
// A transfer holds its device range's buffer (a Close of the buffer is
// deferred) until the NIC's completions and the DMA engines' are all in.
// A call whose context ends returns the context's error at once; the
// transfer then stops in the background: it tells the peer, shuts the
// connection (the queue pair goes to the error state, so whatever it
// posted completes, flushed if it had not run), waits for the DMA
// engines (bounded by the dma.Engine's timeout) and the NIC, and only
// then releases the range. The staging rings belong to the Conn, and
// Close frees them after the queue pair is destroyed. A device reset
// mid-transfer fails it with ErrAborted on both sides; a peer that
// disconnects or stops answering fails it with ErrPeerGone; a peer that
// gives up, with a *PeerError that matches ErrPeerCancelled and the
// peer's reason. Any failed transfer shuts the connection: later calls
// return ErrBroken.
//
// Conn and Listener are safe for concurrent use; one Send and one Recv
// may run at a time on a Conn (another answers ErrBusy).
package rdma
