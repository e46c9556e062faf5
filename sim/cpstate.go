package sim

import (
	"encoding/binary"
	"errors"

	"github.com/gaudi-go/gaudi/packet"
)

// The command processor's own state, per stream: the predicates and the
// scalar registers that LOAD_AND_EXE loads. The kernel headers give
// LOAD_AND_EXE's Dst bit only (GAUDI_PKT_LOAD_AND_EXE_CFG_DST); the other
// bits and their meaning are hl-thunk's (include/specs/gaudi*/
// gaudi*_packets.h: dst 0, pmap 1 on Gaudi2, load 8, exe 9, etype 10;
// the tests' enums hl_tests_load_dst, hl_tests_predicates_map and
// hl_tests_exe_type; test_cs_load_predicates, test_cs_load_scalars_exe_*
// and test_cs_cb_list in tests/common/command_submission.c):
//
//   - There are 32 predicates. P0 is always true and no load changes it;
//     P1-P31 start false (the simulator's reading of the reset value) and
//     change only by a LOAD_AND_EXE with Load set and Dst 0. With PMap 0
//     (Gaudi, which has no PMap, always) predicate n is bit 0 of the
//     32-bit word n of a 128-byte buffer at Src; with PMap 1 (Gaudi2) it
//     is bit n%8 of byte n/8.
//   - Every packet with a predicate field (ctl bits 4:0: WREG_32,
//     WREG_BULK, MSG_LONG, MSG_PROT, CP_DMA, REPEAT, FENCE, ARB_POINT,
//     CB_LIST, LOAD_AND_EXE, WREG_64_*) is skipped when its predicate is
//     false. MSG_SHORT, LIN_DMA, NOP, STOP, WAIT and WRITE_ARC_STREAM have
//     none and always run.
//   - The scalar registers R0-R3 are 16 bytes: a LOAD_AND_EXE with Load
//     and Dst 1 reads them from Src. Exe (after the load when both are
//     set) runs the one packet they hold: EType 0 the packet at R0 (16
//     bytes at most), EType 1 the packet at R2 (8 bytes at most). A
//     packet that does not fit, or an opcode the ASIC does not define, is
//     an undefined opcode. A LOAD_AND_EXE or CB_LIST run this way nests,
//     up to maxCPDMADepth levels.
//   - CB_LIST (Gaudi2) reads a 32-bit index at IndexAddr and runs the
//     first packet of entry index of the table at TableAddr, entries of
//     16 bytes (SizeDesc 0) or 32 (SizeDesc 1); hl-thunk fills each entry
//     with a CP_DMA of a command buffer, which runs as CP_DMA does.
//
// Both sets belong to the stream and keep their values from one job to
// the next; a reset clears them (hwState.restart).
type cpState struct {
	preds   uint32   // bit n is predicate n; bit 0 is ignored (P0 is true)
	scalars [16]byte // R0-R3, little-endian
	nest    int      // packets run from scalars or a CB_LIST entry, nested
}

// predOps are the opcodes whose ctl bits 4:0 hold a predicate id.
const predOps = 1<<packet.OpWReg32 | 1<<packet.OpWRegBulk | 1<<packet.OpMsgLong |
	1<<packet.OpMsgProt | 1<<packet.OpCPDMA | 1<<packet.OpRepeat | 1<<packet.OpFence |
	1<<packet.OpArbPoint | 1<<packet.OpCBList | 1<<packet.OpLoadAndExe |
	1<<packet.OpWReg64Short | 1<<packet.OpWReg64Long

// skipped reports whether the packet with header hdr has a predicate
// that is false.
func (c *cpState) skipped(op packet.Opcode, hdr []byte) bool {
	if predOps>>op&1 == 0 {
		return false
	}
	id := hdr[4] & 0x1f
	return id != 0 && c.preds>>id&1 == 0
}

// loadAndExe executes a LOAD_AND_EXE packet.
func (x *execEnv) loadAndExe(p packet.LoadAndExe, depth int) error {
	c := &x.q.cp
	if p.Load {
		switch {
		case p.Dst:
			if err := x.load(p.Src, c.scalars[:]); err != nil {
				return err
			}
		case p.PMap:
			var b [4]byte
			if err := x.load(p.Src, b[:]); err != nil {
				return err
			}
			c.preds = binary.LittleEndian.Uint32(b[:])
		default:
			var b [128]byte
			if err := x.load(p.Src, b[:]); err != nil {
				return err
			}
			c.preds = 0
			for n := range 32 {
				c.preds |= uint32(b[4*n]&1) << n
			}
		}
	}
	if !p.Exe {
		return nil
	}
	var regs [16]byte
	copy(regs[:], c.scalars[:])
	b := regs[:]
	if p.EType {
		b = regs[8:]
	}
	return x.runOne(b, depth)
}

// cbList executes a Gaudi2 CB_LIST packet.
func (x *execEnv) cbList(p packet.CBList, depth int) error {
	var entry [32]byte
	b, err := x.cbListEntry(p, &entry)
	if err != nil {
		return err
	}
	return x.runOne(b, depth)
}

// cbListEntry reads the table entry a CB_LIST selects into *buf.
func (x *execEnv) cbListEntry(p packet.CBList, buf *[32]byte) ([]byte, error) {
	var idx [4]byte
	if err := x.load(p.IndexAddr, idx[:]); err != nil {
		return nil, err
	}
	size := uint64(16)
	if p.SizeDesc {
		size = 32
	}
	if err := x.load(p.TableAddr+uint64(binary.LittleEndian.Uint32(idx[:]))*size, buf[:size]); err != nil {
		return nil, err
	}
	return buf[:size], nil
}

// cbListTail is CB_LIST as the last packet of a fetched command buffer
// inside a CP_DMA (depth > 0): when its entry holds a CP_DMA whose
// predicate is true, that buffer is finished and the CP_DMA's buffer
// runs in its place, at the same depth, instead of one level deeper. So
// chains of command buffers that each end with a CB_LIST to the next, as
// hl-thunk's test_cs_cb_list builds ten of, run however long they are;
// nested CP_DMAs still stop at maxCPDMADepth. ok is false when the entry
// holds anything else: the caller runs the packet as cbList does.
func (x *execEnv) cbListTail(p packet.CBList) (next cbSource, ok bool, err error) {
	var entry [32]byte
	b, err := x.cbListEntry(p, &entry)
	if err != nil {
		return cbSource{}, false, err
	}
	op := packetOpcode(b)
	if op != packet.OpCPDMA || x.q.cp.skipped(op, b) {
		return cbSource{}, false, nil
	}
	d, _, derr := x.hw.format().Decode(b[:16])
	cp, isCP := d.(packet.CPDMA)
	if !isCP || derr != nil && !errors.Is(derr, packet.ErrReservedBits) {
		return cbSource{}, false, nil
	}
	return cbSource{x: x, addr: cp.Src, size: uint64(cp.Size)}, true, nil
}

// runOne runs the first packet of b, which b must hold whole, as part of
// the command buffer at depth.
func (x *execEnv) runOne(b []byte, depth int) error {
	c := &x.q.cp
	n := packetLen(x.hw.format(), b)
	if n == 0 || n > uint64(len(b)) || c.nest >= maxCPDMADepth {
		return &undefinedOpcode{left: uint32(len(b))}
	}
	c.nest++
	err := x.run(cbSource{mem: b[:n], size: n}, depth)
	c.nest--
	return err
}
