package pqm

import (
	"fmt"

	"github.com/gaudi-go/gaudi/packet"
)

// Job is a run of LIN_PDMA packets for one channel, built before it is
// submitted: Submit copies it into a ring, so a Job may be submitted again
// (a prepared batch) and reused once submitted. The last packet is kept
// apart, since Submit gives it the completion.
type Job struct {
	body []byte // every packet but the last, encoded
	last packet.LinPDMA
	n    int // packets, the last included
}

// MaxJobBytes is the most packet bytes one Job holds, completion included:
// 2,730 LIN_PDMA packets, each moving up to 2 GiB. A ring takes jobs of at
// most a quarter of its size.
const MaxJobBytes = 64 << 10

// NewJob returns an empty Job with room for MaxJobBytes of packets.
func NewJob() *Job { return &Job{body: make([]byte, 0, MaxJobBytes-24)} }

// Reset empties the job.
func (j *Job) Reset() { j.body, j.last, j.n = j.body[:0], packet.LinPDMA{}, 0 }

// Len returns the number of packets.
func (j *Job) Len() int { return j.n }

// Full reports whether the job has no room for another packet.
func (j *Job) Full() bool { return j.n > 0 && cap(j.body)-len(j.body) < j.last.Len() }

// Add appends a LIN_PDMA packet (without completion or fence). A full job
// returns ErrJobFull and is unchanged. The packet is encoded when the next
// one is added, or by Submit: a field out of range fails there.
func (j *Job) Add(p packet.LinPDMA) error {
	if p.WriteCompletion || p.Fence || p.AdvanceCompletionQueue {
		return fmt.Errorf("pqm: job packet with its own completion or fence: %v", p)
	}
	if j.n > 0 {
		if cap(j.body)-len(j.body) < j.last.Len() {
			return ErrJobFull
		}
		b, err := j.last.Append(packet.Gaudi3PQM, j.body)
		if err != nil {
			return fmt.Errorf("pqm: encode: %w", err)
		}
		j.body = b
	}
	j.last = p
	j.n++
	return nil
}
