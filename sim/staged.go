package sim

import (
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Staged submissions (Gaudi only: supports_staged_submission; Gaudi2
// answers EPERM in the sanity checks), as common/command_submission.c
// (cs_staged_submission, staged_cs_get/put, cs_needs_completion,
// cs_needs_timeout, cs_do_release) and common/hw_queue.c
// (hl_hw_queue_schedule_cs) run them:
//
//   - A staged CS carries HL_CS_FLAGS_STAGED_SUBMISSION; the first part also
//     FIRST, the last part LAST (one CS may be both). The staged
//     submission's sequence number is the first part's; the other parts
//     give it in the seq field and the CS ioctl answers it for every part.
//   - Only the last part completes through its jobs; the other parts hold
//     an extra reference that the last part's release drops, so the first
//     part's fence, the one waits look up, completes when the last part
//     does. Only the first part runs under the TDR.
//   - A part after the first must find the first part still in flight
//     (EINVAL otherwise) and no last part submitted yet (EINVAL).
//   - A CS that does not need completion may have internal queue jobs only.
//   - The first part with HL_CS_FLAGS_ENCAP_SIGNALS claims a reservation of
//     encapsulated signals by its handle id (EINVAL when unknown): waits on
//     that reservation then name the first part's sequence (encaps.go).

// staged is a CS's staged submission membership.
type staged struct {
	on, first, last bool
	seq             uint64 // staged_sequence (the CS's own when not staged)
	encapsID        uint32 // the first part's encapsulated signals handle id
	group           *stagedGroup
}

// stagedGroup is the list of the submitted parts of one staged
// submission (staged_cs_node), guarded by hw.mu.
type stagedGroup struct {
	members []*cs
}

// stage is cs_staged_submission: user is the staged sequence number the
// ioctl gave for a part after the first.
func (s *cs) stage(flags uint32, user uint64, encapsID uint32) {
	if flags&hl.HL_CS_FLAGS_STAGED_SUBMISSION == 0 {
		return
	}
	st := &s.staging
	st.on = true
	st.last = flags&hl.HL_CS_FLAGS_STAGED_SUBMISSION_LAST != 0
	st.first = flags&hl.HL_CS_FLAGS_STAGED_SUBMISSION_FIRST != 0
	if st.first {
		st.seq = s.seq
		if s.encaps {
			st.encapsID = encapsID
		}
	} else {
		st.seq = user
	}
	if !st.last {
		s.refs.Add(1) // staged_cs_get
	}
}

// needsCompletion is cs_needs_completion.
func (s *cs) needsCompletion() bool { return !s.staging.on || s.staging.last }

// needsTimeout is cs_needs_timeout.
func (s *cs) needsTimeout() bool { return !s.staging.on || s.staging.first }

// joinStagedLocked is the staged part of hl_hw_queue_schedule_cs: a first
// part starts its group; a later one joins the group of the first part
// still in the mirror list. hw.mu must be held.
func (hw *hwState) joinStagedLocked(s *cs) error {
	st := &s.staging
	if !st.on {
		return nil
	}
	if st.first {
		if s.encaps {
			if err := s.c.claimEncaps(st.encapsID, s); err != nil {
				return err
			}
		}
		st.group = &stagedGroup{members: []*cs{s}}
		return nil
	}
	var first *cs
	for i := len(hw.mirror) - 1; i >= 0; i-- { // hl_staged_cs_find_first
		m := hw.mirror[i]
		if m.staging.on && m.staging.first && m.seq == st.seq && m.c == s.c {
			first = m
			break
		}
	}
	if first == nil {
		return unix.EINVAL
	}
	g := first.staging.group
	if last := g.members[len(g.members)-1]; last.staging.last { // is_staged_cs_last_exists
		return unix.EINVAL
	}
	st.group = g
	g.members = append(g.members, s)
	return nil
}

// releaseStaged is the staged part of cs_do_release for a submitted CS:
// the last part drops the other parts' references, and the CS leaves its
// group; the first part with encapsulated signals drops the reservation's
// handle.
func (s *cs) releaseStaged() {
	st := &s.staging
	if !st.on {
		return
	}
	hw := s.c.hw
	var puts []*cs
	hw.mu.Lock()
	if g := st.group; g != nil {
		for i, m := range g.members {
			if m == s {
				g.members = append(g.members[:i], g.members[i+1:]...)
				break
			}
		}
		if st.last {
			for _, m := range g.members {
				if !m.needsCompletion() {
					puts = append(puts, m)
				}
			}
		}
	}
	hw.mu.Unlock()
	for _, m := range puts {
		m.put() // staged_cs_put
	}
	if h := s.fence.encaps; h != nil {
		s.c.putEncaps(h, false)
	}
}
