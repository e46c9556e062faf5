package rdma

// The protocol on a connection's RC queue pair. Data goes as RDMA WRITEs;
// everything else consumes one of the receives each side keeps posted
// (ctlSlots of them, each with ctlSize bytes):
//
//   - receiver to sender, before each transfer: a SEND of the transfer's
//     Descriptor (DescriptorSize bytes, inline), unless the receiver
//     committed to its ring (finRing below): then the sender writes into
//     the ring it learnt at connect at once, and the receiver checks the
//     length from the chunks;
//   - sender to a pipelined receiver: each chunk as an RDMA WRITE WITH
//     IMMEDIATE into ring slot seq mod Slots, immediate kindData|seq,
//     and on the last chunk also lastBit and the sender's path in bits
//     27-24: the sender's done rides on it;
//   - pipelined receiver to sender: a zero-length SEND WITH IMMEDIATE
//     kindCredit|1 once a slot's chunk is in device memory, but for the
//     last chunk's, which rides on the fin;
//   - sender to a zero-copy receiver (or for an empty range), right
//     behind its last chunk: a zero-length SEND WITH IMMEDIATE
//     kindDone|path (RC delivers it after every WRITE before it);
//   - receiver to sender, once done came and every chunk is in device
//     memory: a zero-length SEND WITH IMMEDIATE kindFin|credits, behind
//     every credit, with the last one (or none), and finRing when every
//     later transfer to this receiver takes its ring (its Options force
//     the pipeline, or its NIC cannot register dma-bufs at all: both for
//     the Conn's life), so needs no descriptor. It ends the transfer on
//     both sides: the sender returns when it arrives (a message the
//     sender's NIC delivered, where an acknowledgement of the sender's
//     own messages can be lost to a peer that closes at once), the
//     receiver once its NIC acknowledged it (or failed to: the bytes are
//     in place either way);
//   - either way, when a side gives up: kindAbort|role|code;
//   - either way, while a transfer is in progress, every
//     Options.KeepAlive: a zero-length SEND WITH IMMEDIATE kindProbe,
//     which the peer takes and drops; what matters is the NIC's
//     acknowledgement (without one, the completion's error shuts the
//     connection). At most one is outstanding.
//
// The immediate: kind in bits 31-29, for an abort the sender's role in
// bit 28, for a chunk lastBit and the path, the value in bits 23-0.
//
// A pipelined transfer of one chunk thus takes two messages (the chunk's
// WRITE and the fin) once the receiver committed to its ring, three
// before (the descriptor too), each a few milliseconds of rxe under TCG,
// where a descriptor, a separate done and a last credit made five.
const (
	kindData   = 0
	kindCredit = 1
	kindDone   = 2
	kindAbort  = 3
	kindProbe  = 4
	kindFin    = 5

	kindShift = 29
	roleBit   = 1 << 28
	lastBit   = 1 << 28
	pathShift = 24
	pathMask  = 0xf
	valueMask = 1<<24 - 1

	// maxChunks is how many chunks one transfer may have (its sequence
	// numbers fit the immediate's value).
	maxChunks = valueMask + 1
)

// finRing is the fin's flag for a receiver committed to its ring; the
// bits below it count the credits the fin returns.
const finRing = 1 << 23

// Abort codes.
const (
	abortCancelled = 1 // the side's context ended, or it failed on its own
	abortAborted   = 2 // its device aborted a DMA (reset)
	abortLength    = 3 // the two sides' lengths differ
	abortProtocol  = 4 // the peer broke the protocol
)

func imm(kind, value uint32) uint32 { return kind<<kindShift | value&valueMask }

func immKind(v uint32) uint32  { return v >> kindShift }
func immValue(v uint32) uint32 { return v & valueMask }

// Work request IDs: the kind in the top byte.
const (
	wrData  = 1 << 56 // a data WRITE (seq in the low bits)
	wrCtl   = 2 << 56 // a control SEND
	wrRecv  = 3 << 56 // a receive (its control slot)
	wrKind  = 0xff << 56
	wrValue = 1<<56 - 1
)

// The values of control SENDs' work request IDs (with wrCtl, and roleBit
// on the sending side's).
const (
	ctlDesc   = 1
	ctlCredit = 2
	ctlDone   = 3
	ctlAbort  = 4
	ctlProbe  = 5
	ctlFin    = 6
)

// ctlSize is the size of one control receive buffer, ctlExtra how many
// receives beyond the ring's slots each side keeps posted (descriptor,
// done, fin, abort, probe and slack).
const (
	ctlSize  = 64
	ctlExtra = 8
)
