package stream

import (
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// SOB is where a signal landed: the sync object's address as the driver
// reports it (Gaudi: its offset in the configuration space; Gaudi2: 0,
// which the driver answers for every SOB) and the value the signal brings
// it to (the driver's sob_count_before_submission, which it computes as
// the stream's next value minus one after counting this signal).
type SOB struct {
	Addr  uint32
	Value uint16
}

// Signal submits a signal CS on queue: when the queue reaches it (after
// everything submitted to the queue before), the driver's job adds one to
// the queue's sync stream SOB. It returns the CS's sequence number, which
// WaitForSignal takes, and the SOB. Gaudi signals on its external queues,
// Gaudi2 on every queue but the NIC queues.
//
// It replaces hlthunk_signal_submission and
// hlthunk_signal_submission_timeout (WithTimeout).
func (s *Streams) Signal(queue uint32, opts ...Option) (uint64, SOB, error) {
	chunks := make([]hl.CSChunk, 1)
	chunks[0].QueueIndex = queue
	a := &hl.CSChunksArgs{ChunksExecute: hl.SlicePointer(chunks), NumChunksExecute: 1, CSFlags: hl.HL_CS_FLAGS_SIGNAL}
	applyOptions(&a.CSFlags, &a.Timeout, opts)
	out, err := issueCS(s, "signal", a)
	if err != nil {
		return 0, SOB{}, err
	}
	return out.Seq(), SOB{Addr: out.SOBBaseAddrOffset, Value: out.SOBCountBeforeSubmission}, nil
}

// WaitForSignal submits a wait CS on queue: the queue stops until the
// signal CS signalSeq (of this device file) has run. It returns the wait
// CS's sequence number, or NoSeq when the signal had already completed and
// nothing was submitted.
//
// It replaces hlthunk_wait_for_signal and hlthunk_wait_for_signal_timeout.
func (s *Streams) WaitForSignal(queue uint32, signalSeq uint64, opts ...Option) (uint64, error) {
	return s.waitCS("wait for signal", hl.HL_CS_FLAGS_WAIT, queue, signalSeq, 0, 0, false, opts)
}

// CollectiveWait submits a collective wait CS (Gaudi): queue must be a
// collective master (an external queue), and engineID names the
// collective engine (GAUDI_ENGINE_ID_DMA_5 or GAUDI_ENGINE_ID_TPC_7). The
// driver refuses it (EINVAL) on Gaudi2 and on a Gaudi without NIC ports.
//
// It replaces hlthunk_wait_for_collective_signal and
// hlthunk_wait_for_collective_signal_timeout.
func (s *Streams) CollectiveWait(queue uint32, signalSeq uint64, engineID uint32, opts ...Option) (uint64, error) {
	return s.waitCS("collective wait", hl.HL_CS_FLAGS_COLLECTIVE_WAIT, queue, signalSeq, engineID, 0, false, opts)
}

// WaitForReserved submits a wait CS on queue for encapsulated signals: the
// staged submission stagedSeq that claimed a reservation (SubmitStaged
// with Encaps), up to its offset-th signal (1 is the first reserved
// signal; 0 waits for the signal after the reservation). It returns NoSeq
// when nothing had to be submitted.
//
// It replaces hlthunk_wait_for_reserved_encaps_signals.
func (s *Streams) WaitForReserved(queue uint32, stagedSeq uint64, offset uint32, opts ...Option) (uint64, error) {
	return s.waitCS("wait for reserved signals", hl.HL_CS_FLAGS_WAIT, queue, stagedSeq, 0, offset, true, opts)
}

// CollectiveWaitForReserved is the collective wait (Gaudi) for
// encapsulated signals.
//
// It replaces hlthunk_wait_for_reserved_encaps_collective_signals.
func (s *Streams) CollectiveWaitForReserved(queue uint32, stagedSeq uint64, offset, engineID uint32, opts ...Option) (uint64, error) {
	return s.waitCS("collective wait for reserved signals", hl.HL_CS_FLAGS_COLLECTIVE_WAIT, queue, stagedSeq, engineID, offset, true, opts)
}

// waitCS submits a WAIT or COLLECTIVE_WAIT CS.
func (s *Streams) waitCS(op string, flag, queue uint32, seq uint64, engine, offset uint32, encaps bool, opts []Option) (uint64, error) {
	a := &hl.CSChunksArgs{NumChunksExecute: 1, CSFlags: flag}
	if encaps {
		// The chunk names the signals by the staged sequence number and an
		// offset: integers, no user address.
		chunks := make([]hl.CSChunk, 1)
		c := &chunks[0]
		c.QueueIndex = queue
		c.CollectiveEngineID = engine
		c.SetEncapsSignalSeq(seq)
		c.SetEncapsSignalOffset(offset)
		a.ChunksExecute = hl.SlicePointer(chunks)
		a.CSFlags |= hl.HL_CS_FLAGS_ENCAP_SIGNALS
	} else {
		seqs := []uint64{seq}
		chunks := []hl.CSSignalChunk{{
			SignalSeqArr:       hl.SlicePointer(seqs),
			QueueIndex:         queue,
			NumSignalSeqArr:    1,
			CollectiveEngineID: engine,
		}}
		a.ChunksExecute = hl.SlicePointer(chunks)
	}
	applyOptions(&a.CSFlags, &a.Timeout, opts)
	out, err := issueCS(s, op, a)
	if err != nil {
		return 0, err
	}
	return out.Seq(), nil
}

// Reservation is a range of encapsulated signals of one queue's sync
// stream: the handle ID that Unreserve and a staged submission take, the
// SOB's address (as for SOB.Addr) and the stream's next signal value after
// the reserved ones (the driver's count), so the reserved signals bring
// the SOB from Next-Count... to Next-1.
type Reservation struct {
	ID      uint32
	SOBAddr uint32
	Next    uint32
}

// Reserve reserves count signals of queue's sync stream for the caller's
// own command buffers to signal.
//
// It replaces hlthunk_reserve_encaps_signals.
func (s *Streams) Reserve(queue, count uint32) (Reservation, error) {
	a := new(hl.CSArgs)
	in := a.In()
	in.CSFlags = hl.HL_CS_FLAGS_RESERVE_SIGNALS_ONLY
	in.SetEncapsSignalsQIdx(queue)
	in.SetEncapsSignalsCount(count)
	out, err := issueCS(s, "reserve signals", a)
	if err != nil {
		return Reservation{}, err
	}
	return Reservation{ID: out.HandleID(), SOBAddr: out.SOBBaseAddrOffset, Next: out.Count()}, nil
}

// Unreserve gives back a reservation that no submission claimed. The
// driver refuses it (EINVAL) when other signals of the stream were issued
// since the reservation.
//
// It replaces hlthunk_unreserve_encaps_signals.
func (s *Streams) Unreserve(id uint32) error {
	a := new(hl.CSArgs)
	in := a.In()
	in.CSFlags = hl.HL_CS_FLAGS_UNRESERVE_SIGNALS_ONLY
	in.SetEncapsSigHandleID(id)
	_, err := issueCS(s, "unreserve signals", a)
	return err
}

// Chunk is one command buffer of a submission: on Queue, CB is a kernel
// CB handle (Gaudi's external queues) or, with UserCB, the device address
// of the command buffer (internal queues, Gaudi2), of Size bytes.
type Chunk struct {
	Queue  uint32
	CB     uint64
	Size   uint32
	UserCB bool
}

// Part says which part of a staged submission a CS is: StagedFirst,
// StagedLast, both, or neither (a middle part).
type Part uint8

const (
	// StagedFirst marks the first part (HL_CS_FLAGS_STAGED_SUBMISSION_FIRST).
	StagedFirst Part = 1 << iota
	// StagedLast marks the last part (HL_CS_FLAGS_STAGED_SUBMISSION_LAST).
	StagedLast
)

// Submit submits a command submission of execute chunks and returns its
// sequence number.
//
// It replaces hlthunk_command_submission and
// hlthunk_command_submission_timeout (WithTimeout).
func (s *Streams) Submit(chunks []Chunk, opts ...Option) (uint64, error) {
	return s.submit("submit", chunks, 0, 0, opts)
}

// SubmitStaged submits one part of a staged submission (Gaudi; Gaudi2
// answers EPERM): the first part starts it and its sequence number is the
// staged submission's, which every later part gives as stagedSeq and which
// SubmitStaged returns for every part. Only the last part completes
// through its jobs; waiting for the staged sequence waits for all parts.
//
// It replaces hlthunk_staged_command_submission and
// hlthunk_staged_command_submission_timeout.
func (s *Streams) SubmitStaged(chunks []Chunk, part Part, stagedSeq uint64, opts ...Option) (uint64, error) {
	flags := uint32(hl.HL_CS_FLAGS_STAGED_SUBMISSION)
	return s.submit("staged submit", chunks, flags|partFlags(part), stagedSeq, opts)
}

// SubmitStagedEncaps submits the first part of a staged submission that
// signals the reservation id itself (HL_CS_FLAGS_ENCAP_SIGNALS): waits on
// the reservation then name the returned staged sequence number. part must
// include StagedFirst.
//
// It replaces hlthunk_staged_command_submission_encaps_signals.
func (s *Streams) SubmitStagedEncaps(chunks []Chunk, part Part, id uint32, opts ...Option) (uint64, error) {
	flags := uint32(hl.HL_CS_FLAGS_STAGED_SUBMISSION | hl.HL_CS_FLAGS_ENCAP_SIGNALS)
	return s.submit("staged submit with encapsulated signals", chunks, flags|partFlags(part), uint64(id), opts)
}

func partFlags(p Part) uint32 {
	var f uint32
	if p&StagedFirst != 0 {
		f |= hl.HL_CS_FLAGS_STAGED_SUBMISSION_FIRST
	}
	if p&StagedLast != 0 {
		f |= hl.HL_CS_FLAGS_STAGED_SUBMISSION_LAST
	}
	return f
}

// submit issues a default CS; seq is the staged sequence number (or the
// encapsulated signals handle id, which shares its place).
func (s *Streams) submit(op string, chunks []Chunk, flags uint32, seq uint64, opts []Option) (uint64, error) {
	arr := csChunks(chunks)
	a := &hl.CSChunksArgs{ChunksExecute: hl.SlicePointer(arr), NumChunksExecute: uint32(len(arr)), Seq: seq, CSFlags: flags}
	o := applyOptions(&a.CSFlags, &a.Timeout, opts)
	if restore := csChunks(o.restore); len(restore) > 0 {
		a.ChunksRestore, a.NumChunksRestore = hl.SlicePointer(restore), uint32(len(restore))
		a.CSFlags |= hl.HL_CS_FLAGS_FORCE_RESTORE
	}
	out, err := issueCS(s, op, a)
	if err != nil {
		return 0, err
	}
	return out.Seq(), nil
}

// csChunks converts chunks to the driver's layout, on the heap.
func csChunks(chunks []Chunk) []hl.CSChunk {
	arr := make([]hl.CSChunk, len(chunks))
	for i, c := range chunks {
		arr[i].QueueIndex = c.Queue
		arr[i].SetCBHandle(c.CB)
		arr[i].SetCBSize(c.Size)
		if c.UserCB {
			arr[i].CSChunkFlags = hl.HL_CS_CHUNK_FLAGS_USER_ALLOC_CB
		}
	}
	return arr
}
