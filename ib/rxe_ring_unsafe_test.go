package ib

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/rdma"
	"golang.org/x/sys/unix"
)

// ringFile is a verbsFile whose mmap hands out anonymous memory laid out
// as rxe lays out a queue (rxe_queue.c): it plays the kernel's side of
// the rings, as recorded from the driver's sources.
type ringFile struct {
	verbsFile
	log2, mask uint32
	maps       [][]byte
	writes     int
}

func (f *ringFile) mmap(off int64, size int) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, err
	}
	binary.LittleEndian.PutUint32(b[rxeLog2Off:], f.log2)
	binary.LittleEndian.PutUint32(b[rxeMaskOff:], f.mask)
	f.maps = append(f.maps, b)
	return b, nil
}

func (f *ringFile) munmap(b []byte) error { return unix.Munmap(b) }

func (f *ringFile) write(b []byte, n int) error { f.writes++; return nil }

func mminfo(size uint32) []byte {
	b := make([]byte, mminfoSize)
	binary.LittleEndian.PutUint32(b[8:], size)
	return b
}

// TestRxeQueueLayout checks the ring offsets this package uses against
// the generated struct rxe_queue_buf (proven against gcc in uapi/rdma).
func TestRxeQueueLayout(t *testing.T) {
	var q rdma.RxeQueueBuf
	for _, c := range []struct {
		name     string
		got, off uintptr
	}{
		{"log2_elem_size", rxeLog2Off, unsafe.Offsetof(q.Log2ElemSize)},
		{"index_mask", rxeMaskOff, unsafe.Offsetof(q.IndexMask)},
		{"producer_index", rxeProdOff, unsafe.Offsetof(q.ProducerIndex)},
		{"consumer_index", rxeConsOff, unsafe.Offsetof(q.ConsumerIndex)},
		{"data", rxeDataOff, unsafe.Sizeof(q)},
		{"mminfo", mminfoSize, unsafe.Sizeof(rdma.Mminfo{})},
		{"ib_uverbs_wc", ibWCSize, unsafe.Sizeof(rdma.UverbsWc{})},
	} {
		if c.got != c.off {
			t.Errorf("%s at %d, the header says %d", c.name, c.got, c.off)
		}
	}
}

// TestRxeSendQueueFullAndBad posts into a 4-slot ring (3 usable) that the
// "kernel" does not consume: the fourth post is ErrQueueFull, bad
// requests are ErrBadWorkRequest, and the producer index moves only for
// accepted ones.
func TestRxeSendQueueFullAndBad(t *testing.T) {
	f := &ringFile{log2: 8, mask: 3}
	caps := QPCaps{MaxSendWR: 3, MaxRecvWR: 3, MaxSendSGE: 2, MaxRecvSGE: 1, MaxInline: 32}
	sq, rq, err := rxeProvider{}.newQPRings(f, append(mminfo(4096), mminfo(4096)...), 7, caps)
	if err != nil {
		t.Fatal(err)
	}
	defer sq.unmap()
	defer rq.unmap()
	sge := []SGE{{Addr: 0x1000, Length: 10, LKey: 1}}
	bad := []SendWR{
		{ID: 1, Op: SendOp(9)},
		{ID: 2, Op: OpSend, Flags: SendInline, SG: sge, Inline: []byte{1}},
		{ID: 6, Op: OpRDMARead, Flags: SendInline, Inline: []byte{1}},
		{ID: 7, Op: OpSend, Flags: SendInline, Inline: make([]byte, 33)}, // MaxInline 32 (2 SGEs)
		{ID: 3, Op: OpSend, Flags: 1 << 9},
		{ID: 4, Op: OpSend, SG: []SGE{{}, {}, {}}},
		{ID: 5, Op: OpSend, SG: []SGE{{Length: 1 << 31}, {Length: 1}}},
	}
	for i := range bad {
		if err := sq.post(&bad[i]); !errors.Is(err, ErrBadWorkRequest) {
			t.Errorf("post %+v: %v, want ErrBadWorkRequest", bad[i], err)
		}
	}
	for i := range 3 {
		if err := sq.post(&SendWR{ID: uint64(i), Op: OpSend, SG: sge}); err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
	}
	if err := sq.post(&SendWR{ID: 9, Op: OpSend, SG: sge}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("fourth post into 3 slots: %v, want ErrQueueFull", err)
	}
	sqMem := f.maps[1] // the receive queue is mapped first
	if p := binary.LittleEndian.Uint32(sqMem[rxeProdOff:]); p != 3 {
		t.Fatalf("producer index %d after 3 posts", p)
	}
	// The kernel consumes one: a slot frees up.
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&sqMem[rxeConsOff])), 1)
	if err := sq.post(&SendWR{ID: 10, Op: OpSend, SG: sge}); err != nil {
		t.Fatalf("post after the kernel consumed one: %v", err)
	}
	if p := binary.LittleEndian.Uint32(sqMem[rxeProdOff:]); p != 0 {
		t.Fatalf("producer index %d, want 0 (wrapped)", p)
	}
	if got := binary.LittleEndian.Uint64(sqMem[rxeDataOff+3<<8:]); got != 10 {
		t.Fatalf("wr_id in slot 3: %d, want 10", got)
	}
	if err := sq.doorbell(); err != nil || f.writes != 1 {
		t.Fatalf("doorbell: %v, %d writes", err, f.writes)
	}
	// A hostile consumer index is masked, not trusted.
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&sqMem[rxeConsOff])), 0xfffffff2)
	if err := sq.post(&SendWR{ID: 11, Op: OpSend, SG: sge}); err != nil {
		t.Fatalf("post with consumer index 0xfffffff2 (masked 2): %v", err)
	}
}

// TestRxeMalformedRing refuses rings whose header does not describe a
// ring inside the mapping.
func TestRxeMalformedRing(t *testing.T) {
	for _, c := range []struct {
		name       string
		log2, mask uint32
		size       uint32
	}{
		{"mask not 2^n-1", 8, 5, 4096},
		{"slots past the mapping", 8, 63, 4096},
		{"slot too small", 4, 3, 4096},
		{"mask zero", 8, 0, 4096},
		{"mapping smaller than the header", 8, 3, 100},
	} {
		f := &ringFile{log2: c.log2, mask: c.mask}
		if _, err := (rxeProvider{}).newCQRing(f, mminfo(c.size)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", c.name, err)
		}
	}
}

// TestRxeCQPoll plays the kernel writing two completions and checks that
// Poll decodes them and moves the consumer index.
func TestRxeCQPoll(t *testing.T) {
	f := &ringFile{log2: 7, mask: 7}
	r, err := rxeProvider{}.newCQRing(f, mminfo(4096))
	if err != nil {
		t.Fatal(err)
	}
	defer r.unmap()
	m := f.maps[0]
	le := binary.LittleEndian
	for i := range 2 {
		s := m[rxeDataOff+i<<7:]
		le.PutUint64(s[0:], uint64(100+i))
		le.PutUint32(s[8:], uint32(WCRemAccessErr)*uint32(i))
		le.PutUint32(s[12:], uint32(WCRecvRDMAImm))
		le.PutUint32(s[20:], 4096)
		binary.BigEndian.PutUint32(s[24:], 0xcafe)
		le.PutUint32(s[28:], 17)
		le.PutUint32(s[36:], uint32(WCGRH|WCWithImm))
	}
	wcs := make([]WC, 4)
	if n := r.poll(wcs); n != 0 {
		t.Fatalf("poll of an empty CQ: %d", n)
	}
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&m[rxeProdOff])), 2)
	if n := r.poll(wcs); n != 2 {
		t.Fatalf("poll: %d, want 2", n)
	}
	want := WC{ID: 100, Opcode: WCRecvRDMAImm, ByteLen: 4096, Imm: 0xcafe, QPNum: 17, Flags: WCGRH | WCWithImm}
	if wcs[0] != want {
		t.Fatalf("completion %+v, want %+v", wcs[0], want)
	}
	if err := wcs[1].Err(); !errors.Is(err, ErrRemoteAccess) || errors.Is(err, ErrFlushed) {
		t.Fatalf("second completion's error %v, want ErrRemoteAccess", err)
	}
	if c := le.Uint32(m[rxeConsOff:]); c != 2 {
		t.Fatalf("consumer index %d, want 2", c)
	}
}
