package stream

import (
	"context"
	"fmt"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
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
// hlthunk_signal_submission_timeout (SubmitOptions.Timeout).
func (s *Streams) Signal(ctx context.Context, queue device.Queue, opts SubmitOptions) (uint64, SOB, error) {
	const op = "signal"
	q, err := s.queueID(op, queue)
	if err == nil {
		err = noRestore(op, opts)
	}
	if err != nil {
		return 0, SOB{}, err
	}
	chunks := make([]hl.CSChunk, 1)
	chunks[0].QueueIndex = q
	a := &hl.CSChunksArgs{ChunksExecute: hl.SlicePointer(chunks), NumChunksExecute: 1, CSFlags: hl.HL_CS_FLAGS_SIGNAL}
	opts.apply(&a.CSFlags, &a.Timeout)
	out, err := issueCS(ctx, s, op, a)
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
func (s *Streams) WaitForSignal(ctx context.Context, queue device.Queue, signalSeq uint64, opts SubmitOptions) (uint64, error) {
	return s.waitCS(ctx, "wait for signal", hl.HL_CS_FLAGS_WAIT, queue, signalSeq, nil, 0, false, opts)
}

// CollectiveWait submits a collective wait CS (Gaudi): queue must be a
// collective master (an external queue), and engine names the collective
// engine (DMA_5 or TPC_7: device.GaudiEngine(hl.GAUDI_ENGINE_ID_DMA_5)).
// The driver refuses it (EINVAL) on Gaudi2 and on a Gaudi without NIC
// ports.
//
// It replaces hlthunk_wait_for_collective_signal and
// hlthunk_wait_for_collective_signal_timeout.
func (s *Streams) CollectiveWait(ctx context.Context, queue device.Queue, signalSeq uint64, engine device.Engine, opts SubmitOptions) (uint64, error) {
	return s.waitCS(ctx, "collective wait", hl.HL_CS_FLAGS_COLLECTIVE_WAIT, queue, signalSeq, &engine, 0, false, opts)
}

// WaitForReserved submits a wait CS on queue for encapsulated signals: the
// staged submission stagedSeq that claimed a reservation
// (SubmitStagedEncaps), up to its offset-th signal (1 is the first
// reserved signal; 0 waits for the signal after the reservation). It
// returns NoSeq when nothing had to be submitted.
//
// It replaces hlthunk_wait_for_reserved_encaps_signals.
func (s *Streams) WaitForReserved(ctx context.Context, queue device.Queue, stagedSeq uint64, offset uint32, opts SubmitOptions) (uint64, error) {
	return s.waitCS(ctx, "wait for reserved signals", hl.HL_CS_FLAGS_WAIT, queue, stagedSeq, nil, offset, true, opts)
}

// CollectiveWaitForReserved is the collective wait (Gaudi) for
// encapsulated signals.
//
// It replaces hlthunk_wait_for_reserved_encaps_collective_signals.
func (s *Streams) CollectiveWaitForReserved(ctx context.Context, queue device.Queue, stagedSeq uint64, offset uint32, engine device.Engine, opts SubmitOptions) (uint64, error) {
	return s.waitCS(ctx, "collective wait for reserved signals", hl.HL_CS_FLAGS_COLLECTIVE_WAIT, queue, stagedSeq, &engine, offset, true, opts)
}

// waitCS submits a WAIT or, with an engine, a COLLECTIVE_WAIT CS.
func (s *Streams) waitCS(ctx context.Context, op string, flag uint32, queue device.Queue, seq uint64, engine *device.Engine, offset uint32, encaps bool, opts SubmitOptions) (uint64, error) {
	q, err := s.queueID(op, queue)
	if err != nil {
		return 0, err
	}
	var eng uint32
	if engine != nil {
		if eng, err = s.dev.EngineID(*engine); err != nil {
			return 0, wrap(op, err)
		}
	}
	if err := noRestore(op, opts); err != nil {
		return 0, err
	}
	a := &hl.CSChunksArgs{NumChunksExecute: 1, CSFlags: flag}
	if encaps {
		// The chunk names the signals by the staged sequence number and an
		// offset: integers, no user address.
		chunks := make([]hl.CSChunk, 1)
		c := &chunks[0]
		c.QueueIndex = q
		c.CollectiveEngineID = eng
		c.SetEncapsSignalSeq(seq)
		c.SetEncapsSignalOffset(offset)
		a.ChunksExecute = hl.SlicePointer(chunks)
		a.CSFlags |= hl.HL_CS_FLAGS_ENCAP_SIGNALS
	} else {
		seqs := []uint64{seq}
		chunks := []hl.CSSignalChunk{{
			SignalSeqArr:       hl.SlicePointer(seqs),
			QueueIndex:         q,
			NumSignalSeqArr:    1,
			CollectiveEngineID: eng,
		}}
		a.ChunksExecute = hl.SlicePointer(chunks)
	}
	opts.apply(&a.CSFlags, &a.Timeout)
	out, err := issueCS(ctx, s, op, a)
	if err != nil {
		return 0, err
	}
	return out.Seq(), nil
}

// queueID returns the driver's number for queue on the device, or the
// *device.WrongASICError, with op.
func (s *Streams) queueID(op string, queue device.Queue) (uint32, error) {
	q, err := s.dev.QueueID(queue)
	if err != nil {
		return 0, wrap(op, err)
	}
	return q, nil
}

// noRestore refuses restore chunks for the signal and wait CSs, which
// have no place for them.
func noRestore(op string, opts SubmitOptions) error {
	if len(opts.Restore) > 0 {
		return fmt.Errorf("%s: restore chunks belong to submissions of chunks: %w", op, unix.EINVAL)
	}
	return nil
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
func (s *Streams) Reserve(ctx context.Context, queue device.Queue, count uint32) (Reservation, error) {
	const op = "reserve signals"
	q, err := s.queueID(op, queue)
	if err != nil {
		return Reservation{}, err
	}
	a := new(hl.CSArgs)
	in := a.In()
	in.CSFlags = hl.HL_CS_FLAGS_RESERVE_SIGNALS_ONLY
	in.SetEncapsSignalsQIdx(q)
	in.SetEncapsSignalsCount(count)
	out, err := issueCS(ctx, s, op, a)
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
func (s *Streams) Unreserve(ctx context.Context, id uint32) error {
	a := new(hl.CSArgs)
	in := a.In()
	in.CSFlags = hl.HL_CS_FLAGS_UNRESERVE_SIGNALS_ONLY
	in.SetEncapsSigHandleID(id)
	_, err := issueCS(ctx, s, "unreserve signals", a)
	return err
}

// Chunk is one command buffer of a submission: on Queue, CB is a kernel
// CB handle (Gaudi's external queues) or, with UserCB, the device address
// of the command buffer (internal queues, Gaudi2), of Size bytes.
type Chunk struct {
	Queue  device.Queue
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
// hlthunk_command_submission_timeout (SubmitOptions.Timeout).
func (s *Streams) Submit(ctx context.Context, chunks []Chunk, opts SubmitOptions) (uint64, error) {
	return s.submit(ctx, "submit", chunks, 0, 0, opts)
}

// SubmitStaged submits one part of a staged submission (Gaudi; Gaudi2
// answers EPERM): the first part starts it and its sequence number is the
// staged submission's, which every later part gives as stagedSeq and which
// SubmitStaged returns for every part. Only the last part completes
// through its jobs; waiting for the staged sequence waits for all parts.
//
// It replaces hlthunk_staged_command_submission and
// hlthunk_staged_command_submission_timeout.
func (s *Streams) SubmitStaged(ctx context.Context, chunks []Chunk, part Part, stagedSeq uint64, opts SubmitOptions) (uint64, error) {
	flags := uint32(hl.HL_CS_FLAGS_STAGED_SUBMISSION)
	return s.submit(ctx, "staged submit", chunks, flags|partFlags(part), stagedSeq, opts)
}

// SubmitStagedEncaps submits the first part of a staged submission that
// signals the reservation id itself (HL_CS_FLAGS_ENCAP_SIGNALS): waits on
// the reservation then name the returned staged sequence number. part must
// include StagedFirst.
//
// It replaces hlthunk_staged_command_submission_encaps_signals.
func (s *Streams) SubmitStagedEncaps(ctx context.Context, chunks []Chunk, part Part, id uint32, opts SubmitOptions) (uint64, error) {
	flags := uint32(hl.HL_CS_FLAGS_STAGED_SUBMISSION | hl.HL_CS_FLAGS_ENCAP_SIGNALS)
	return s.submit(ctx, "staged submit with encapsulated signals", chunks, flags|partFlags(part), uint64(id), opts)
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
func (s *Streams) submit(ctx context.Context, op string, chunks []Chunk, flags uint32, seq uint64, opts SubmitOptions) (uint64, error) {
	arr, err := s.csChunks(op, chunks)
	if err != nil {
		return 0, err
	}
	restore, err := s.csChunks(op, opts.Restore)
	if err != nil {
		return 0, err
	}
	a := &hl.CSChunksArgs{ChunksExecute: hl.SlicePointer(arr), NumChunksExecute: uint32(len(arr)), Seq: seq, CSFlags: flags}
	opts.apply(&a.CSFlags, &a.Timeout)
	if len(restore) > 0 {
		a.ChunksRestore, a.NumChunksRestore = hl.SlicePointer(restore), uint32(len(restore))
		a.CSFlags |= hl.HL_CS_FLAGS_FORCE_RESTORE
	}
	out, err := issueCS(ctx, s, op, a)
	if err != nil {
		return 0, err
	}
	return out.Seq(), nil
}

// csChunks converts chunks to the driver's layout, on the heap. A chunk
// on a queue of another ASIC is refused.
func (s *Streams) csChunks(op string, chunks []Chunk) ([]hl.CSChunk, error) {
	arr := make([]hl.CSChunk, len(chunks))
	for i, c := range chunks {
		q, err := s.dev.QueueID(c.Queue)
		if err != nil {
			return nil, fmt.Errorf("%s: chunk %d: %w", op, i, err)
		}
		arr[i].QueueIndex = q
		arr[i].SetCBHandle(c.CB)
		arr[i].SetCBSize(c.Size)
		if c.UserCB {
			arr[i].CSChunkFlags = hl.HL_CS_CHUNK_FLAGS_USER_ALLOC_CB
		}
	}
	return arr, nil
}
