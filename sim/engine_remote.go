package sim

// DMA to and from the host memory of a served process (served.go).
//
// A host mapping of a file opened with OpenFor reaches another process's
// memory, which the engines read and write through its /proc/PID/mem
// (remoteMem) instead of plain copies. A transfer the kernel cuts
// short because the process unmapped the memory is reported as the
// in-process engines report a fault on unmapped host memory (*hostGone),
// so the same page-by-page fallback drops what cannot be reached and
// counts it (hostfault.go); one cut short because the whole address space
// went away (exec or exit) ends the work (errAddressSpaceGone, orphan.go).

// bounce returns the queue's staging buffer, n bytes long (n is at most
// dmaChunk).
func (x *execEnv) bounce(n uint64) []byte {
	if uint64(cap(x.q.swap)) < n {
		x.q.swap = make([]byte, n)
	}
	return x.q.swap[:n]
}

// remoteCopy is copyOnce for n bytes from s to d when one side or both
// are a served process's memory, with the endian swap of width-byte words
// when width is not 0.
func (x *execEnv) remoteCopy(d, s seg, n, width uint64) error {
	dram := x.hw.d.dram
	if s.rem != nil && d.isDRAM && width == 0 {
		// Host to device, the bulk direction: straight into device
		// memory.
		return dram.view(d.dram, n, func(b []byte) error {
			if _, err := s.rem.read(b, s.addr); err != nil {
				return remoteErr(s.rem, true)
			}
			dram.full.mark(d.dram, n)
			return nil
		})
	}
	if s.rem != nil && !d.isDRAM && d.rem == nil {
		// Host to SRAM or a command buffer.
		if _, err := s.rem.read(d.b[:n], s.addr); err != nil {
			return remoteErr(s.rem, true)
		}
		if width != 0 {
			swapBytes(d.b[:n], width)
		}
		return nil
	}
	if d.rem != nil && !s.isDRAM && s.rem == nil && width == 0 {
		return remoteStore(d, s.b[:n])
	}
	// Everything else stages the bytes: device memory to host (ReadAt
	// leaves what was never written unallocated), host to host, and
	// swapped copies.
	buf := x.bounce(n)
	switch {
	case s.rem != nil:
		if _, err := s.rem.read(buf, s.addr); err != nil {
			return remoteErr(s.rem, true)
		}
	case s.isDRAM:
		if err := dram.ReadAt(buf, s.dram); err != nil {
			return err
		}
	default:
		copy(buf, s.b[:n])
	}
	if width != 0 {
		swapBytes(buf, width)
	}
	switch {
	case d.rem != nil:
		return remoteStore(d, buf)
	case d.isDRAM:
		return dram.WriteAt(buf, d.dram)
	}
	copy(d.b[:n], buf)
	return nil
}

// remoteFill is fillOnce for n bytes of a served process's memory.
func (x *execEnv) remoteFill(d seg, n uint64, pat [8]byte, phase uint64) error {
	buf := x.bounce(n)
	fillPattern(buf, pat, phase)
	return remoteStore(d, buf)
}

// remoteStore writes b to the served process's memory of d.
func remoteStore(d seg, b []byte) error {
	if _, err := d.rem.write(b, d.addr); err != nil {
		return remoteErr(d.rem, false)
	}
	return nil
}

// remoteLoad reads b from the served process's memory of s.
func remoteLoad(s seg, b []byte) error {
	if _, err := s.rem.read(b, s.addr); err != nil {
		return remoteErr(s.rem, true)
	}
	return nil
}
