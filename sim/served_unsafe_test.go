package sim

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/packet"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The served process of these tests is a child: the test binary run again
// with GAUDI_SIM_TEST_CHILD set, which maps memory, prints its address and
// then answers commands on stdin (see TestMain's child).

const servedChildEnv = "GAUDI_SIM_TEST_CHILD"

// childMem is the child's mapping, reached by address only.
type childMem struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	addr uint64
	size uint64
}

func init() {
	if os.Getenv(servedChildEnv) != "" {
		servedChild()
	}
}

// servedChild is the child's main: map GAUDI_SIM_TEST_CHILD bytes, fill
// them with fillRandom(seed 7), print the address, then for each line
// "sum OFF N" print a checksum of the bytes, for "unmap N" unmap the
// first N bytes, and exit at the end of its input.
func servedChild() {
	n, _ := strconv.ParseUint(os.Getenv(servedChildEnv), 10, 64)
	b, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fillRandom(b, 7)
	fmt.Printf("%d\n", uintptr(unsafe.Pointer(&b[0])))
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "sum":
			off, _ := strconv.Atoi(f[1])
			k, _ := strconv.Atoi(f[2])
			fmt.Printf("%d\n", checksum(b[off:off+k]))
		case len(f) == 1 && f[0] == "exec":
			// Become a new image of this program: same pid, a new
			// address space, which maps and prints again.
			exe, err := os.Executable()
			if err != nil {
				fmt.Println(err)
				continue
			}
			fmt.Println(unix.Exec(exe, os.Args, os.Environ()))
		case len(f) == 2 && f[0] == "unmap":
			k, _ := strconv.Atoi(f[1])
			if err := unix.MunmapPtr(unsafe.Pointer(&b[0]), uintptr(k)); err != nil {
				fmt.Println(err)
				continue
			}
			fmt.Println("ok")
		}
	}
	os.Exit(0)
}

func checksum(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

func startChild(t *testing.T, size uint64) *childMem {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), servedChildEnv+"="+strconv.FormatUint(size, 10))
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &childMem{cmd: cmd, in: in, out: bufio.NewReader(stdout), size: size}
	t.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	c.readAddr(t)
	return c
}

// readAddr reads the address of the child's mapping, which it prints when
// it starts.
func (c *childMem) readAddr(t *testing.T) {
	t.Helper()
	line, err := c.out.ReadString('\n')
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	c.addr, err = strconv.ParseUint(strings.TrimSpace(line), 10, 64)
	if err != nil {
		t.Fatalf("child said %q", line)
	}
}

func (c *childMem) ask(t *testing.T, format string, args ...any) string {
	t.Helper()
	fmt.Fprintf(c.in, format+"\n", args...)
	line, err := c.out.ReadString('\n')
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	return strings.TrimSpace(line)
}

func (c *childMem) sum(t *testing.T, off, n int) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(c.ask(t, "sum %d %d", off, n), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestServedDMA runs INFO, host MAP, CB mmap and LIN_DMA both ways for a
// file served to another process: the bytes move between the child's
// memory and the device, the INFO answer lands in the child.
func TestServedDMA(t *testing.T) {
	for _, asic := range []ASIC{Gaudi2, Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			const size = 4 << 20
			c := startChild(t, 2*size+8192) // [0, 4096) INFO, two halves, a page of chunks
			s := newTestSystem(t, Default(asic, 1))
			t.Cleanup(func() { s.Close() })
			f, err := s.Device(0).OpenFor(c.cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			if f.MmapFile() < 0 || f.Pid() != c.cmd.Process.Pid {
				t.Fatalf("MmapFile %d, Pid %d", f.MmapFile(), f.Pid())
			}

			// INFO writes HW_IP_INFO into the child at its address.
			// The argument is in memory the garbage collector does not scan
			// (as a server's request buffer is): its pointer field holds an
			// address of the child.
			words := make([]uint64, unsafe.Sizeof(hl.InfoArgs{})/8)
			a := (*hl.InfoArgs)(unsafe.Pointer(&words[0]))
			a.Op = hl.HL_INFO_HW_IP_INFO
			words[0] = c.addr // ReturnPointer
			a.ReturnSize = uint32(unsafe.Sizeof(hl.InfoHWIPInfo{}))
			if err := f.Ioctl(hl.DRM_IOCTL_HL_INFO, unsafe.Pointer(a)); err != nil {
				t.Fatal(err)
			}
			want := f.dev.hwIPInfo()
			if got := c.sum(t, 0, int(a.ReturnSize)); got != checksum(structBytes(&want)) {
				t.Fatal("INFO answer not in the child's memory")
			}

			// The child's bytes [4096, 4096+size) go to the device and
			// back to [4096+size, ...).
			va, err := memMapHost(f, c.addr, c.size, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			srcSum := c.sum(t, 4096, size)
			dram := deviceBuf(t, f, size)
			cb := build(t, f.dev.hardware().format(), func(b *packet.Builder) {
				b.LinDMA(packet.LinDMA{Src: va + 4096, Dst: dram, Size: size})
				b.LinDMA(packet.LinDMA{Header: packet.Header{EngineBarrier: true}, Src: dram, Dst: va + 4096 + size, Size: size})
				b.LinDMA(packet.LinDMA{Header: packet.Header{EngineBarrier: true}, Memset: true, Src: 0x0102030405060708, Dst: va, Size: 16})
			})
			// A CB whose memory is the served file's memory file: a kernel
			// CB on Gaudi, one mapped into the device MMU on Gaudi2, whose
			// device address a user CB chunk names.
			flags := uint32(0)
			if asic == Gaudi2 {
				flags = hl.HL_CB_FLAGS_MAP
			}
			h, err := cbCreate(f, uint32(len(cb)), flags)
			if err != nil {
				t.Fatal(err)
			}
			m, err := f.Mmap(int64(h), 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Munmap(m) })
			copy(m, cb)
			got := make([]byte, len(cb))
			if _, err := unix.Pread(f.MmapFile(), got, int64(MmapFileOffset(h))); err != nil || !bytes.Equal(got, cb) {
				t.Fatalf("CB not in the memory file at its handle: %v", err)
			}
			ch := chunk{queue: 0, handle: h, size: uint32(len(cb))}
			if asic == Gaudi2 {
				info, err := cbInfo(f, h, hl.HL_CB_FLAGS_GET_DEVICE_VA)
				if err != nil {
					t.Fatal(err)
				}
				ch = chunk{queue: 0, handle: info.Out().DeviceVA(), size: uint32(len(cb)), user: true}
			}
			// The chunk array is in the child's last page, as the CS
			// argument's pointer is the child's.
			chs := chunksOf([]chunk{ch})
			if err := f.copyOut(c.addr+2*size+4096, sliceBytes(chs)); err != nil {
				t.Fatal(err)
			}
			run := func() uint64 {
				t.Helper()
				var cs hl.CSArgs
				setChunksExecute(cs.In(), c.addr+2*size+4096)
				cs.In().NumChunksExecute = 1
				if err := csSubmit(f, &cs); err != nil {
					t.Fatal(err)
				}
				return cs.Out().Seq()
			}
			mustComplete(t, f, run())
			if got := c.sum(t, 4096+size, size); got != srcSum {
				t.Fatal("device to host copy did not reach the child")
			}
			var pat [16]byte
			binary.LittleEndian.PutUint64(pat[:], 0x0102030405060708)
			binary.LittleEndian.PutUint64(pat[8:], 0x0102030405060708)
			if c.sum(t, 0, 16) != checksum(pat[:]) {
				t.Fatal("memset did not reach the child")
			}

			// A bad pointer in the child is EFAULT.
			words[0] = 8
			if err := f.Ioctl(hl.DRM_IOCTL_HL_INFO, unsafe.Pointer(a)); !errors.Is(err, unix.EFAULT) {
				t.Fatalf("INFO to a bad address: %v, want EFAULT", err)
			}
			// MAP checks the child's maps: a page it does not map is EFAULT.
			if _, err := memMapHost(f, 1<<20, 4096, 0, 0); !errors.Is(err, unix.EFAULT) {
				t.Fatalf("MAP of memory the child does not map: %v, want EFAULT", err)
			}

			// The child unmaps: the next transfer counts host faults and
			// the CS still completes, as with pinned pages gone.
			if c.ask(t, "unmap %d", 2*size+4096) != "ok" {
				t.Fatal("child did not unmap")
			}
			before := f.dev.HostFaults().Count
			f.dev.ExpectViolations(ViolationHostReplaced) // strict mode reports the gone pages too
			var cs hl.CSArgs
			setChunksExecute(cs.In(), c.addr)
			cs.In().NumChunksExecute = 1
			if err := csSubmit(f, &cs); !errors.Is(err, unix.EFAULT) {
				t.Fatalf("CS with its chunks in unmapped memory: %v, want EFAULT", err)
			}
			mustComplete(t, f, run())
			if f.dev.HostFaults().Count == before {
				t.Fatal("no host faults counted for unmapped memory")
			}
		})
	}
}

// TestMmapFileOffset checks the timestamp buffer alias.
func TestMmapFileOffset(t *testing.T) {
	cb := uint64(7|mmapTypeCB) << 12
	if MmapFileOffset(cb) != cb {
		t.Fatal("CB offset moved")
	}
	ts := uint64(7|mmapTypeTS) << 12
	got := MmapFileOffset(ts)
	if got >= 1<<63 || got&(1<<62) == 0 || got&^(1<<62) != 7<<12 {
		t.Fatalf("TS offset %#x", got)
	}
}

// TestServedPQM runs a Gaudi3 PDMA channel for a file served to another
// process: the channel's registers are the served file's memory file at the
// block handle (what the client maps through the node), and the channel
// reads its ring and copies between buffers in the child's memory.
func TestServedPQM(t *testing.T) {
	const (
		ringOff = 0
		doneOff = 4096
		srcOff  = 8192
		n       = 64 << 10
		dstOff  = srcOff + n
	)
	c := startChild(t, dstOff+n)
	s, f, va := servedFile(t, c, Gaudi3)
	const ch = 3
	win := servedBlock(t, f, g3.PDMAChannelBlock(ch))
	set := func(off uint64, v uint32) { reg32(win, off).Store(v) }
	set(g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG, g3.PQM_DESC_SUBMIT_MODE_PI_CI_IN_MEM)
	set(g3.PDMA_CH_A_PQM_CH_MSQ_SIZE, 4096-1)
	set(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_L, uint32(va+ringOff))
	set(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_H, uint32((va+ringOff)>>32))
	// The channel's completion queue counts in the child's memory.
	set(g3.PDMA_CH_A_ECMPLTN_Q_BASE_LO, uint32(va+doneOff))
	set(g3.PDMA_CH_A_ECMPLTN_Q_BASE_HI, uint32((va+doneOff)>>32))
	set(g3.PDMA_CH_A_ECMPLTN_Q_BASE_SIZE, g3.PQM_ECMPLTN_Q_COUNTER_SIZE)
	set(g3.PDMA_CH_A_ECMPLTN_Q_LBW_ADDR_L, uint32(gaudi3MSIXDoorbell&0xFFFFFFFF))
	set(g3.PDMA_CH_A_ECMPLTN_Q_LBW_ADDR_H, uint32(gaudi3MSIXDoorbell>>32))
	set(g3.PDMA_CH_A_ECMPLTN_Q_LBW_PAYLD, firstUserIRQ)
	set(g3.PDMA_CH_A_ECMPLTN_Q_CH_CFG, cqOn)
	ring := pqmPackets(t, func(b *packet.Builder) {
		b.LinPDMA(packet.LinPDMA{Src: va + srcOff, Dst: va + dstOff, Size: n / 2,
			WriteCompletion: true, CompletionAddr: va + doneOff + 8, CompletionData: 0x5eed})
		b.LinPDMA(packet.LinPDMA{Src: va + srcOff + n/2, Dst: va + dstOff + n/2, Size: n / 2, AdvanceCompletionQueue: true})
		// A sync object of HDCORE 1, which the client maps too.
		b.MsgLong(packet.MsgLong{Addr: g3.SyncMngrObjsBlock(1, 0) + g3.SOBOffset(6), Value: 9})
		b.MsgLong(packet.MsgLong{Addr: g3.SyncMngrObjsBlock(1, 0) + g3.SOBOffset(6), Value: g3.SOB_OBJ_INC_BY_ONE})
	})
	objs := servedBlock(t, f, g3.SyncMngrObjsBlock(1, 0))
	if err := f.copyOut(c.addr+ringOff, ring); err != nil {
		t.Fatal(err)
	}
	srcSum := c.sum(t, srcOff, n)
	if c.sum(t, dstOff, n) == srcSum {
		t.Fatal("destination already holds the source")
	}
	set(g3.PDMA_CH_A_PQM_CH_MSQ_PI, uint32(len(ring)))
	deadline := time.Now().Add(10 * time.Second)
	for reg32(win, g3.PDMA_CH_A_PQM_CH_MSQ_CI).Load() != uint32(len(ring)) {
		if time.Now().After(deadline) {
			t.Fatalf("MSQ_CI %d, want %d (channel errors %d)", reg32(win, g3.PDMA_CH_A_PQM_CH_MSQ_CI).Load(), len(ring), f.dev.PQMErrors())
		}
		time.Sleep(100 * time.Microsecond)
	}
	if got := c.sum(t, dstOff, n); got != srcSum {
		t.Error("LIN_PDMA did not copy in the child's memory")
	}
	var word [12]byte
	binary.LittleEndian.PutUint64(word[:], 1)
	binary.LittleEndian.PutUint32(word[8:], 0x5eed)
	if c.sum(t, doneOff, 12) != checksum(word[:]) {
		t.Error("completion queue counter and write completion not in the child's memory")
	}
	if e := f.dev.PQMErrors(); e != 0 {
		t.Errorf("%d channel errors", e)
	}
	if got := reg32(objs, g3.SOBOffset(6)).Load(); got != 10 {
		t.Errorf("the client's mapping reads SOB 6 = %d, want 10", got)
	}
	// The release stops the channel and gives the registers back to the
	// simulator.
	f.Close()
	st := s.Device(0).hardware().pqm()
	st.mu.Lock()
	bound, running := st.bound, st.chans[ch].running
	st.mu.Unlock()
	if bound != nil || running {
		t.Errorf("after release: bound %v, channel running %v", bound != nil, running)
	}
	sm := s.Device(0).hardware().sm
	sm.mu.Lock()
	smBound := sm.mem.bound
	sm.mu.Unlock()
	if smBound != nil || sm.sob(2, 6) != 10 {
		t.Errorf("after release: sync managers bound %v, SOB 6 = %d", smBound != nil, sm.sob(2, 6))
	}
}

// TestServedExec binds a served file to the address space its process had
// when the file was opened: once that process execs (same pid, a new
// program image that never opened the device, as a setuid program would
// be), a write through the file fails and the new image's memory is
// untouched, however the address is chosen; the same after it exits.
func TestServedExec(t *testing.T) {
	const n = 4096
	c := startChild(t, n)
	s := newTestSystem(t, Default(Gaudi2, 1))
	t.Cleanup(func() { s.Close() })
	f, err := s.Device(0).OpenFor(c.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	evil := bytes.Repeat([]byte{0xee}, n)
	if err := f.copyOut(c.addr, evil[:8]); err != nil {
		t.Fatalf("write before exec: %v", err)
	}
	execChild(t, c)
	want := c.sum(t, 0, n)
	err = f.copyOut(c.addr, evil)
	if got := c.sum(t, 0, n); got != want {
		t.Fatalf("the served file wrote into the new program image after exec (copyOut: %v)", err)
	}
	if !errors.Is(err, unix.EFAULT) {
		t.Fatalf("write after exec: %v, want EFAULT", err)
	}
	if !f.AddressSpaceGone() {
		t.Fatal("AddressSpaceGone false after exec")
	}
	c.in.Close()
	c.cmd.Wait()
	if err := f.copyOut(c.addr, evil[:8]); !errors.Is(err, unix.EFAULT) {
		t.Fatalf("write after exit: %v, want EFAULT", err)
	}
}
