package stream_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/stream"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// sramRoundTrip copies n bytes of SRAM at addr back to a new host buffer.
func (r *rig) sramBack(t *testing.T, addr uint64, n uint32) []byte {
	t.Helper()
	dst, err := r.mem.AllocHost(uint64(n), memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dst.Close() })
	r.wait(t, r.run(t, r.up(), r.build(t, func(b *packet.Builder) {
		b.LinDMA(packet.LinDMA{Header: packet.Header{EngineBarrier: true}, Src: addr, Dst: dst.VA(), Size: n})
	})))
	return dst.Bytes()
}

// TestCSTwoStreamsWithFence is test_cs_two_streams_with_fence: stream 0
// of the down engine fences on a SOB, then copies host to SRAM; another
// stream of the engine signals the SOB. (hl-thunk uses stream 3; the
// Gaudi2 driver enables only PDMA_0_0 and PDMA_0_1, so Gaudi2 uses 1.)
func TestCSTwoStreamsWithFence(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) {
			r := newRig(t, a)
			u := r.firstSOB(t)
			other := r.plus(r.down(), 3)
			if a == sim.Gaudi2 {
				other = r.plus(r.down(), 1)
			}
			src, err := r.mem.AllocHost(4096, memory.HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			copy(src.Bytes(), []byte{0xde, 0xad, 0xbe, 0xef})
			sram := r.dev.HWIPInfo().SRAMBase + 0x1000
			r.wait(t, r.run(t, other, r.setSOB(t, u.sob, 0)))
			seq := r.run(t, r.down(), r.monitorFence(t, r.down(), u, u.mon, 1, func(b *packet.Builder) {
				b.LinDMA(packet.LinDMA{Src: src.VA(), Dst: sram, Size: 4})
			}))
			if _, err := r.s.Wait(ctxShort(t), seq); err == nil {
				t.Fatal("fenced stream completed before the SOB was signalled")
			}
			r.wait(t, r.run(t, other, r.build(t, func(b *packet.Builder) { r.sobWrite(t, b, u.sob, 1, true, false) })))
			r.wait(t, seq)
			if got := r.sramBack(t, sram, 4); !bytes.Equal(got, src.Bytes()[:4]) {
				t.Errorf("SRAM holds % x, want % x", got, src.Bytes()[:4])
			}
		})
	}
}

// TestSMSOBCleanupOnCtxSwitch is test_sm_sob_cleanup_on_ctx_switch: a SOB
// set by one context reads 0 after the device file is closed and opened
// again, so a fence for 0 passes.
func TestSMSOBCleanupOnCtxSwitch(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) {
			r := newRig(t, a)
			u := r.firstSOB(t)
			r.wait(t, r.run(t, r.down(), r.setSOB(t, u.sob, 1)))
			r.close()
			r.open(t)
			// Equal 0: passes only if the SOB was cleared.
			r.wait(t, r.run(t, r.down(), r.monitorFence(t, r.down(), u, u.mon, 0, nil)))
			// And a fence for 1 does not pass: the check can fail.
			seq := r.run(t, r.plus(r.down(), 1), r.monitorFence(t, r.plus(r.down(), 1), u, u.mon+1, 1, nil))
			if _, err := r.s.Wait(ctxShort(t), seq); err == nil {
				t.Fatal("fence for a SOB value of 1 passed after the reopen")
			}
		})
	}
}

// TestSMMonitorSetSRAM is test_sm_monitor_set_sram (Gaudi2): a monitor's
// payload lands in SRAM.
func TestSMMonitorSetSRAM(t *testing.T) {
	r := newRig(t, sim.Gaudi2)
	u := r.firstSOB(t)
	sram := r.dev.HWIPInfo().SRAMBase + 0x1000
	r.wait(t, r.run(t, r.down(), r.build(t, func(b *packet.Builder) {
		r.sobWrite(t, b, u.sob, 0, false, false)
		b.MsgLong(packet.MsgLong{Header: packet.Header{MsgBarrier: true}, Addr: sram, Value: 0xDEADDAED})
	})))
	r.wait(t, r.run(t, r.down(), r.build(t, func(b *packet.Builder) {
		r.monitor(t, b, u.sob, u.mon, 1, sram, 0xFEEDDEAF)
		r.sobWrite(t, b, u.sob, 1, false, false)
	})))
	if got := binary.LittleEndian.Uint32(r.sramBack(t, sram, 4)); got != 0xFEEDDEAF {
		t.Errorf("SRAM holds %#x, want the monitor's payload 0xfeeddeaf", got)
	}
}

// smEngine is hl-thunk's test_sm: an engine queue's command buffer (in
// SRAM, run by the engine's QMAN) signals a SOB that the up DMA queue
// fences on before copying SRAM to the host; both are jobs of one CS.
func smEngine(t *testing.T, a sim.ASIC, engineQueue func(sim.ASIC) device.Queue) {
	r := newRig(t, a)
	u := r.firstSOB(t)
	hw := r.dev.HWIPInfo()
	data, engineCB := hw.SRAMBase+0x1000, hw.SRAMBase+0x2000
	src, err := r.mem.AllocHost(4096, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := r.mem.AllocHost(4096, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	copy(src.Bytes(), []byte{1, 2, 3, 4})
	signal := r.build(t, func(b *packet.Builder) { r.sobWrite(t, b, u.sob, 1, true, false) })
	copy(src.Bytes()[64:], signal)
	// Data and the engine's CB go to SRAM; the SOB starts at 0.
	r.wait(t, r.run(t, r.down(), r.build(t, func(b *packet.Builder) {
		b.LinDMA(packet.LinDMA{Header: packet.Header{MsgBarrier: true}, Src: src.VA(), Dst: data, Size: 4})
		b.LinDMA(packet.LinDMA{Header: packet.Header{MsgBarrier: true}, Src: src.VA() + 64, Dst: engineCB, Size: uint32(len(signal))})
		r.sobWrite(t, b, u.sob, 0, false, false)
	})))
	ext := r.monitorFence(t, r.up(), u, u.mon, 1, func(b *packet.Builder) {
		b.LinDMA(packet.LinDMA{Src: data, Dst: dst.VA(), Size: 4})
	})
	c := r.newCB(t, ext)
	seq, err := r.s.Submit(ctxT(t), []stream.Chunk{
		r.chunk(c, r.up(), len(ext)),
		{Queue: engineQueue(a), CB: engineCB, Size: uint32(len(signal)), UserCB: true},
	}, stream.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.wait(t, seq)
	if !bytes.Equal(dst.Bytes()[:4], src.Bytes()[:4]) {
		t.Errorf("host got % x, want % x", dst.Bytes()[:4], src.Bytes()[:4])
	}
}

// TestSMTPC is test_sm_tpc: TPC 0's queue signals.
func TestSMTPC(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) {
			smEngine(t, a, func(a sim.ASIC) device.Queue {
				if a == sim.Gaudi {
					return device.GaudiQueue(hl.GAUDI_QUEUE_ID_TPC_0_0)
				}
				return device.Gaudi2Queue(hl.GAUDI2_QUEUE_ID_DCORE0_TPC_0_0)
			})
		})
	}
}

// TestSMMME is test_sm_mme: MME 0's queue signals.
func TestSMMME(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) {
			smEngine(t, a, func(a sim.ASIC) device.Queue {
				if a == sim.Gaudi {
					return device.GaudiQueue(hl.GAUDI_QUEUE_ID_MME_0_0)
				}
				return device.Gaudi2Queue(hl.GAUDI2_QUEUE_ID_DCORE0_MME_0_0)
			})
		})
	}
}

// pingpong is hl-thunk's test_sm_pingpong_upper_cp: the down DMA queue
// copies host to SRAM and signals SOB0; the engine queue's CB fences on
// SOB0 and signals SOB1; the up DMA queue fences on SOB1 and copies SRAM
// to the host; the three are jobs of one CS. The engine's CB sits in SRAM
// (copied there by the CS's restore chunk) or in host memory.
func pingpong(t *testing.T, a sim.ASIC, engine device.Queue, cbInHost bool) {
	r := newRig(t, a)
	u := r.firstSOB(t)
	s0, s1 := userSync{sob: u.sob, mon: u.mon}, userSync{sob: u.sob + 1, mon: u.mon + 1}
	hw := r.dev.HWIPInfo()
	data := hw.SRAMBase + 0x1000
	src, err := r.mem.AllocHost(4096, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := r.mem.AllocHost(4096, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	copy(src.Bytes(), []byte{9, 8, 7, 6})
	r.wait(t, r.run(t, r.down(), r.build(t, func(b *packet.Builder) {
		r.sobWrite(t, b, s0.sob, 0, false, false)
		r.sobWrite(t, b, s1.sob, 0, false, false)
	})))
	engineCB := r.monitorFence(t, engine, s0, s0.mon, 1, func(b *packet.Builder) { r.sobWrite(t, b, s1.sob, 1, true, false) })
	host, err := r.mem.AllocHost(4096, memory.HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	copy(host.Bytes(), engineCB)
	engineAddr := host.VA()
	var opts stream.SubmitOptions
	if !cbInHost {
		engineAddr = hw.SRAMBase + 0x2000
		restore := r.build(t, func(b *packet.Builder) {
			b.LinDMA(packet.LinDMA{Src: host.VA(), Dst: engineAddr, Size: uint32(len(engineCB))})
		})
		rc := r.newCB(t, restore)
		opts.Restore = append(opts.Restore, r.chunk(rc, r.down(), len(restore)))
	}
	down := r.build(t, func(b *packet.Builder) {
		b.LinDMA(packet.LinDMA{Src: src.VA(), Dst: data, Size: 4})
		r.sobWrite(t, b, s0.sob, 1, true, false)
	})
	up := r.monitorFence(t, r.up(), s1, s1.mon, 1, func(b *packet.Builder) {
		b.LinDMA(packet.LinDMA{Src: data, Dst: dst.VA(), Size: 4})
	})
	dc, uc := r.newCB(t, down), r.newCB(t, up)
	seq, err := r.s.Submit(ctxT(t), []stream.Chunk{
		r.chunk(dc, r.down(), len(down)),
		{Queue: engine, CB: engineAddr, Size: uint32(len(engineCB)), UserCB: true},
		r.chunk(uc, r.up(), len(up)),
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	r.wait(t, seq)
	if !bytes.Equal(dst.Bytes()[:4], src.Bytes()[:4]) {
		t.Errorf("host got % x, want % x", dst.Bytes()[:4], src.Bytes()[:4])
	}
}

func tpcQueue(a sim.ASIC) device.Queue {
	if a == sim.Gaudi {
		return device.GaudiQueue(hl.GAUDI_QUEUE_ID_TPC_0_0)
	}
	return device.Gaudi2Queue(hl.GAUDI2_QUEUE_ID_DCORE0_TPC_0_0)
}

func mmeQueue(a sim.ASIC) device.Queue {
	if a == sim.Gaudi {
		return device.GaudiQueue(hl.GAUDI_QUEUE_ID_MME_0_0)
	}
	return device.Gaudi2Queue(hl.GAUDI2_QUEUE_ID_DCORE0_MME_0_0)
}

// TestSMPingpongTPCUpperCPFromSRAM is test_sm_pingpong_tpc_upper_cp_from_sram.
func TestSMPingpongTPCUpperCPFromSRAM(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) { pingpong(t, a, tpcQueue(a), false) })
	}
}

// TestSMPingpongMMEUpperCPFromSRAM is test_sm_pingpong_mme_upper_cp_from_sram.
func TestSMPingpongMMEUpperCPFromSRAM(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) { pingpong(t, a, mmeQueue(a), false) })
	}
}

// TestSMPingpongTPCUpperCPFromHost is test_sm_pingpong_tpc_upper_cp_from_host.
func TestSMPingpongTPCUpperCPFromHost(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) { pingpong(t, a, tpcQueue(a), true) })
	}
}

// TestSMPingpongMMEUpperCPFromHost is test_sm_pingpong_mme_upper_cp_from_host.
func TestSMPingpongMMEUpperCPFromHost(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) { pingpong(t, a, mmeQueue(a), true) })
	}
}

// pingpongCommon is hl-thunk's test_sm_pingpong_common_cp: as pingpong,
// but the engine's upper CP only hands a common CB to the lower CP
// (CP_DMA), which fences on SOB0 at the lower CP's fence register
// (cmdq_fence) and then signals SOB1.
func pingpongCommon(t *testing.T, a sim.ASIC, engine device.Queue, inHost bool) {
	r := newRig(t, a)
	u := r.firstSOB(t)
	s0, s1 := userSync{sob: u.sob, mon: u.mon}, userSync{sob: u.sob + 1, mon: u.mon + 1}
	hw := r.dev.HWIPInfo()
	data := hw.SRAMBase + 0x1000
	bufs := make([][]byte, 0, 4)
	alloc := func() (uint64, []byte) {
		h, err := r.mem.AllocHost(4096, memory.HostOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		bufs = append(bufs, h.Bytes())
		return h.VA(), h.Bytes()
	}
	srcVA, src := alloc()
	dstVA, dst := alloc()
	copy(src, []byte{4, 3, 2, 1})
	r.wait(t, r.run(t, r.down(), r.build(t, func(b *packet.Builder) {
		r.sobWrite(t, b, s0.sob, 0, false, false)
		r.sobWrite(t, b, s1.sob, 0, false, false)
	})))
	common := r.build(t, func(b *packet.Builder) {
		r.monitor(t, b, s0.sob, s0.mon, 1, r.fenceAddr(engine)+4*4, 1) // engine is stream 0: CP_FENCE0_RDATA_4
		b.Fence(packet.Fence{Header: packet.Header{MsgBarrier: true, RegBarrier: r.asic == sim.Gaudi}, ID: 0, Target: 1, Dec: 1})
		b.Nop(packet.Nop{})
		r.sobWrite(t, b, s1.sob, 1, true, false)
	})
	commonVA, commonMem := alloc()
	copy(commonMem, common)
	commonAddr := commonVA
	if !inHost {
		commonAddr = hw.SRAMBase + 0x3000
	}
	upper := r.build(t, func(b *packet.Builder) {
		b.CPDMA(packet.CPDMA{Src: commonAddr, Size: uint32(len(common))})
	})
	upperVA, upperMem := alloc()
	copy(upperMem, upper)
	upperAddr := upperVA
	var opts stream.SubmitOptions
	if !inHost {
		upperAddr = hw.SRAMBase + 0x2000
		restore := r.build(t, func(b *packet.Builder) {
			b.LinDMA(packet.LinDMA{Src: upperVA, Dst: upperAddr, Size: uint32(len(upper))})
			b.LinDMA(packet.LinDMA{Src: commonVA, Dst: commonAddr, Size: uint32(len(common))})
		})
		rc := r.newCB(t, restore)
		opts.Restore = append(opts.Restore, r.chunk(rc, r.down(), len(restore)))
	}
	down := r.build(t, func(b *packet.Builder) {
		b.LinDMA(packet.LinDMA{Src: srcVA, Dst: data, Size: 4})
		r.sobWrite(t, b, s0.sob, 1, true, false)
	})
	up := r.monitorFence(t, r.up(), s1, s1.mon, 1, func(b *packet.Builder) {
		b.LinDMA(packet.LinDMA{Src: data, Dst: dstVA, Size: 4})
	})
	dc, uc := r.newCB(t, down), r.newCB(t, up)
	seq, err := r.s.Submit(ctxT(t), []stream.Chunk{
		r.chunk(dc, r.down(), len(down)),
		{Queue: engine, CB: upperAddr, Size: uint32(len(upper)), UserCB: true},
		r.chunk(uc, r.up(), len(up)),
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	r.wait(t, seq)
	if !bytes.Equal(dst[:4], src[:4]) {
		t.Errorf("host got % x, want % x", dst[:4], src[:4])
	}
}

// TestSMPingpongTPCCommonCPFromSRAM is test_sm_pingpong_tpc_common_cp_from_sram.
func TestSMPingpongTPCCommonCPFromSRAM(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) { pingpongCommon(t, a, tpcQueue(a), false) })
	}
}

// TestSMPingpongMMECommonCPFromSRAM is test_sm_pingpong_mme_common_cp_from_sram.
func TestSMPingpongMMECommonCPFromSRAM(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) { pingpongCommon(t, a, mmeQueue(a), false) })
	}
}

// TestSMPingpongTPCCommonCPFromHost is test_sm_pingpong_tpc_common_cp_from_host.
func TestSMPingpongTPCCommonCPFromHost(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) { pingpongCommon(t, a, tpcQueue(a), true) })
	}
}

// TestSMPingpongMMECommonCPFromHost is test_sm_pingpong_mme_common_cp_from_host.
func TestSMPingpongMMECommonCPFromHost(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) { pingpongCommon(t, a, mmeQueue(a), true) })
	}
}
