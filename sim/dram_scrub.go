package sim

// Scrubbing freed device memory.
//
// The driver does not scrub device memory that is freed by default
// (memory_scrub is off: common/memory.c of
// HabanaAI/drivers.accel.habanalabs.kernel, free_phys_pg_pack scrubs only
// when hdev->memory_scrub is set), but a simulator served to several
// users (tools/hlsim) must not hand one user's bytes to the next, and
// the pages of a sparse memfd it leaves written stay resident. So the
// simulator scrubs the DRAM of an allocation when it is freed (FREE, the
// end of its context, Gaudi's whole DRAM at the end of its context): whole
// pages are given back to the machine (hole punching), partial pages are
// cleared. Bytes still served by an open export keep their contents: the
// export's holders may still use them. The pages return to the allocator
// only after their scrub, so a new allocation never loses bytes to it.

// scrub zeroes the parts of runs that the DRAM memfd holds (not the parts
// an open export's memfd serves).
func (m *sparseMem) scrub(runs []dramRun) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed || m.base == nil {
		return nil
	}
	if m.scrubbing != nil {
		m.scrubbing(runs)
	}
	for _, r := range runs {
		if err := m.check(r.off, r.n); err != nil {
			return err
		}
		err := m.spans(r.off, r.n, func(s span) error {
			if s.fd != m.fd {
				return nil
			}
			return m.zero(s.off, s.n)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
