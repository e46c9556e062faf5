package sim

import (
	"encoding/binary"
	"testing"

	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// cpQueues are the queues the command-processor tests run on: Gaudi's
// external queue DMA_0_0 (a kernel CB the driver parses with
// gaudi_validate_cb) and internal queue DMA_2_0 (a user CB the driver
// does not parse), and Gaudi2's PDMA_0_0.
var cpQueues = []struct {
	asic  ASIC
	queue uint32
}{
	{Gaudi, uint32(hl.GAUDI_QUEUE_ID_DMA_0_0)},
	{Gaudi, uint32(hl.GAUDI_QUEUE_ID_DMA_2_0)},
	{Gaudi2, uint32(hl.GAUDI2_QUEUE_ID_PDMA_0_0)},
}

// TestPredicatedPackets follows the QMAN's predicates as hl-thunk's
// test_cs_load_predicates uses them (a LOAD_AND_EXE with Dst 0 loads
// P1-P31 from a 128-byte buffer, P0 is always true, a packet whose
// predicate is false is skipped) and the driver's parser, which lets
// LOAD_AND_EXE with Dst 0 through (gaudi_validate_load_and_exe_pkt).
func TestPredicatedPackets(t *testing.T) {
	const pred = 10
	for _, c := range cpQueues {
		t.Run(c.asic.String()+"/"+queueName(c.queue), func(t *testing.T) {
			_, _, f := openSim(t, c.asic)
			fm := f.dev.hardware().format()
			host, hostVA := hostMem(t, f, 4096)
			preds := host[1024:1152] // the predicate buffer, 128 bytes
			predsVA := hostVA + 1024
			word := func(off int) uint32 { return binary.LittleEndian.Uint32(host[off:]) }

			// A predicate that was never loaded is false: the write is skipped;
			// predicate 0 is always true.
			cb := build(t, fm, func(b *packet.Builder) {
				b.MsgLong(packet.MsgLong{Addr: hostVA, Value: 0x1111, Pred: pred})
				b.MsgLong(packet.MsgLong{Addr: hostVA + 4, Value: 0x2222, Pred: 0})
			})
			runCP(t, f, c.queue, cb)
			if word(0) != 0 || word(4) != 0x2222 {
				t.Fatalf("unloaded predicate: words %#x %#x, want 0 0x2222", word(0), word(4))
			}

			for _, set := range []bool{false, true} {
				clear(preds)
				if set {
					preds[4*pred] = 1 // non-consecutive map: bit 0 of word pred
				}
				clear(host[:16])
				cb := build(t, fm, func(b *packet.Builder) {
					b.LoadAndExe(packet.LoadAndExe{Header: packet.Header{MsgBarrier: true}, Src: predsVA, Load: true})
					b.MsgLong(packet.MsgLong{Addr: hostVA, Value: 0x3333, Pred: pred})
					b.Fence(packet.Fence{ID: 0, Target: 0, Pred: pred + 1}) // false: skipped, else it would not matter
					b.MsgLong(packet.MsgLong{Addr: hostVA + 8, Value: 0x4444, Pred: pred + 1})
				})
				runCP(t, f, c.queue, cb)
				want := uint32(0)
				if set {
					want = 0x3333
				}
				if word(0) != want || word(8) != 0 {
					t.Fatalf("predicate %d loaded %v: words %#x %#x, want %#x 0", pred, set, word(0), word(8), want)
				}
			}
		})
	}
}

// TestPredicateConsecutiveMapGaudi2 follows hl-thunk's
// test_cs_load_pred_consecutive_map: on Gaudi2, LOAD_AND_EXE with PMap set
// reads predicate n from bit n%8 of byte n/8.
func TestPredicateConsecutiveMapGaudi2(t *testing.T) {
	_, _, f := openSim(t, Gaudi2)
	host, hostVA := hostMem(t, f, 4096)
	const pred = 13
	host[1024+pred/8] = 1 << (pred % 8)
	cb := build(t, packet.Gaudi2, func(b *packet.Builder) {
		b.LoadAndExe(packet.LoadAndExe{Src: hostVA + 1024, Load: true, PMap: true})
		b.MsgLong(packet.MsgLong{Addr: hostVA, Value: 0x5555, Pred: pred})
		b.MsgLong(packet.MsgLong{Addr: hostVA + 4, Value: 0x6666, Pred: pred - 1})
	})
	mustComplete(t, f, runCB(t, f, 0, cb, 0, 0))
	if got := binary.LittleEndian.Uint64(host); got != 0x5555 {
		t.Fatalf("words %#x, want 0x5555 (predicate %d only)", got, pred)
	}
}

// TestLoadScalarsAndExecute follows hl-thunk's
// test_cs_load_scalars_exe_4_rfs and _2_rfs: LOAD_AND_EXE with Dst 1
// loads the four 32-bit scalar registers R0-R3 from Src, and Exe runs
// the packet they hold: EType 0 the packet at R0 (16 bytes or 8), EType
// 1 the 8-byte packet at R2; load and execute in one packet or in two.
// The driver refuses Dst 1 on Gaudi's external queues
// (gaudi_validate_load_and_exe_pkt, EPERM).
func TestLoadScalarsAndExecute(t *testing.T) {
	for _, c := range cpQueues {
		t.Run(c.asic.String()+"/"+queueName(c.queue), func(t *testing.T) {
			_, _, f := openSim(t, c.asic)
			fm := f.dev.hardware().format()
			host, hostVA := hostMem(t, f, 4096)
			scalars := hostVA + 2048
			long := build(t, fm, func(b *packet.Builder) { b.MsgLong(packet.MsgLong{Addr: hostVA, Value: 0x7777}) })
			copy(host[2048:], long)
			// The upper registers: an 8-byte FENCE that is already met (the
			// WAIT before it adds to counter 1).
			upper := build(t, fm, func(b *packet.Builder) { b.Fence(packet.Fence{ID: 1, Target: 1, Dec: 1}) })
			if c.asic == Gaudi && c.queue < 8 {
				cb := build(t, fm, func(b *packet.Builder) {
					b.LoadAndExe(packet.LoadAndExe{Src: scalars, Dst: true, Load: true, Exe: true})
				})
				h := kernelCB(t, f, uint32(len(cb)), cb)
				if _, _, err := submit(f, chunksOf([]chunk{{queue: c.queue, handle: h, size: uint32(len(cb))}}), 0, 0); err != unix.EPERM {
					t.Fatalf("Dst set on an external queue: %v, want EPERM", err)
				}
				return
			}
			for _, separate := range []bool{false, true} {
				clear(host[:4])
				cb := build(t, fm, func(b *packet.Builder) {
					b.LoadAndExe(packet.LoadAndExe{Src: scalars, Dst: true, Load: true, Exe: !separate})
					if separate {
						b.LoadAndExe(packet.LoadAndExe{Exe: true})
					}
				})
				runCP(t, f, c.queue, cb)
				if got := binary.LittleEndian.Uint32(host); got != 0x7777 {
					t.Fatalf("separate %v: word %#x, want 0x7777 written by the loaded MSG_LONG", separate, got)
				}
			}
			// EType 1: the packet in R2-R3. A FENCE there that is not met
			// would block the stream; the WAIT makes it pass, and the
			// MSG_LONG after it shows that the stream went on.
			copy(host[2048:], make([]byte, 8))
			copy(host[2056:], upper)
			clear(host[:8])
			cb := build(t, fm, func(b *packet.Builder) {
				b.Wait(packet.Wait{ID: 1, Inc: 1})
				b.LoadAndExe(packet.LoadAndExe{Src: scalars, Dst: true, Load: true, Exe: true, EType: true})
				b.MsgLong(packet.MsgLong{Addr: hostVA + 4, Value: 0x8888})
				b.Wait(packet.Wait{ID: 1, Inc: 1})
				b.LoadAndExe(packet.LoadAndExe{Exe: true, EType: true}) // the FENCE again: consumes the second WAIT
				b.MsgLong(packet.MsgLong{Addr: hostVA, Value: 0x9999})
			})
			runCP(t, f, c.queue, cb)
			if got := binary.LittleEndian.Uint64(host); got != 0x8888_0000_9999 {
				t.Fatalf("EType 1: words %#x, want 0x888800009999", got)
			}
			q := f.dev.hardware().queues[c.queue]
			q.mu.Lock()
			fence := q.fence[1]
			q.mu.Unlock()
			if fence != 0 {
				t.Fatalf("fence counter 1 is %d after two FENCEs took the two WAITs", fence)
			}
		})
	}
}

// TestCBList follows hl-thunk's test_cs_cb_list on Gaudi2: CB_LIST reads
// a 32-bit index at IndexAddr and runs the 16-byte entry of the table at
// TableAddr that it selects (SizeDesc 0; 32 bytes with SizeDesc 1); each
// entry is a CP_DMA of a command buffer. Gaudi has no CB_LIST: it is an
// undefined opcode there.
func TestCBList(t *testing.T) {
	_, _, f := openSim(t, Gaudi2)
	host, hostVA := hostMem(t, f, 16384)
	const index, table, cbs = 0, 1024, 4096
	for i := 0; i < 3; i++ {
		cb := build(t, packet.Gaudi2, func(b *packet.Builder) {
			b.MsgLong(packet.MsgLong{Addr: hostVA + 64 + 4*uint64(i), Value: 0xA0 + uint32(i)})
		})
		copy(host[cbs+1024*i:], cb)
		for _, desc := range []int{16, 32} {
			entry := build(t, packet.Gaudi2, func(b *packet.Builder) {
				b.CPDMA(packet.CPDMA{Src: hostVA + cbs + 1024*uint64(i), Size: uint32(len(cb)), UpperCP: true})
			})
			off := table + desc*i
			if desc == 32 {
				off += 2048 // the 32-byte table
			}
			copy(host[off:], entry)
		}
	}
	for _, desc := range []bool{false, true} {
		tab := hostVA + table
		if desc {
			tab += 2048
		}
		clear(host[64:80])
		binary.LittleEndian.PutUint32(host[index:], 2)
		cb := build(t, packet.Gaudi2, func(b *packet.Builder) {
			b.CBList(packet.CBList{IndexAddr: hostVA + index, TableAddr: tab, SizeDesc: desc})
			b.MsgLong(packet.MsgLong{Header: packet.Header{MsgBarrier: true}, Addr: hostVA + index, Value: 0})
			b.CBList(packet.CBList{Header: packet.Header{MsgBarrier: true}, IndexAddr: hostVA + index, TableAddr: tab, SizeDesc: desc})
			b.CBList(packet.CBList{IndexAddr: hostVA + index, TableAddr: tab, SizeDesc: desc, Pred: 7}) // false: skipped
		})
		mustComplete(t, f, runCB(t, f, 0, cb, 0, 0))
		got := [3]uint32{binary.LittleEndian.Uint32(host[64:]), binary.LittleEndian.Uint32(host[68:]), binary.LittleEndian.Uint32(host[72:])}
		if got != [3]uint32{0xA0, 0, 0xA2} {
			t.Fatalf("SizeDesc %v: words %#x, want entries 2 then 0 run once each", desc, got)
		}
	}
}

// runCP runs cb on queue q and waits for it. A Gaudi CS needs a job on
// an external queue (cs_ioctl_default) and completes with those jobs
// only, so on a Gaudi internal queue cb ends by adding 1 to fence
// counter 0 of DMA_0_0 (CP_FENCE0_RDATA_0 of the DMA0 QMAN), on which a
// kernel CB on DMA_0_0 waits.
func runCP(t *testing.T, f *File, q uint32, cb []byte) {
	t.Helper()
	if f.dev.prof.dramVirtual || q < 8 {
		mustComplete(t, f, runCB(t, f, q, cb, 0, 0))
		return
	}
	cb = append(cb[:len(cb):len(cb)], build(t, packet.Gaudi, func(b *packet.Builder) {
		b.MsgLong(packet.MsgLong{Header: packet.Header{MsgBarrier: true}, Addr: gaudiCFGBase + 0x508000 + gaudiQMFence0, Value: 1})
	})...)
	ext := build(t, packet.Gaudi, func(b *packet.Builder) { b.Fence(packet.Fence{ID: 0, Target: 1, Dec: 1}) })
	h := kernelCB(t, f, uint32(len(ext)), ext)
	seq, a, err := submit(f, chunksOf([]chunk{userCB(t, f, q, cb), {queue: 0, handle: h, size: uint32(len(ext))}}), 0, 0)
	if err != nil {
		t.Fatalf("submit: %v (status %#x)", err, a.Out().Status)
	}
	mustComplete(t, f, seq)
}

// queueName names a queue for subtest names.
func queueName(q uint32) string {
	return "q" + string(rune('0'+q/10)) + string(rune('0'+q%10))
}

// TestCBListChain is hl-thunk's test_cs_cb_list: ten command buffers,
// each run by a CB_LIST entry (a CP_DMA to the upper CP); each but the
// last sets the index to the next entry and ends with a CB_LIST, so the
// chain is ten CP_DMAs deep, more than CP_DMAs nest, and must run whole.
func TestCBListChain(t *testing.T) {
	const n = 10
	_, _, f := openSim(t, Gaudi2)
	host, hostVA := hostMem(t, f, 64<<10)
	const index, table, counts, cbs = 0, 1024, 2048, 4096
	for i := 0; i < n; i++ {
		cb := build(t, packet.Gaudi2, func(b *packet.Builder) {
			b.MsgLong(packet.MsgLong{Addr: hostVA + counts + 4*uint64(i), Value: uint32(i + 1)})
			if i != n-1 {
				b.MsgLong(packet.MsgLong{Header: packet.Header{MsgBarrier: true}, Addr: hostVA + index, Value: uint32(i + 1)})
				b.CBList(packet.CBList{Header: packet.Header{MsgBarrier: true}, IndexAddr: hostVA + index, TableAddr: hostVA + table})
			}
		})
		copy(host[cbs+4096*i:], cb)
		entry := build(t, packet.Gaudi2, func(b *packet.Builder) {
			b.CPDMA(packet.CPDMA{Src: hostVA + cbs + 4096*uint64(i), Size: uint32(len(cb)), UpperCP: true})
		})
		copy(host[table+16*i:], entry)
	}
	cb := build(t, packet.Gaudi2, func(b *packet.Builder) {
		b.MsgLong(packet.MsgLong{Addr: hostVA + index, Value: 0})
		b.CBList(packet.CBList{Header: packet.Header{MsgBarrier: true}, IndexAddr: hostVA + index, TableAddr: hostVA + table})
	})
	mustComplete(t, f, runCB(t, f, 0, cb, 0, 0))
	for i := 0; i < n; i++ {
		if got := binary.LittleEndian.Uint32(host[counts+4*i:]); got != uint32(i+1) {
			t.Errorf("command buffer %d wrote %d, want %d", i, got, i+1)
		}
	}
}
