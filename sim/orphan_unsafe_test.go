package sim

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/packet"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Tests of the abort of a served file's work once its opener's address
// space went away (orphan.go). The opener is a child (startChild); the
// test holds the file as the process the descriptor was passed to would.

// execChild makes the child run a new image of itself (same pid, a new
// address space that never opened the device) and reads the new image's
// buffer address.
func execChild(t *testing.T, c *childMem) {
	t.Helper()
	c.in.Write([]byte("exec\n"))
	c.readAddr(t)
}

// servedFile opens a one-device system's compute node for child c and
// maps the child's memory to the device at the returned address.
func servedFile(t *testing.T, c *childMem, asic ASIC) (*System, *File, uint64) {
	t.Helper()
	s := newTestSystem(t, Default(asic, 1))
	t.Cleanup(func() { s.Close() })
	f, err := s.Device(0).OpenFor(c.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	va, err := memMapHost(f, c.addr, c.size, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s, f, va
}

// servedBlock maps the HW block at addr (MAP_BLOCK) for a served file and
// returns the client's mapping of the node at its handle: the memory
// file's.
func servedBlock(t *testing.T, f *File, addr uint64) []byte {
	t.Helper()
	h, size, err := mapBlock(f, addr)
	if err != nil {
		t.Fatal(err)
	}
	win, err := unix.Mmap(f.MmapFile(), int64(MmapFileOffset(h)), int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(win) })
	return win
}

// TestServedExecAbortsChannel is issue 23's reproduction on a Gaudi3 PDMA
// channel: the opener stages a channel (a FENCE, then a LIN_PDMA from
// device memory to its host memory, with a completion), execs a new image,
// and a holder of the file releases the fence through its own mapping of
// the channel block, no ioctl. Nothing may land in the new image, and the
// LIN_PDMA must not be done: MSQ_CI stays before it, and the file reports
// the channel aborted.
func TestServedExecAbortsChannel(t *testing.T) {
	const (
		page   = 4096
		ringAt = 0        // the child's bytes of the staged packets
		xAt    = page     // X: where the staged LIN_PDMA writes
		setAt  = 2 * page // the setup ring
		ch     = 5
	)
	c := startChild(t, 3*page)
	s, f, hva := servedFile(t, c, Gaudi3)
	dva := deviceBuf(t, f, 4*page)                    // [0, page) the staged ring, [page, 2 page) the device bytes, then the completion
	win := servedBlock(t, f, g3.PDMAChannelBlock(ch)) // the holder's mapping
	reg := func(off uint64) *atomic.Uint32 { return reg32(win, off) }

	staged := pqmPackets(t, func(b *packet.Builder) {
		b.Gaudi3Fence(packet.Gaudi3Fence{ID: 0, Target: 1, Dec: 1})
		b.LinPDMA(packet.LinPDMA{Src: dva + page, Dst: hva + xAt, Size: page,
			WriteCompletion: true, CompletionAddr: dva + 2*page, CompletionData: 0x600d})
	})
	// The setup, from a ring in the child's memory: the staged packets
	// into device memory (so the staged ring does not depend on the
	// opener's memory), and the device bytes the LIN_PDMA would copy.
	setup := pqmPackets(t, func(b *packet.Builder) {
		b.LinPDMA(packet.LinPDMA{Src: hva + ringAt, Dst: dva, Size: uint32(len(staged))})
		b.LinPDMA(packet.LinPDMA{Src: 0xeeeeeeeeeeeeeeee, Dst: dva + page, Size: page, Memset: true})
		b.LinPDMA(packet.LinPDMA{Src: 0, Dst: dva + 2*page, Size: 8, Memset: true}) // the completion word
	})
	if len(setup) == len(staged) {
		t.Fatal("setup and staged rings of one length: a reset could not tell their producer counts apart")
	}
	if err := f.copyOut(c.addr+ringAt, staged); err != nil {
		t.Fatal(err)
	}
	if err := f.copyOut(c.addr+setAt, setup); err != nil {
		t.Fatal(err)
	}
	program := func(base uint64, pi int) {
		t.Helper()
		reg(g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG).Store(g3.PQM_DESC_SUBMIT_MODE_PI_CI_IN_MEM)
		waitFor(t, func() bool {
			return reg(g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG).Load()&pqmCfgSeen != 0
		})
		reg(g3.PDMA_CH_A_PQM_CH_MSQ_SIZE).Store(page - 1)
		reg(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_L).Store(uint32(base))
		reg(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_H).Store(uint32(base >> 32))
		reg(g3.PDMA_CH_A_PQM_CH_MSQ_PI).Store(uint32(pi))
	}
	ci := reg(g3.PDMA_CH_A_PQM_CH_MSQ_CI)
	program(hva+setAt, len(setup))
	waitFor(t, func() bool { return ci.Load() == uint32(len(setup)) })
	program(dva, len(staged))

	execChild(t, c)
	image := c.sum(t, 0, 3*page) // the new image's buffer, wherever it is

	// The holder releases the fence.
	reg(g3.PDMA_CH_A_PQM_CH_FENCE_INC_0).Store(1)
	st := s.Device(0).hardware().pqm()
	running := func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.chans[ch].running
	}
	// Either the staged work completes or the channel stops.
	deadline := time.Now().Add(time.Minute)
	for ci.Load() == 0 && running() {
		if time.Now().After(deadline) {
			t.Fatalf("a minute after the fence was released: MSQ_CI %d, channel still running", ci.Load())
		}
		time.Sleep(time.Millisecond)
	}
	if got := c.sum(t, 0, 3*page); got != image {
		t.Fatal("the staged LIN_PDMA wrote into the new program image")
	}
	if got := ci.Load(); got != 0 {
		t.Fatalf("the staged work ran after its opener's exec: MSQ_CI %d of %d (completed, not aborted)", got, len(staged))
	}
	if !f.AddressSpaceGone() {
		t.Fatal("AddressSpaceGone false after exec")
	}
	if css, chans := f.AbortedWork(); chans != 1 || css != 0 {
		t.Fatalf("AbortedWork: %d CSs, %d channels; want 0, 1", css, chans)
	}
	// The channel stays stopped: a doorbell of the holder runs nothing.
	reg(g3.PDMA_CH_A_PQM_CH_FENCE_INC_0).Store(1)
	reg(g3.PDMA_CH_A_PQM_CH_MSQ_PI).Store(uint32(2 * len(staged)))
	if running() || ci.Load() != 0 || reg(g3.PDMA_CH_A_PQM_CH_FENCE_INC_0).Load() != 1 {
		t.Fatalf("after the abort: running %v, MSQ_CI %d, FENCE_INC_0 %d (taken)", running(), ci.Load(), reg(g3.PDMA_CH_A_PQM_CH_FENCE_INC_0).Load())
	}
	// The release clears the channel for the next user.
	f.Close()
	st.mu.Lock()
	c5 := st.chans[ch]
	clean := c5.abandoned == nil && !c5.halted && c5.ci == 0 && st.bound == nil
	st.mu.Unlock()
	if !clean {
		t.Fatal("the release left the aborted channel's state")
	}
}

// TestServedExecAbortsCS: a CS stalled on a fence when its opener execs
// is aborted, not left in flight: its wait answers it completed with an
// error (EIO, aborted), and its LIN_DMA to the opener's memory never runs.
func TestServedExecAbortsCS(t *testing.T) {
	for _, exit := range []bool{false, true} {
		name := "exec"
		if exit {
			name = "exit"
		}
		t.Run(name, func(t *testing.T) {
			const page = 4096
			c := startChild(t, 2*page)
			s, f, va := servedFile(t, c, Gaudi2)
			dram := deviceBuf(t, f, page)
			const sob, mon = 400, 280
			cb := fenceWaitCB(t, f, 0, sob, mon, func(b *packet.Builder) {
				b.LinDMA(packet.LinDMA{Src: dram, Dst: va, Size: page})
			})
			h, err := cbCreate(f, uint32(len(cb)), hl.HL_CB_FLAGS_MAP)
			if err != nil {
				t.Fatal(err)
			}
			m, err := f.Mmap(int64(h), page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			if err != nil {
				t.Fatal(err)
			}
			unmapped := false
			t.Cleanup(func() {
				if !unmapped {
					f.Munmap(m)
				}
			})
			copy(m, cb)
			info, err := cbInfo(f, h, hl.HL_CB_FLAGS_GET_DEVICE_VA)
			if err != nil {
				t.Fatal(err)
			}
			chs := chunksOf([]chunk{{queue: 0, handle: info.Out().DeviceVA(), size: uint32(len(cb)), user: true}})
			if err := f.copyOut(c.addr+page, sliceBytes(chs)); err != nil {
				t.Fatal(err)
			}
			var cs hl.CSArgs
			setChunksExecute(cs.In(), c.addr+page)
			cs.In().NumChunksExecute = 1
			if err := csSubmit(f, &cs); err != nil {
				t.Fatal(err)
			}
			seq := cs.Out().Seq()
			if out, err := waitCS(f, seq, 0); err != nil || out.Status != hl.HL_WAIT_CS_STATUS_BUSY {
				t.Fatalf("the CS before the fence: %+v, %v", out, err)
			}
			if exit {
				c.in.Close()
				c.cmd.Wait()
			} else {
				execChild(t, c)
			}
			if !f.AddressSpaceGone() {
				t.Fatal("AddressSpaceGone false")
			}
			if out, err := waitCS(f, seq, 0); err != unix.EIO {
				t.Fatalf("the CS stalled on a fence when its opener's address space went away: wait %v, status %d; want EIO (aborted)", err, out.Status)
			}
			if css, chans := f.AbortedWork(); css != 1 || chans != 0 {
				t.Fatalf("AbortedWork: %d CSs, %d channels; want 1, 0", css, chans)
			}
			// The queue serves the next user: the release frees the
			// device, and a new file's CS on the same queue completes.
			f.Munmap(m)
			unmapped = true
			f.Close()
			g, err := s.Device(0).Open()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { closeSim(g) })
			mem, gva := hostMem(t, g, page)
			done := build(t, g.dev.hardware().format(), func(b *packet.Builder) {
				b.LinDMA(packet.LinDMA{Src: 0x0101010101010101, Dst: gva, Size: 8, Memset: true})
			})
			mustComplete(t, g, runCB(t, g, 0, done, 0, 0))
			if !bytes.Equal(mem[:8], bytes.Repeat([]byte{1}, 8)) {
				t.Fatalf("the next user's CS: %x", mem[:8])
			}
		})
	}
}
