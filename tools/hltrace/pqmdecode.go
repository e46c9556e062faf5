package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/packet"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// Gaudi3 user DMA does not go through CS: a program maps a PDMA channel's
// CH_A register block (MEMORY MAP_BLOCK, then mmap of the handle), points
// the channel's message queue at host memory it mapped to the device
// (MSQ_BASE_H/L, MSQ_SIZE), writes PQM packets there and advances MSQ_PI
// with a store into the mapped block, then waits for a user interrupt
// (WAIT_CS with HL_WAIT_CS_FLAGS_INTERRUPT). None of that but the MAP_BLOCK,
// the mmap, the MEMORY MAP and the wait is a system call, so -decode-cb
// reads the ring at each interrupt wait instead: the block's registers
// through the traced process's mapping of it, the packets between the
// MSQ_PI it last saw and the current one from the ring's host memory
// (the MSQ base is a device VA that a traced MEMORY MAP of host memory
// returned), both with process_vm_readv, and decodes them with package
// packet's Gaudi3PQM format.
//
// That needs the block's mapping to be readable from another process.
// The simulator's served nodes (tools/hlsim) back it with a memory file,
// which is. On hardware the mapping is the device's MMIO registers
// (VM_IO | VM_PFNMAP), which process_vm_readv refuses (EFAULT): hltrace
// says so once per channel and decodes nothing there. A ring whose
// producer index moved by more than the ring between two waits has been
// overwritten and is skipped; a program that rewrites its ring at once
// may show the new packets. Register layout: package uapi/gaudi3
// (pqm_regs.go), from Habana's Gaudi3 register specifications.

// pqmRing is one channel block a process mapped.
type pqmRing struct {
	fd     int32
	ch     int
	handle uint64 // the mmap offset of the block
	last   uint32 // the MSQ_PI up to which packets were decoded
	warned bool   // the registers were unreadable once: said so
}

// A pqmPacket is one decoded packet of a channel's ring.
type pqmPacket struct {
	PID     uint32
	Ch      int
	Pos     uint32 // its MSQ byte count (the PI value before it)
	Packet  packet.Packet
	Err     string // set when the packet decoded with reserved bits set
	SrcHost uint64 // LIN_PDMA: host addresses behind Src and Dst, else 0
	DstHost uint64
}

// A pqmError says why a channel's ring could not be read.
type pqmError struct {
	PID uint32
	Ch  int
	Err string
}

// pqmRegsOff and pqmRegsLen are the registers read at each wait: MSQ_BASE_H
// to MSQ_CI.
const (
	pqmRegsOff = g3.PDMA_CH_A_PQM_CH_MSQ_BASE_H
	pqmRegsLen = g3.PDMA_CH_A_PQM_CH_MSQ_CI + 4 - pqmRegsOff
)

// observePQM learns the channel blocks a Gaudi3 process maps and, at an
// interrupt wait, decodes the packets its rings gained since the last.
func (d *cbDecoder) observePQM(e *Event, pkts []pqmPacket, errs []pqmError) ([]pqmPacket, []pqmError) {
	pid := e.PID()
	switch e.Call() {
	case bpfCallCALL_HL_MEMORY:
		b := e.Mem()
		if !e.OK() || e.ExitFault() || b.Op != hl.HL_MEM_OP_MAP_BLOCK || e.asic != device.Gaudi3 {
			break
		}
		if ch, ok := g3.PDMAChannelOfBlock(b.In[0]); ok {
			d.rings[pid] = append(d.rings[pid], &pqmRing{fd: e.FD(), ch: ch, handle: b.Out[0]})
		}
	case bpfCallCALL_CLOSE:
		if e.OK() {
			rs := d.rings[pid][:0]
			for _, r := range d.rings[pid] {
				if r.fd != e.FD() {
					rs = append(rs, r)
				}
			}
			d.rings[pid] = rs
		}
	case bpfCallCALL_HL_WAIT_CS:
		if e.Wait().Flags&hl.HL_WAIT_CS_FLAGS_INTERRUPT == 0 {
			break
		}
		for _, r := range d.rings[pid] {
			pkts, errs = d.readRing(pid, r, pkts, errs)
		}
	}
	return pkts, errs
}

// readRing decodes the packets ring r gained since it was last read.
func (d *cbDecoder) readRing(pid uint32, r *pqmRing, pkts []pqmPacket, errs []pqmError) ([]pqmPacket, []pqmError) {
	fail := func(format string, args ...any) ([]pqmPacket, []pqmError) {
		return pkts, append(errs, pqmError{PID: pid, Ch: r.ch, Err: fmt.Sprintf(format, args...)})
	}
	m, ok := d.lookup(d.mmaps[pid], r.handle)
	if !ok {
		return pkts, errs // not mapped (yet): nothing to read
	}
	var regs [pqmRegsLen]byte
	if err := d.read(pid, m.host+(r.handle-m.key)+pqmRegsOff, regs[:]); err != nil {
		if r.warned {
			return pkts, errs
		}
		r.warned = true
		if errors.Is(err, unix.ESRCH) {
			return fail("the process exited before its ring was read (hltrace reads it when the wait's event arrives)")
		}
		return fail("registers unreadable through the mapping at %#x: %v (on hardware the block is MMIO, which process_vm_readv cannot read; the simulator's served nodes can be)",
			m.host+(r.handle-m.key), err)
	}
	reg := func(off uint64) uint32 { return binary.LittleEndian.Uint32(regs[off-pqmRegsOff:]) }
	base := uint64(reg(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_H))<<32 | uint64(reg(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_L))
	size := uint64(reg(g3.PDMA_CH_A_PQM_CH_MSQ_SIZE)&g3.PDMA_CH_A_PQM_CH_MSQ_SIZE_VAL_MASK) + 1
	pi := reg(g3.PDMA_CH_A_PQM_CH_MSQ_PI)
	if pi < r.last {
		r.last = 0 // the channel was reset (DESC_SUBMIT_FIFO_CFG): the counters restarted
	}
	from := r.last
	if pi == from {
		return pkts, errs
	}
	r.last = pi
	n := uint64(pi - from)
	switch {
	case size&(size-1) != 0 || base == 0:
		return fail("MSQ_BASE %#x, MSQ_SIZE %#x: no ring", base, size-1)
	case n > size:
		return fail("MSQ_PI moved by %d bytes since the last wait, more than the %d-byte ring: overwritten", n, size)
	case n > maxCB:
		return fail("MSQ_PI moved by %d bytes since the last wait: more than hltrace reads (%d)", n, maxCB)
	}
	h, ok := d.lookup(d.host[pid], base)
	if !ok || base-h.key+size > h.size {
		return fail("ring at device VA %#x: no MEMORY MAP of host memory seen for it", base)
	}
	if cap(d.buf) < int(n) {
		d.buf = make([]byte, n)
	}
	buf := d.buf[:n]
	off := uint64(from) % size
	first := min(n, size-off)
	ring := h.host + (base - h.key)
	if err := d.read(pid, ring+off, buf[:first]); err != nil {
		return fail("read ring: %v", err)
	}
	if first < n {
		if err := d.read(pid, ring, buf[first:]); err != nil {
			return fail("read ring: %v", err)
		}
	}
	for k := 0; k < len(buf); {
		p, l, err := packet.Gaudi3PQM.Decode(buf[k:])
		if err != nil && !errors.Is(err, packet.ErrReservedBits) {
			return fail("MSQ byte %d: %v", from+uint32(k), err)
		}
		pp := pqmPacket{PID: pid, Ch: r.ch, Pos: from + uint32(k), Packet: p}
		if err != nil {
			pp.Err = err.Error()
		}
		if l, ok := p.(packet.LinPDMA); ok {
			if h, ok := d.lookup(d.host[pid], l.Src); ok && !l.Memset {
				pp.SrcHost = h.host + (l.Src - h.key)
			}
			if h, ok := d.lookup(d.host[pid], l.Dst); ok {
				pp.DstHost = h.host + (l.Dst - h.key)
			}
		}
		pkts = append(pkts, pp)
		k += l
	}
	return pkts, errs
}

func (p *pqmPacket) line(b []byte) []byte {
	b = fmt.Appendf(b, "    PDMA ch %d msq=%d %v", p.Ch, p.Pos, p.Packet)
	if p.SrcHost != 0 {
		b = fmt.Appendf(b, " src_host=%#x", p.SrcHost)
	}
	if p.DstHost != 0 {
		b = fmt.Appendf(b, " dst_host=%#x", p.DstHost)
	}
	if p.Err != "" {
		b = fmt.Appendf(b, " (%s)", p.Err)
	}
	return append(b, '\n')
}

type jsonPQMPacket struct {
	Type    string    `json:"type"`
	Time    time.Time `json:"time"`
	PID     uint32    `json:"pid"`
	Channel int       `json:"channel"`
	MSQ     uint32    `json:"msq"`
	Packet  string    `json:"packet"`
	Text    string    `json:"text"`
	Src     string    `json:"src,omitempty"` // LIN_PDMA
	Dst     string    `json:"dst,omitempty"`
	Size    uint32    `json:"size,omitempty"`
	Memset  bool      `json:"memset,omitempty"`
	SrcHost string    `json:"src_host,omitempty"`
	DstHost string    `json:"dst_host,omitempty"`
	Error   string    `json:"error,omitempty"`
}

func (p *pqmPacket) json(wall time.Time) jsonPQMPacket {
	j := jsonPQMPacket{Type: "pqm_packet", Time: wall, PID: p.PID, Channel: p.Ch, MSQ: p.Pos,
		Packet: p.Packet.Opcode().String(), Text: fmt.Sprint(p.Packet), Error: p.Err}
	if l, ok := p.Packet.(packet.LinPDMA); ok {
		// LIN_PDMA has LIN_DMA's opcode, which the opcode's name is.
		j.Packet = "LIN_PDMA"
		j.Src, j.Dst, j.Size, j.Memset = hex(l.Src), hex(l.Dst), l.Size, l.Memset
	}
	if p.SrcHost != 0 {
		j.SrcHost = hex(p.SrcHost)
	}
	if p.DstHost != 0 {
		j.DstHost = hex(p.DstHost)
	}
	return j
}
