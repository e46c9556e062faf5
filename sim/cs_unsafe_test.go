package sim

import (
	"bytes"
	"encoding/binary"
	"math"
	"sync"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Helpers issuing CB, CS and WAIT_CS requests the way hl-thunk does.

// escaped keeps what addrFor was given on the heap: memory the simulator
// reads or writes through an address in an ioctl argument must not be a
// stack value the compiler believes nobody else touches.
var escaped []any

// addrFor returns p as a user address for an ioctl argument.
func addrFor[T any](p *T) uint64 {
	escaped = append(escaped[:0], p)
	return uint64(uintptr(unsafe.Pointer(p)))
}

// infoInto runs INFO op into v.
func infoInto[T any](t *testing.T, f *File, op uint32, v *T) error {
	t.Helper()
	escaped = append(escaped[:0], v)
	return info(f, op, structBytes(v))
}

func cbIoctl(f *File, a *hl.CBArgs) error {
	return f.Ioctl(hl.DRM_IOCTL_HL_CB, unsafe.Pointer(a))
}

func cbCreate(f *File, size, flags uint32) (uint64, error) {
	var a hl.CBArgs
	a.In().Op = hl.HL_CB_OP_CREATE
	a.In().CBSize = size
	a.In().Flags = flags
	a.In().CBHandle = 0xdead // the driver clears the whole argument
	err := cbIoctl(f, &a)
	return a.Out().CBHandle(), err
}

func cbDestroy(f *File, h uint64) error {
	var a hl.CBArgs
	a.In().Op = hl.HL_CB_OP_DESTROY
	a.In().CBHandle = h
	return cbIoctl(f, &a)
}

func cbInfo(f *File, h uint64, flags uint32) (hl.CBArgs, error) {
	var a hl.CBArgs
	a.In().Op = hl.HL_CB_OP_INFO
	a.In().CBHandle = h
	a.In().Flags = flags
	err := cbIoctl(f, &a)
	return a, err
}

// kernelCB creates a CB of size bytes, maps it and copies b into it.
func kernelCB(t *testing.T, f *File, size uint32, b []byte) uint64 {
	t.Helper()
	h, err := cbCreate(f, size, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := f.Mmap(int64(h), int((uint64(max(size, 4096))+4095)&^4095), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	copy(m, b)
	// Unmapped at once: a mapping holds the file, which a test may close
	// and reopen (hl_device_release runs with the last reference).
	if err := f.Munmap(m); err != nil {
		t.Fatal(err)
	}
	return h
}

type chunk struct {
	queue  uint32
	handle uint64
	size   uint32
	user   bool
}

func chunksOf(cs []chunk) []hl.CSChunk {
	out := make([]hl.CSChunk, len(cs))
	for i, c := range cs {
		out[i].SetCBHandle(c.handle)
		out[i].SetCBSize(c.size)
		out[i].QueueIndex = c.queue
		if c.user {
			out[i].CSChunkFlags = hl.HL_CS_CHUNK_FLAGS_USER_ALLOC_CB
		}
	}
	return out
}

func csSubmit(f *File, a *hl.CSArgs) error {
	return f.Ioctl(hl.DRM_IOCTL_HL_CS, unsafe.Pointer(a))
}

// submit runs a default CS of chunks and returns its sequence number.
func submit(f *File, chs []hl.CSChunk, flags, timeout uint32) (uint64, hl.CSArgs, error) {
	var a hl.CSArgs
	if len(chs) > 0 {
		setChunksExecute(a.In(), addrFor(&chs[0]))
	}
	a.In().NumChunksExecute = uint32(len(chs))
	a.In().CSFlags = flags
	a.In().Timeout = timeout
	err := csSubmit(f, &a)
	return a.Out().Seq(), a, err
}

func waitCS(f *File, seq, us uint64) (hl.WaitCSOut, error) {
	var a hl.WaitCSArgs
	a.In().SetSeq(seq)
	a.In().SetTimeoutUs(us)
	err := f.Ioctl(hl.DRM_IOCTL_HL_WAIT_CS, unsafe.Pointer(&a))
	return *a.Out(), err
}

// mustComplete waits up to 10 s for seq and fails unless it completed.
func mustComplete(t *testing.T, f *File, seq uint64) hl.WaitCSOut {
	t.Helper()
	out, err := waitCS(f, seq, 10_000_000)
	if err != nil || out.Status != hl.HL_WAIT_CS_STATUS_COMPLETED {
		t.Fatalf("wait %d: %v, status %d", seq, err, out.Status)
	}
	return out
}

// hostBufs are the host buffers of each open file, unmapped only after
// the file closed: memory mapped into the device must stay mapped while
// the engines may reach it.
var (
	hostBufsMu sync.Mutex
	hostBufs   = map[*File][][]byte{}
)

// openSim opens a compute file whose cleanup closes the file before it
// unmaps the file's host buffers.
func openSim(t *testing.T, asic ASIC) (*System, *Device, *File) {
	t.Helper()
	return openSimMode(t, asic, StrictAuto)
}

// openSimMode is openSim with strict mode set.
func openSimMode(t *testing.T, asic ASIC, mode StrictMode) (*System, *Device, *File) {
	t.Helper()
	s, d, f := openComputeMode(t, asic, mode)
	t.Cleanup(func() { closeSim(f) })
	return s, d, f
}

func closeSim(f *File) {
	f.Close()
	hostBufsMu.Lock()
	bufs := hostBufs[f]
	delete(hostBufs, f)
	hostBufsMu.Unlock()
	for _, b := range bufs {
		unix.Munmap(b)
	}
}

// hostMem maps n bytes of host memory into the device and returns both.
func hostMem(t *testing.T, f *File, n uint64) ([]byte, uint64) {
	t.Helper()
	b, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		t.Fatal(err)
	}
	hostBufsMu.Lock()
	hostBufs[f] = append(hostBufs[f], b)
	hostBufsMu.Unlock()
	va, err := memMapHost(f, addrOf(b), n, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b, va
}

// userCB puts a command buffer in mapped host memory (Gaudi2 and Gaudi
// internal queues) and returns its chunk.
func userCB(t *testing.T, f *File, queue uint32, b []byte) chunk {
	t.Helper()
	n := (uint64(len(b)) + 4095) &^ 4095
	mem, va := hostMem(t, f, max(n, 4096))
	copy(mem, b)
	return chunk{queue: queue, handle: va, size: uint32(len(b)), user: true}
}

// build encodes packets with a Builder.
func build(t *testing.T, fm packet.Format, fn func(b *packet.Builder)) []byte {
	t.Helper()
	b := packet.NewBuilder(fm, nil)
	fn(&b)
	if b.Err() != nil {
		t.Fatal(b.Err())
	}
	return b.Bytes()
}

func csDropCounters(t *testing.T, f *File) hl.InfoCSCounters {
	t.Helper()
	var r hl.InfoCSCounters
	if err := infoInto(t, f, hl.HL_INFO_CS_COUNTERS, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCBCreateRules(t *testing.T) {
	for _, asic := range []ASIC{Gaudi2, Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			_, d, f := openSim(t, asic)
			handleOf := func(id uint64) uint64 { return (id | 0x2<<47) << 12 }
			for i, size := range []uint32{0, 1, 4095, 4096, 5000, hl.HL_MAX_CB_SIZE} {
				h, err := cbCreate(f, size, 0)
				if err != nil {
					t.Fatalf("size %d: %v", size, err)
				}
				if want := handleOf(uint64(i + 1)); h != want {
					t.Fatalf("size %d: handle %#x, want %#x", size, h, want)
				}
			}
			if h, err := cbCreate(f, hl.HL_MAX_CB_SIZE+1, 0); err != unix.EINVAL || h != 0 {
				t.Fatalf("too big: %#x, %v", h, err)
			}
			h, err := cbCreate(f, 100, hl.HL_CB_FLAGS_MAP)
			if asic == Gaudi {
				// cb_map_mem fails with EINVAL (no supports_cb_mapping),
				// but hl_mmap_mem_buf_alloc drops the code and
				// hl_cb_create returns -ENOMEM.
				if err != unix.ENOMEM || h != 0 {
					t.Fatalf("MAP on Gaudi: %#x, %v", h, err)
				}
				if h, _ := cbCreate(f, 100, 0); h != handleOf(7) {
					t.Fatalf("id after a failed create: %#x", h)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				a, err := cbInfo(f, h, hl.HL_CB_FLAGS_GET_DEVICE_VA)
				if err != nil || a.Out().DeviceVA() != f.ctx.cbPool {
					t.Fatalf("device VA %#x (pool %#x): %v", a.Out().DeviceVA(), f.ctx.cbPool, err)
				}
				h2, _ := cbCreate(f, 5000, hl.HL_CB_FLAGS_MAP)
				if a, _ := cbInfo(f, h2, hl.HL_CB_FLAGS_GET_DEVICE_VA); a.Out().DeviceVA() != f.ctx.cbPool+4096 {
					t.Fatalf("second mapped CB at %#x", a.Out().DeviceVA())
				}
			}
			first := handleOf(1)
			if _, err := cbInfo(f, first, hl.HL_CB_FLAGS_GET_DEVICE_VA); err != unix.EINVAL {
				t.Fatalf("device VA of an unmapped CB: %v", err)
			}
			if a, err := cbInfo(f, first, 0); err != nil || a.Out().UsageCnt() != 0 {
				t.Fatalf("usage: %d, %v", a.Out().UsageCnt(), err)
			}
			if err := cbDestroy(f, first); err != nil {
				t.Fatal(err)
			}
			for _, h := range []uint64{first, handleOf(99), 0} {
				if err := cbDestroy(f, h); err != unix.EINVAL {
					t.Fatalf("destroy %#x: %v", h, err)
				}
				if _, err := cbInfo(f, h, 0); err != unix.EINVAL {
					t.Fatalf("info %#x: %v", h, err)
				}
			}
			if h, _ := cbCreate(f, 1, 0); h != first {
				t.Fatalf("freed id not reused: %#x", h)
			}
			var a hl.CBArgs
			a.In().Op = 3
			if err := cbIoctl(f, &a); err != unix.EINVAL {
				t.Fatalf("op 3: %v", err)
			}
			d.SetState(NeedsReset)
			if _, err := cbCreate(f, 1, 0); err != unix.EBUSY {
				t.Fatalf("not operational: %v", err)
			}
			d.SetState(Operational)
		})
	}
}

func TestCBMmap(t *testing.T) {
	_, _, f := openSim(t, Gaudi)
	rw, shared := unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED
	for _, size := range []uint32{1, 4097, 5000, 65536 + 3} {
		h, err := cbCreate(f, size, 0)
		if err != nil {
			t.Fatal(err)
		}
		aligned := (int(max(size, 4096)) + 4095) &^ 4095
		if _, err := f.Mmap(int64(h), aligned+4096, rw, shared); err != unix.EINVAL {
			t.Fatalf("size %d: long mapping: %v", size, err)
		}
		if aligned > 4096 {
			if _, err := f.Mmap(int64(h), aligned-4096, rw, shared); err != unix.EINVAL {
				t.Fatalf("size %d: short mapping: %v", size, err)
			}
		}
		m, err := f.Mmap(int64(h), aligned, rw, shared)
		if err != nil || len(m) != aligned {
			t.Fatalf("size %d: %d bytes, %v", size, len(m), err)
		}
		if _, err := f.Mmap(int64(h), aligned, rw, shared); err != unix.EINVAL {
			t.Fatalf("second mapping: %v", err)
		}
		for i := range m {
			m[i] = byte(i)
		}
		c := f.subm()
		f.mm.mu.Lock()
		same := bytes.Equal(c.cbGetLocked(h).mem[:aligned], m)
		f.mm.mu.Unlock()
		if !same {
			t.Fatal("the simulator does not see the user's writes")
		}
		// Destroyed while mapped: the CB lives on until the munmap.
		if err := cbDestroy(f, h); err != nil {
			t.Fatal(err)
		}
		if _, err := cbInfo(f, h, 0); err != nil {
			t.Fatalf("info of a destroyed, mapped CB: %v", err)
		}
		if err := cbDestroy(f, h); err != unix.EINVAL {
			t.Fatalf("second destroy: %v", err)
		}
		if err := f.Munmap(m); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Mmap(int64(h), aligned, rw, shared); err != unix.EINVAL {
			t.Fatalf("mapping a released CB: %v", err)
		}
		if _, err := cbInfo(f, h, 0); err != unix.EINVAL {
			t.Fatalf("info of a released CB: %v", err)
		}
	}
	if n := len(f.subm().cbs); n != 0 {
		t.Fatalf("%d CBs left", n)
	}
}

func TestCSNopChunks(t *testing.T) {
	_, _, f := openSim(t, Gaudi2)
	nop := build(t, packet.Gaudi2, func(b *packet.Builder) { b.Nop(packet.Nop{}) })
	ch := userCB(t, f, 0, nop)
	for n := 1; n <= 64; n++ {
		cs := make([]chunk, n)
		for i := range cs {
			cs[i] = ch
			cs[i].queue = []uint32{0, 1, 4, 8, 16, 20}[i%6]
		}
		seq, a, err := submit(f, chunksOf(cs), 0, 0)
		if err != nil || seq != uint64(n) || a.Out().Status != 0 {
			t.Fatalf("%d chunks: seq %d, status %d, %v", n, seq, a.Out().Status, err)
		}
		mustComplete(t, f, seq)
	}
}

func TestCSManyMsgLong(t *testing.T) {
	for _, asic := range []ASIC{Gaudi2, Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			_, _, f := openSim(t, asic)
			fm := f.dev.hardware().format()
			dst, va := hostMem(t, f, 2000*4)
			cb := build(t, fm, func(b *packet.Builder) {
				for i := 0; i < 2000; i++ {
					b.MsgLong(packet.MsgLong{Addr: va + uint64(i)*4, Value: uint32(i) * 3})
				}
			})
			var ch chunk
			if asic == Gaudi {
				h := kernelCB(t, f, uint32(len(cb)), cb)
				ch = chunk{queue: 0, handle: h, size: uint32(len(cb))}
			} else {
				ch = userCB(t, f, 0, cb)
			}
			seq, _, err := submit(f, chunksOf([]chunk{ch}), 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			mustComplete(t, f, seq)
			for i := 0; i < 2000; i++ {
				if v := binary.LittleEndian.Uint32(dst[i*4:]); v != uint32(i)*3 {
					t.Fatalf("word %d: %d", i, v)
				}
			}
		})
	}
}

func TestCSSequenceGoneAndTimestamps(t *testing.T) {
	_, _, f := openSim(t, Gaudi2)
	nop := build(t, packet.Gaudi2, func(b *packet.Builder) { b.Nop(packet.Nop{}) })
	chs := chunksOf([]chunk{userCB(t, f, 0, nop)})
	var stamps []int64
	for i := 1; i <= 1000; i++ {
		flags := uint32(0)
		if i <= 10 || i > 990 {
			flags = hl.HL_CS_FLAGS_TIMESTAMP
		}
		before := monotonicNow()
		seq, _, err := submit(f, chs, flags, 0)
		if err != nil || seq != uint64(i) {
			t.Fatalf("CS %d: seq %d, %v", i, seq, err)
		}
		out := mustComplete(t, f, seq)
		if flags != 0 {
			if out.Flags != hl.HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD || out.TimestampNsec < before || out.TimestampNsec > monotonicNow() {
				t.Fatalf("CS %d: flags %#x, timestamp %d", i, out.Flags, out.TimestampNsec)
			}
			stamps = append(stamps, out.TimestampNsec)
		} else if out.Flags != 0 {
			t.Fatalf("CS %d: flags %#x", i, out.Flags)
		}
	}
	for i := 1; i < len(stamps); i++ {
		if stamps[i] < stamps[i-1] {
			t.Fatal("timestamps go back")
		}
	}
	// Seq 1..10 are gone but kept in the outcome store (once), 11 is
	// gone for good, 1000-64 still has its fence.
	out, err := waitCS(f, 3, 0)
	if err != nil || out.Status != hl.HL_WAIT_CS_STATUS_COMPLETED ||
		out.Flags != hl.HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD || out.TimestampNsec != stamps[2] {
		t.Fatalf("seq 3 from the store: %+v, %v", out, err)
	}
	for _, seq := range []uint64{3, 11, 936} {
		out, err := waitCS(f, seq, 0)
		if err != nil || out.Status != hl.HL_WAIT_CS_STATUS_COMPLETED || out.Flags != hl.HL_WAIT_CS_STATUS_FLAG_GONE {
			t.Fatalf("seq %d: %+v, %v", seq, out, err)
		}
	}
	if out, err := waitCS(f, 937, 0); err != nil || out.Flags != 0 || out.Status != hl.HL_WAIT_CS_STATUS_COMPLETED {
		t.Fatalf("seq 937: %+v, %v", out, err)
	}
	for _, seq := range []uint64{1001, math.MaxUint64} {
		out, err := waitCS(f, seq, 0)
		if err != unix.EINVAL || out != (hl.WaitCSOut{}) {
			t.Fatalf("seq %d: %+v, %v", seq, out, err)
		}
	}
}

func TestCSForceRestore(t *testing.T) {
	_, _, f := openSim(t, Gaudi2)
	mem, va := hostMem(t, f, 4096)
	restore := chunksOf([]chunk{userCB(t, f, 0, build(t, packet.Gaudi2, func(b *packet.Builder) {
		b.MsgLong(packet.MsgLong{Addr: va, Value: 1})
	}))})
	exec := chunksOf([]chunk{userCB(t, f, 1, build(t, packet.Gaudi2, func(b *packet.Builder) {
		b.MsgLong(packet.MsgLong{Addr: va + 4, Value: 2})
	}))})
	var a hl.CSArgs
	setChunksRestore(a.In(), addrFor(&restore[0]))
	a.In().NumChunksRestore = 1
	setChunksExecute(a.In(), addrFor(&exec[0]))
	a.In().NumChunksExecute = 1
	a.In().CSFlags = hl.HL_CS_FLAGS_FORCE_RESTORE
	if err := csSubmit(f, &a); err != nil || a.Out().Seq() != 2 {
		t.Fatalf("%v, seq %d", err, a.Out().Seq())
	}
	mustComplete(t, f, 2)
	if binary.LittleEndian.Uint32(mem) != 1 || binary.LittleEndian.Uint32(mem[4:]) != 2 {
		t.Fatalf("memory %x", mem[:8])
	}
	// Without restore chunks FORCE_RESTORE only runs the execute chunks.
	a = hl.CSArgs{}
	setChunksExecute(a.In(), addrFor(&exec[0]))
	a.In().NumChunksExecute = 1
	a.In().CSFlags = hl.HL_CS_FLAGS_FORCE_RESTORE
	if err := csSubmit(f, &a); err != nil || a.Out().Seq() != 3 {
		t.Fatalf("%v, seq %d", err, a.Out().Seq())
	}
}
