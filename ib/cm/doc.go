// Package cm connects RDMA queue pairs through the kernel's RDMA
// connection manager, the /dev/infiniband/rdma_cm device and its write
// ABI (include/uapi/rdma/rdma_user_cm.h, drivers/infiniband/core/ucma.c),
// without librdmacm or cgo. It is how rping, perftest's -R mode and UCX's
// rdmacm wireup find each other: IP addresses and ports, resolved to an
// RDMA device, a GID and a path, and an RC connection handshake.
//
// It is its own package because it is its own device and ABI: it needs
// package ib for the queue pairs it connects (ib.QP, ib.QPAttr) and ib
// does not need it.
//
// # Use
//
// Open opens the CM device; a Channel delivers the events of every ID
// created on it, read by one goroutine that waits in the Go runtime's
// poller. Active side:
//
//	id, _ := ch.CreateID()
//	id.ResolveAddr(ctx, netip.AddrPort{}, dst)   // ADDR_RESOLVED
//	id.ResolveRoute(ctx)                          // ROUTE_RESOLVED
//	dev, _ := id.Device()                         // open it with ib.Open; make PD, CQ, QP
//	id.ModifyQP(qp, ib.QPSInit)                   // then post receives
//	resp, _ := id.Connect(ctx, qp, ConnParam{})   // RTR, RTS, RTU
//
// Passive side: CreateID, Bind, Listen, GetRequest (a new ID with the
// peer's parameters), ModifyQP(qp, ib.QPSInit), post receives, Accept.
// Disconnect moves the QP to the error state and tells the peer; Close
// destroys an ID.
//
// # Errors
//
// Refused commands return an *Error with the errno (errors.Is works with
// unix.Errno values and with ErrClosed). Events that end a step in
// failure return an *EventError that matches ErrAddrResolution,
// ErrRouteResolution, ErrRejected (with the IB CM reason: 8 is "no
// listener"), ErrUnreachable, ErrConnect or ErrDisconnected.
//
// Channel and ID are safe for concurrent use; each ID's steps are
// meant to be taken by one goroutine at a time, as its events form one
// sequence.
//
// # Testing
//
// Tests named TestKernel* run against the kernel's RDMA CM and Soft-RoCE
// (rxe) where /dev/infiniband/rdma_cm and an rxe device exist, and skip
// otherwise; with GAUDI_VMTEST=1, as in the VM harness (scripts/vmtest),
// they fail instead. They connect our own ends over rxe loopback (to the
// device's own address) and move verified bytes, and they talk to real
// peers from Debian's packages: rping both ways, and perftest's
// ib_write_bw, ib_read_bw and ib_send_bw in -R mode both ways, whose
// control protocol the tests speak. Unit tests prove the commands and
// events against gcc and the kernel headers.
package cm
