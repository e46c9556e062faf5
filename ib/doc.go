// Package ib registers host memory and Gaudi device memory with RDMA NICs
// through the kernel's uverbs interface directly: no libibverbs, no cgo.
//
// # Discovery
//
// Devices lists the RDMA devices from sysfs (/sys/class/infiniband and
// /sys/class/infiniband_verbs) and asks RDMA netlink for the driver id
// every uverbs request must carry; SysFS reads a tree under another root
// (fixtures). SysFS.Distance and NICsFor classify the PCIe path from a NIC
// to a Gaudi (same switch, same root port, same NUMA node, other), so a
// program can pick the closest NIC.
//
// # Verbs
//
// Open opens /dev/infiniband/uverbsN and creates a user context
// (GET_CONTEXT); Context.QueryDevice, QueryPort and GIDTable query it;
// Context.AllocPD allocates a protection domain; PD.RegMR registers host
// memory and PD.RegDMABufMR a range of a dma-buf, such as the one
// memory.Buffer.Export makes of device memory (RegisterBuffer does both);
// Context.ProbeDMABuf finds out whether the NIC can register dma-bufs at
// all, the way UCX and NCCL do.
//
// Requests are uverbs ioctls (RDMA_VERBS_IOCTL with a header and an
// attribute array, the layout of include/uapi/rdma/rdma_user_ioctl_cmds.h);
// commands that only exist in the older write() form (ALLOC_PD, REG_MR,
// QUERY_DEVICE) go through the INVOKE_WRITE method. On kernels without
// the ioctl interface a Context uses write(2) throughout. DecodeIoctl
// decodes a request for tracers and tests.
//
// # Data path
//
// Context.CreateCompChannel, Context.CreateCQ and PD.CreateQP make the
// objects of a reliable-connected (RC) connection through the uverbs write
// commands; QP.Modify moves a QP through INIT, RTR and RTS with the
// attributes that package ib/cm (the kernel's RDMA CM) answers, or that
// the caller sets (DecodeQPAttr reads the CM's form). QP.PostSend (SEND,
// SEND_WITH_IMM, RDMA WRITE, WRITE_WITH_IMM, RDMA READ) and QP.PostRecv
// write work requests straight into the queues the driver shares with
// user space; CQ.Poll reads completions from there; CQ.Arm and CQ.Wait
// sleep on the completion channel, in the Go runtime's poller, until a
// completion or the end of a ctx. Posting and polling allocate nothing,
// also for a request built where it is posted (PostSend stages it in the
// QP; BenchmarkPostSendRing), and small sends and writes can carry their
// bytes inline (SendInline, up to Caps().MaxInline); a failed completion's Err
// matches ErrFlushed, ErrRemoteAccess, ErrRetryExceeded or ErrLocalLength.
// The memory ordering between a work request and the index that publishes
// it is argued in rxe_unsafe.go.
//
// # Providers
//
// The queues are the driver's. The package has the Soft-RoCE (rxe) data
// path: kernel-allocated rings mapped from the uverbs file at the offsets
// of the create responses (include/uapi/rdma/rdma_user_rxe.h), and a
// POST_SEND write as the send doorbell. Other drivers get ErrNotSupported
// from CreateCQ and CreateQP. A provider (provider.go) supplies the
// driver's private create data, makes the rings from the create answers,
// and encodes work requests and completions. An mlx5 (ConnectX) provider
// needs, from include/uapi/rdma/mlx5-abi.h and the public WQE formats: a
// GET_CONTEXT with the mlx5 request (bfregs, lib_caps) and its answer
// (bf_reg_size, cqe_version...), which the driver table already sends; the
// UAR page mapped from the uverbs file (offset by command and index) for
// the BlueFlame or 64-bit doorbell stores; user-allocated, page-aligned
// CQ and QP buffers plus doorbell records whose addresses go in CREATE_CQ
// and CREATE_QP's private input (the kernel pins them), so they must be
// mmap'd memory that outlives the objects; the ctrl, remote-address and
// data WQE segments (64-byte basic blocks, big-endian) and the 64-byte
// CQE with its owner bit; and the doorbell sequence: WQE stores, a store
// barrier, the doorbell record, then the UAR write, which needs
// write-combining stores and an sfence, a few lines of assembly. No mlx5
// model exists in QEMU or the kernel, so its tests would be golden bytes
// only.
//
// # Lifetimes
//
// Every object has an owner and an idempotent Close: an MR and a QP
// belong to their PD, a PD, CQ and completion channel to their Context.
// QP.Close moves the QP to the error state first (outstanding work
// completes as flushed) and destroys it before its queues are unmapped;
// a CQ that QPs report to refuses Close with EBUSY. PD.Close deregisters the regions left in it;
// Context.Close releases everything still open on it and the file (the
// kernel destroys the objects of a uverbs file when it is closed). A
// RegisteredBuffer owns its MR and its dma-buf. Context, PD, MR and
// RegisteredBuffer, CompChannel, CQ and QP are safe for concurrent use.
//
// # Errors
//
// Failed requests return an *Error that keeps the errno, so
// errors.Is(err, unix.EINVAL) works, and matches the sentinels callers
// branch on: ErrDMABufNotSupported when a NIC refuses a dma-buf
// registration (EOPNOTSUPP), ErrBadDriverID when the first request on a
// file is refused with EINVAL (what a wrong driver id gets), ErrClosed,
// ErrNotSupported. Bad input yields errors, never panics.
//
// # Performance
//
// A registration costs what the kernel does (pinning and mapping the
// pages); the package adds one small request buffer per call (288 bytes,
// 4 allocations for REG_MR plus DEREG_MR). BenchmarkRegMR1MiB (REG_MR and
// DEREG_MR of 1 MiB on rxe) runs in the VM harness next to libibverbs'
// ibv_reg_mr/ibv_dereg_mr (scripts/vmtest/run.sh ./ib). Under QEMU TCG on
// a shared 2-vCPU host the figures vary two- to three-fold between boots:
// Go 0.31-0.89 ms, libibverbs 0.16-0.87 ms. Interleaved in one boot, Go
// took about 1.5-2x libibverbs' time; a large part of that is the Go runtime
// handing the processor off during the long system call (issuing the same
// ioctl with RawSyscall was 30% faster in the same boot), which the
// package accepts so that a long registration never blocks the
// scheduler or a GC stop-the-world.
//
// # Testing
//
// Tests named TestKernel* run against the kernel's real RDMA stack
// (Soft-RoCE, rdma_rxe, with udmabuf for real dma-bufs) when a uverbs
// device exists, and skip otherwise; with GAUDI_VMTEST=1, as in the VM
// harness (scripts/vmtest), they fail instead of skipping.
package ib
