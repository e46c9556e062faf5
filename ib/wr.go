package ib

import (
	"fmt"

	"github.com/gaudi-go/gaudi/uapi/rdma"
)

// SGE is one scatter/gather element of a work request: Length bytes at
// Addr (in the NIC's view of a memory region, its IOVA) of the region
// whose local key is LKey.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// SendOp is the operation of a send work request (enum ib_uverbs_wr_opcode
// in include/uapi/rdma/ib_user_verbs.h, the values rxe's send WQE carries).
type SendOp uint32

// Send operations.
const (
	// OpRDMAWrite writes the local data into the peer's memory at
	// RemoteAddr/RKey; the peer's CPU is not told.
	OpRDMAWrite SendOp = SendOp(rdma.IB_UVERBS_WR_RDMA_WRITE)
	// OpRDMAWriteImm writes like OpRDMAWrite and consumes a receive on the
	// peer, whose completion carries Imm.
	OpRDMAWriteImm SendOp = SendOp(rdma.IB_UVERBS_WR_RDMA_WRITE_WITH_IMM)
	// OpSend sends the data into the peer's next posted receive.
	OpSend SendOp = SendOp(rdma.IB_UVERBS_WR_SEND)
	// OpSendImm sends like OpSend with Imm in the peer's completion.
	OpSendImm SendOp = SendOp(rdma.IB_UVERBS_WR_SEND_WITH_IMM)
	// OpRDMARead reads the peer's memory at RemoteAddr/RKey into the local
	// SGEs (which need AccessLocalWrite).
	OpRDMARead SendOp = SendOp(rdma.IB_UVERBS_WR_RDMA_READ)
)

// String returns the operation's name, such as "RDMA_WRITE".
func (o SendOp) String() string {
	switch o {
	case OpRDMAWrite:
		return "RDMA_WRITE"
	case OpRDMAWriteImm:
		return "RDMA_WRITE_WITH_IMM"
	case OpSend:
		return "SEND"
	case OpSendImm:
		return "SEND_WITH_IMM"
	case OpRDMARead:
		return "RDMA_READ"
	}
	return fmt.Sprintf("SendOp(%d)", uint32(o))
}

// remote reports whether the operation addresses the peer's memory.
func (o SendOp) remote() bool {
	return o == OpRDMAWrite || o == OpRDMAWriteImm || o == OpRDMARead
}

// SendFlags modify a send work request (enum ib_send_flags of the
// kernel's include/rdma/ib_verbs.h, which rxe reads from the WQE).
type SendFlags uint32

// Send flags.
const (
	// SendFence waits for earlier RDMA READs to complete first.
	SendFence SendFlags = 1 << 0
	// SendSignaled asks for a completion (always given on error, and for
	// every request of a QP created with SignalAll).
	SendSignaled SendFlags = 1 << 1
	// SendSolicited raises a solicited event at the peer.
	SendSolicited SendFlags = 1 << 2
	// SendInline sends the bytes of SendWR.Inline, copied into the work
	// request while posting, instead of SG: no memory region is needed and
	// the buffer may be reused as soon as PostSend returns. Only SEND and
	// RDMA WRITE (with or without immediate) take it, up to
	// QP.Caps().MaxInline bytes.
	SendInline SendFlags = 1 << 3
)

// SendWR is a send work request. SG may be empty (a zero-length SEND or
// WRITE). It is plain data; PostSend copies it into the send queue and
// keeps nothing of it.
type SendWR struct {
	// ID comes back in the completion.
	ID    uint64
	Op    SendOp
	Flags SendFlags
	// Imm is the immediate data of OpSendImm and OpRDMAWriteImm, in host
	// order (it travels big-endian and comes back in host order).
	Imm uint32
	// RemoteAddr and RKey name the peer's memory for RDMA operations.
	RemoteAddr uint64
	RKey       uint32
	SG         []SGE
	// Inline is the data of a request with SendInline (SG must then be
	// empty); it is ignored without the flag.
	Inline []byte
}

// RecvWR is a receive work request: where an incoming SEND (or the
// immediate of a WRITE_WITH_IMM) lands.
type RecvWR struct {
	ID uint64
	SG []SGE
}

// WCStatus is a work completion's status (enum ib_wc_status of the
// kernel's include/rdma/ib_verbs.h, the values libibverbs shares).
type WCStatus uint32

// Work completion statuses.
const (
	WCSuccess        WCStatus = 0
	WCLocLenErr      WCStatus = 1
	WCLocQPOpErr     WCStatus = 2
	WCLocEECOpErr    WCStatus = 3
	WCLocProtErr     WCStatus = 4
	WCFlushErr       WCStatus = 5
	WCMWBindErr      WCStatus = 6
	WCBadRespErr     WCStatus = 7
	WCLocAccessErr   WCStatus = 8
	WCRemInvReqErr   WCStatus = 9
	WCRemAccessErr   WCStatus = 10
	WCRemOpErr       WCStatus = 11
	WCRetryExcErr    WCStatus = 12
	WCRNRRetryExcErr WCStatus = 13
	WCLocRDDViolErr  WCStatus = 14
	WCRemInvRDReqErr WCStatus = 15
	WCRemAbortErr    WCStatus = 16
	WCInvEECNErr     WCStatus = 17
	WCInvEECStateErr WCStatus = 18
	WCFatalErr       WCStatus = 19
	WCRespTimeoutErr WCStatus = 20
	WCGeneralErr     WCStatus = 21
)

var wcStatusNames = [...]string{
	"success", "local length error", "local QP operation error", "local EE context operation error",
	"local protection error", "work request flushed", "memory window bind error", "bad response",
	"local access error", "remote invalid request", "remote access error", "remote operation error",
	"transport retry counter exceeded", "RNR retry counter exceeded", "local RDD violation",
	"remote invalid RD request", "remote aborted", "invalid EE context number", "invalid EE context state",
	"fatal error", "response timeout", "general error",
}

// String returns the status as libibverbs' ibv_wc_status_str words it.
func (s WCStatus) String() string {
	if int(s) < len(wcStatusNames) {
		return wcStatusNames[s]
	}
	return fmt.Sprintf("WCStatus(%d)", uint32(s))
}

// WCOpcode says what completed (enum ib_uverbs_wc_opcode; receives are
// 128 and up, as the kernel's enum ib_wc_opcode has them).
type WCOpcode uint32

// Work completion opcodes.
const (
	WCSend        WCOpcode = WCOpcode(rdma.IB_UVERBS_WC_SEND)
	WCRDMAWrite   WCOpcode = WCOpcode(rdma.IB_UVERBS_WC_RDMA_WRITE)
	WCRDMARead    WCOpcode = WCOpcode(rdma.IB_UVERBS_WC_RDMA_READ)
	WCRecv        WCOpcode = 128 // IB_WC_RECV
	WCRecvRDMAImm WCOpcode = 129 // IB_WC_RECV_RDMA_WITH_IMM
)

// WCFlags describe a completion. Only the two bits the kernel and
// libibverbs agree on are named (rxe writes the kernel's enum ib_wc_flags
// raw: include/rdma/ib_verbs.h).
type WCFlags uint32

// Work completion flags.
const (
	WCGRH     WCFlags = 1 << 0 // a GRH preceded the data (always on RoCE)
	WCWithImm WCFlags = 1 << 1 // Imm is valid
)

// WC is a work completion (struct ib_uverbs_wc). It is plain data.
type WC struct {
	ID        uint64
	Status    WCStatus
	Opcode    WCOpcode
	VendorErr uint32
	ByteLen   uint32
	// Imm is the immediate data in host order, valid with WCWithImm.
	Imm   uint32
	QPNum uint32
	SrcQP uint32
	Flags WCFlags
}

// Err returns nil for a successful completion, else a *WCError that
// matches ErrFlushed (the QP went to the error state before the request
// ran), ErrRemoteAccess (the peer refused the remote key or range),
// ErrRemoteOperation (the peer could not take a SEND) and the other
// sentinels of WCError.
func (wc *WC) Err() error {
	if wc.Status == WCSuccess {
		return nil
	}
	return &WCError{ID: wc.ID, Status: wc.Status, QPNum: wc.QPNum, VendorErr: wc.VendorErr}
}
