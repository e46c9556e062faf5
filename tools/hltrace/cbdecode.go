package main

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// cbDecoder decodes the LIN_DMA packets of the Gaudi2 command buffers a
// CS submits, reading them from the submitting process's memory after
// the call. It learns where each command buffer lives from the calls it
// has seen:
//   - a user CB (HL_CS_CHUNK_FLAGS_USER_ALLOC_CB) is named by its device
//     VA, which a MEMORY MAP of host memory (HL_MEM_USERPTR) returned for
//     a host address;
//   - a kernel CB is named by its handle, which the process mmaps from
//     the device at offset handle << PAGE_SHIFT.
//
// Submissions whose buffers were mapped before tracing began cannot be
// decoded. The buffer is read when the CS event arrives, so a process
// that rewrites it at once may show the new contents. Not safe for
// concurrent use.
type cbDecoder struct {
	host  map[uint32][]hostRange // by pid: device VA ranges backed by host memory
	mmaps map[uint32][]hostRange // by pid: mmap offsets of device files
	rings map[uint32][]*pqmRing  // by pid: Gaudi3 PDMA channel blocks (pqmdecode.go)
	read  func(pid uint32, addr uint64, b []byte) error
	buf   []byte
}

// A hostRange maps [key, key+size) to host addresses from host.
type hostRange struct {
	fd   int32
	key  uint64 // device VA, or mmap offset
	host uint64
	size uint64
}

// maxCB bounds how much of a command buffer is read.
const maxCB = 256 << 10

func newCBDecoder() *cbDecoder {
	return &cbDecoder{host: map[uint32][]hostRange{}, mmaps: map[uint32][]hostRange{}, rings: map[uint32][]*pqmRing{}, read: readProcess}
}

// readProcess reads another process's memory (process_vm_readv).
func readProcess(pid uint32, addr uint64, b []byte) error {
	local := []unix.Iovec{{Base: &b[0]}}
	local[0].SetLen(len(b))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
	n, err := unix.ProcessVMReadv(int(pid), local, remote, 0)
	if err != nil {
		return err
	}
	if n != len(b) {
		return fmt.Errorf("short read: %d of %d bytes", n, len(b))
	}
	return nil
}

// A dmaPacket is one decoded LIN_DMA.
type dmaPacket struct {
	PID      uint32
	Seq      uint64
	Chunk    int
	Queue    uint32
	Offset   int
	Src, Dst uint64
	Size     uint32
	Memset   bool
	SrcHost  uint64 // host address behind Src when it is mapped host memory, else 0
	DstHost  uint64
}

// cbError says why a chunk could not be decoded.
type cbError struct {
	PID   uint32
	Seq   uint64
	Chunk int
	Err   string
}

func (d *cbDecoder) lookup(ranges []hostRange, key uint64) (hostRange, bool) {
	for _, r := range ranges {
		if key >= r.key && key-r.key < r.size {
			return r, true
		}
	}
	return hostRange{}, false
}

// observe learns mappings from e and decodes the buffers of a CS.
func (d *cbDecoder) observe(e *Event, pkts []dmaPacket, errs []cbError) ([]dmaPacket, []cbError) {
	pid := e.PID()
	switch e.Call() {
	case bpfCallCALL_HL_MEMORY:
		b := e.Mem()
		if !e.OK() || e.ExitFault() {
			break
		}
		switch {
		case b.Op == hl.HL_MEM_OP_MAP && b.Flags&hl.HL_MEM_USERPTR != 0:
			d.host[pid] = append(d.host[pid], hostRange{fd: e.FD(), key: b.Out[0], host: b.In[0], size: b.In[2]})
		case b.Op == hl.HL_MEM_OP_UNMAP:
			d.host[pid] = removeRange(d.host[pid], b.In[0])
		}
	case bpfCallCALL_MMAP:
		if e.OK() {
			m := e.Mmap()
			d.mmaps[pid] = append(d.mmaps[pid], hostRange{fd: e.FD(), key: m.Off, host: uint64(e.Ret()), size: m.Len})
		}
	case bpfCallCALL_CLOSE:
		if e.OK() {
			d.host[pid] = removeFD(d.host[pid], e.FD())
			d.mmaps[pid] = removeFD(d.mmaps[pid], e.FD())
		}
	case bpfCallCALL_HL_CS:
		b := e.CS()
		for k := 0; k < int(b.Nchunks) && k < len(b.Chunk); k++ {
			c := b.Chunk[k]
			var r hostRange
			var ok bool
			var key uint64
			if c.Flags&hl.HL_CS_CHUNK_FLAGS_USER_ALLOC_CB != 0 {
				key = c.CbHandle
				r, ok = d.lookup(d.host[pid], key)
			} else {
				key = c.CbHandle << pageShift()
				r, ok = d.lookup(d.mmaps[pid], key)
			}
			if !ok {
				errs = append(errs, cbError{PID: pid, Seq: b.Seq, Chunk: k, Err: fmt.Sprintf("command buffer %#x: no mapping seen", c.CbHandle)})
				continue
			}
			size := min(int(c.CbSize), maxCB)
			if size == 0 {
				continue
			}
			if cap(d.buf) < size {
				d.buf = make([]byte, size)
			}
			buf := d.buf[:size]
			if err := d.read(pid, r.host+(key-r.key), buf); err != nil {
				errs = append(errs, cbError{PID: pid, Seq: b.Seq, Chunk: k, Err: fmt.Sprintf("read command buffer: %v", err)})
				continue
			}
			err := packet.Gaudi2.Walk(buf, func(off int, p packet.Packet) error {
				if l, ok := p.(packet.LinDMA); ok {
					dp := dmaPacket{PID: pid, Seq: b.Seq, Chunk: k, Queue: c.Queue, Offset: off, Src: l.Src, Dst: l.Dst, Size: l.Size, Memset: l.Memset}
					if h, ok := d.lookup(d.host[pid], l.Src); ok && !l.Memset {
						dp.SrcHost = h.host + (l.Src - h.key)
					}
					if h, ok := d.lookup(d.host[pid], l.Dst); ok {
						dp.DstHost = h.host + (l.Dst - h.key)
					}
					pkts = append(pkts, dp)
				}
				return nil
			})
			if err != nil {
				errs = append(errs, cbError{PID: pid, Seq: b.Seq, Chunk: k, Err: err.Error()})
			}
		}
	}
	return pkts, errs
}

func removeRange(rs []hostRange, key uint64) []hostRange {
	out := rs[:0]
	for _, r := range rs {
		if r.key != key {
			out = append(out, r)
		}
	}
	return out
}

func removeFD(rs []hostRange, fd int32) []hostRange {
	out := rs[:0]
	for _, r := range rs {
		if r.fd != fd {
			out = append(out, r)
		}
	}
	return out
}

func pageShift() uint {
	s := uint(0)
	for p := os.Getpagesize(); p > 1; p >>= 1 {
		s++
	}
	return s
}

func (p *dmaPacket) line(b []byte) []byte {
	b = fmt.Appendf(b, "    seq=%d chunk%d q=%d +%#x LIN_DMA", p.Seq, p.Chunk, p.Queue, p.Offset)
	if p.Memset {
		b = fmt.Appendf(b, " memset value=%#x", p.Src)
	} else {
		b = fmt.Appendf(b, " src=%#x", p.Src)
		if p.SrcHost != 0 {
			b = fmt.Appendf(b, "(host %#x)", p.SrcHost)
		}
	}
	b = fmt.Appendf(b, " dst=%#x", p.Dst)
	if p.DstHost != 0 {
		b = fmt.Appendf(b, "(host %#x)", p.DstHost)
	}
	return fmt.Appendf(b, " size=%d\n", p.Size)
}

type jsonPacket struct {
	Type    string    `json:"type"`
	Time    time.Time `json:"time"`
	PID     uint32    `json:"pid"`
	Seq     uint64    `json:"seq"`
	Chunk   int       `json:"chunk"`
	Queue   uint32    `json:"queue"`
	Offset  int       `json:"offset"`
	Packet  string    `json:"packet"`
	Src     string    `json:"src"`
	Dst     string    `json:"dst"`
	Size    uint32    `json:"size"`
	Memset  bool      `json:"memset,omitempty"`
	SrcHost string    `json:"src_host,omitempty"`
	DstHost string    `json:"dst_host,omitempty"`
}

func hex(v uint64) string { return fmt.Sprintf("%#x", v) }

func (p *dmaPacket) json(wall time.Time) jsonPacket {
	j := jsonPacket{Type: "lin_dma", Time: wall, PID: p.PID, Seq: p.Seq, Chunk: p.Chunk, Queue: p.Queue, Offset: p.Offset,
		Packet: "LIN_DMA", Src: hex(p.Src), Dst: hex(p.Dst), Size: p.Size, Memset: p.Memset}
	if p.SrcHost != 0 {
		j.SrcHost = hex(p.SrcHost)
	}
	if p.DstHost != 0 {
		j.DstHost = hex(p.DstHost)
	}
	return j
}
