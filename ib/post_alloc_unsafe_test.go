package ib

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
	"testing"
	"unsafe"
)

// ringQP returns a QP whose rings are ringFile's anonymous memory laid out
// as rxe lays out its queues, and a function that plays the kernel
// consuming everything posted so far.
func ringQP(tb testing.TB, caps QPCaps) (*QP, func()) {
	tb.Helper()
	f := &ringFile{log2: 10, mask: 15}
	sq, rq, err := rxeProvider{}.newQPRings(f, append(mminfo(1<<16), mminfo(1<<16)...), 7, caps)
	if err != nil {
		tb.Fatal(err)
	}
	qp := &QP{pd: &PD{c: &Context{dev: Device{Name: "rxe-test"}}}, caps: caps, send: sq, recv: rq}
	qp.stageBuffers()
	tb.Cleanup(func() { sq.unmap(); rq.unmap() })
	consume := func() {
		for _, m := range f.maps {
			p := atomic.LoadUint32((*uint32)(unsafe.Pointer(&m[rxeProdOff])))
			atomic.StoreUint32((*uint32)(unsafe.Pointer(&m[rxeConsOff])), p)
		}
	}
	return qp, consume
}

var ringCaps = QPCaps{MaxSendWR: 15, MaxRecvWR: 15, MaxSendSGE: 4, MaxRecvSGE: 4, MaxInline: 64}

// postWrite posts one signaled RDMA WRITE built where it is posted, as a
// caller that does not keep its work requests around writes it.
//
//go:noinline
func postWrite(qp *QP, addr uint64) error {
	_, err := qp.PostSend(SendWR{ID: addr, Op: OpRDMAWrite, Flags: SendSignaled, RemoteAddr: addr, RKey: 9,
		SG: []SGE{{Addr: addr, Length: 4096, LKey: 3}}})
	return err
}

//go:noinline
func postRecv(qp *QP, addr uint64) error {
	_, err := qp.PostRecv(RecvWR{ID: addr, SG: []SGE{{Addr: addr, Length: 4096, LKey: 3}}})
	return err
}

// TestPostAllocatesNothing: posting a work request built in place (a
// literal with its own SGE slice, not a reused one) allocates nothing.
func TestPostAllocatesNothing(t *testing.T) {
	qp, consume := ringQP(t, ringCaps)
	for _, c := range []struct {
		name string
		post func(*QP, uint64) error
	}{{"PostSend", postWrite}, {"PostRecv", postRecv}} {
		n := testing.AllocsPerRun(100, func() {
			if err := c.post(qp, 0x1000); err != nil {
				t.Fatal(err)
			}
			consume()
		})
		if n != 0 {
			t.Errorf("%s: %v allocations per work request, want 0", c.name, n)
		}
	}
}

// BenchmarkPostSendRing measures PostSend of one RDMA WRITE built in
// place, doorbell included (the fake's write), on rxe-shaped rings.
func BenchmarkPostSendRing(b *testing.B) {
	qp, consume := ringQP(b, ringCaps)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := postWrite(qp, uint64(i)); err != nil {
			b.Fatal(err)
		}
		consume()
	}
}

// TestPostInline checks the WQE of an inline RDMA WRITE: the bytes at
// rxe_dma_info's inline_data (208), length and resid their count, num_sge
// 0, the INLINE flag set; and that the caller's buffer is not kept.
func TestPostInline(t *testing.T) {
	f := &ringFile{log2: 10, mask: 15}
	sq, rq, err := rxeProvider{}.newQPRings(f, append(mminfo(1<<16), mminfo(1<<16)...), 7, ringCaps)
	if err != nil {
		t.Fatal(err)
	}
	defer rq.unmap()
	defer sq.unmap()
	qp := &QP{pd: &PD{c: &Context{dev: Device{Name: "rxe-test"}}}, caps: ringCaps, send: sq, recv: rq}
	qp.stageBuffers()
	data := []byte("eight by")
	if n, err := qp.PostSend(SendWR{ID: 5, Op: OpRDMAWrite, Flags: SendInline | SendSignaled, RemoteAddr: 0xabc, RKey: 4, Inline: data}); n != 1 || err != nil {
		t.Fatalf("PostSend inline: %d, %v", n, err)
	}
	copy(data, "XXXXXXXX") // the request was copied: this changes nothing posted
	w := f.maps[1][rxeDataOff:]
	le := binary.LittleEndian
	got := struct {
		Flags, Len, Resid, NumSGE uint32
		Data                      string
	}{le.Uint32(w[rxeWQEFlags:]), le.Uint32(w[rxeWQELength:]), le.Uint32(w[rxeWQEResid:]), le.Uint32(w[rxeWQENumSGE:]), string(w[rxeSendWQESize : rxeSendWQESize+8])}
	want := got
	want.Flags, want.Len, want.Resid, want.NumSGE, want.Data = uint32(SendInline|SendSignaled), 8, 8, 0, "eight by"
	if got != want {
		t.Fatalf("inline WQE %+v, want %+v", got, want)
	}
	if _, err := qp.PostSend(SendWR{ID: 6, Op: OpSend, Flags: SendInline, Inline: make([]byte, 65)}); !errors.Is(err, ErrBadWorkRequest) {
		t.Fatalf("65 inline bytes into MaxInline 64: %v, want ErrBadWorkRequest", err)
	}
}
