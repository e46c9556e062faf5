package device

import (
	"errors"
	"testing"

	"github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestQueueNames(t *testing.T) {
	for _, tc := range []struct {
		asic ASIC
		n    int
	}{
		{Gaudi, int(hl.GAUDI_QUEUE_ID_SIZE)},
		{GaudiSec, int(hl.GAUDI_QUEUE_ID_SIZE)},
		{Gaudi2, int(hl.GAUDI2_QUEUE_ID_SIZE)},
		{Gaudi2D, int(hl.GAUDI2_QUEUE_ID_SIZE)},
		{Gaudi3, int(gaudi3.GAUDI3_QUEUE_ID_SIZE)},
		{Gaudi3HL338, 1},
	} {
		d := &Device{asic: tc.asic}
		qs := d.Queues()
		if len(qs) != tc.n {
			t.Errorf("%s: %d queues, want %d", tc.asic, len(qs), tc.n)
		}
		for i, q := range qs {
			if q.ID() != uint32(i) {
				t.Errorf("%s: queue %d is %v (id %d)", tc.asic, i, q, q.ID())
			}
			got, err := d.Queue(q.String())
			if err != nil || got != q {
				t.Errorf("%s: Queue(%q) = %v, %v", tc.asic, q.String(), got, err)
			}
			if id, err := d.QueueID(q); err != nil || id != q.ID() {
				t.Errorf("%s: QueueID(%v) = %d, %v", tc.asic, q, id, err)
			}
		}
		if tc.n > 0 {
			d.Queues()[0] = Queue{} // a copy
			if d.Queues()[0] == (Queue{}) {
				t.Errorf("%s: Queues returned the table", tc.asic)
			}
		}
	}
	got := []string{
		Gaudi2Queue(hl.GAUDI2_QUEUE_ID_PDMA_0_0).String(),
		Gaudi2Queue(hl.GAUDI2_QUEUE_ID_DCORE0_EDMA_0_0).String(),
		Gaudi2Queue(hl.GAUDI2_QUEUE_ID_CPU_PQ).String(),
		GaudiQueue(hl.GAUDI_QUEUE_ID_DMA_0_0).String(),
		GaudiQueue(hl.GAUDI_QUEUE_ID_NIC_9_3).String(),
		Gaudi2Queue(999).String(),
		Queue{}.String(),
		Gaudi3Queue(gaudi3.GAUDI3_QUEUE_ID_CPU_PQ).String(),
		Gaudi3Queue(1).String(),
	}
	want := []string{"PDMA_0_0", "DCORE0_EDMA_0_0", "CPU_PQ", "DMA_0_0", "NIC_9_3", "Queue(GAUDI2, 999)", "Queue(none)", "CPU_PQ", "Queue(GAUDI3, 1)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	d := &Device{asic: Gaudi2B}
	if q, err := d.Queue("dcore1_tpc_2_3"); err != nil || q != Gaudi2Queue(hl.GAUDI2_QUEUE_ID_DCORE1_TPC_2_3) {
		t.Errorf("lower case: %v, %v", q, err)
	}
	for _, name := range []string{"DMA_0_0", "GAUDI2_QUEUE_ID_PDMA_0_0", "", "SIZE"} {
		if _, err := d.Queue(name); !errors.Is(err, ErrUnknownName) {
			t.Errorf("Queue(%q) on Gaudi2: %v, want ErrUnknownName", name, err)
		}
	}
}

func TestWrongASIC(t *testing.T) {
	g2, g := &Device{asic: Gaudi2C}, &Device{asic: GaudiSec}
	check := func(name string, err error, have ASIC) {
		t.Helper()
		var w *WrongASICError
		if !errors.As(err, &w) || w.Have != have || !errors.Is(err, unix.EINVAL) {
			t.Errorf("%s: %v, want a *WrongASICError of %s matching EINVAL", name, err, have)
		}
	}
	_, err := g2.QueueID(GaudiQueue(hl.GAUDI_QUEUE_ID_DMA_0_0))
	check("Gaudi queue on Gaudi2", err, Gaudi)
	if got, want := err.Error(), "queue DMA_0_0 is a GAUDI queue, not one of a GAUDI2C device"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	_, err = g.QueueID(Gaudi2Queue(hl.GAUDI2_QUEUE_ID_PDMA_0_0))
	check("Gaudi2 queue on Gaudi", err, Gaudi2)
	_, err = g2.QueueID(Queue{})
	check("zero queue", err, ASICUnknown)
	if got, want := err.Error(), "no queue given for a GAUDI2C device"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	_, err = g.EngineID(Gaudi2Engine(hl.GAUDI2_DCORE0_ENGINE_ID_MME))
	check("Gaudi2 engine on Gaudi", err, Gaudi2)
	_, err = g2.EngineID(Engine{})
	check("zero engine", err, ASICUnknown)
	_, err = g.EngineCoreID(Gaudi2EngineCore(0))
	check("engine core on Gaudi", err, Gaudi2)
	_, err = g2.EngineCoreID(EngineCore{})
	check("zero engine core", err, ASICUnknown)
	g3 := &Device{asic: Gaudi3HL338}
	_, err = g3.QueueID(Gaudi2Queue(hl.GAUDI2_QUEUE_ID_CPU_PQ))
	check("Gaudi2 queue on Gaudi3", err, Gaudi2)
	_, err = g2.EngineID(Gaudi3Engine(gaudi3.GAUDI3_DIE0_ENGINE_ID_PDMA_0_CH_0))
	check("Gaudi3 engine on Gaudi2", err, Gaudi3)
	if id, err := g3.EngineID(Gaudi3Engine(gaudi3.GAUDI3_DIE1_ENGINE_ID_PDMA_1_CH_5)); err != nil || id != 143 {
		t.Errorf("Gaudi3 engine on the HL-338: %d, %v", id, err)
	}
	if id, err := g3.QueueID(Gaudi3Queue(gaudi3.GAUDI3_QUEUE_ID_CPU_PQ)); err != nil || id != 0 {
		t.Errorf("Gaudi3 queue on the HL-338: %d, %v", id, err)
	}
	if id, err := g.EngineID(GaudiEngine(hl.GAUDI_ENGINE_ID_TPC_7)); err != nil || id != 19 {
		t.Errorf("Gaudi engine on GaudiSec: %d, %v", id, err)
	}
}

func TestEngineNames(t *testing.T) {
	for _, tc := range []struct {
		asic         ASIC
		engines, cor int
	}{
		{Gaudi, int(hl.GAUDI_ENGINE_ID_SIZE), 0},
		{Gaudi2, int(hl.GAUDI2_ENGINE_ID_SIZE), 69},
		{Gaudi3, int(gaudi3.GAUDI3_ENGINE_ID_SIZE), 0},
		{Goya, 0, 0},
	} {
		d := &Device{asic: tc.asic}
		es, cs := d.Engines(), d.EngineCores()
		if len(es) != tc.engines || len(cs) != tc.cor {
			t.Errorf("%s: %d engines and %d cores, want %d and %d", tc.asic, len(es), len(cs), tc.engines, tc.cor)
		}
		for i, e := range es {
			got, err := d.Engine(e.String())
			if e.ID() != uint32(i) || err != nil || got != e {
				t.Errorf("%s: engine %d: %v (id %d), lookup %v %v", tc.asic, i, e, e.ID(), got, err)
			}
		}
		for i, c := range cs {
			got, err := d.EngineCore(c.String())
			if c.ID() != uint32(i) || err != nil || got != c {
				t.Errorf("%s: core %d: %v (id %d), lookup %v %v", tc.asic, i, c, c.ID(), got, err)
			}
		}
	}
	got := []string{
		Gaudi2Engine(hl.GAUDI2_DCORE0_ENGINE_ID_EDMA_0).String(),
		Gaudi2Engine(hl.GAUDI2_DCORE3_ENGINE_ID_TPC_5).String(),
		Gaudi2Engine(hl.GAUDI2_PCIE_ENGINE_ID_DEC_1).String(),
		Gaudi2Engine(hl.GAUDI2_ENGINE_ID_NIC11_1).String(),
		GaudiEngine(hl.GAUDI_ENGINE_ID_DMA_5).String(),
		Gaudi2Engine(hl.GAUDI2_ENGINE_ID_SIZE).String(),
		Engine{}.String(),
		Gaudi2EngineCore(0).String(),
		Gaudi2EngineCore(30).String(),
		Gaudi2EngineCore(31).String(),
		Gaudi2EngineCore(42).String(),
		Gaudi2EngineCore(68).String(),
		Gaudi2EngineCore(69).String(),
		EngineCore{}.String(),
		Gaudi3Engine(gaudi3.GAUDI3_DIE0_ENGINE_ID_PDMA_0_CH_0).String(),
		Gaudi3Engine(gaudi3.GAUDI3_HDCORE7_ENGINE_ID_EDUP).String(),
		Gaudi3Engine(gaudi3.GAUDI3_ENGINE_ID_SIZE).String(),
	}
	want := []string{
		"DCORE0_EDMA_0", "DCORE3_TPC_5", "PCIE_DEC_1", "NIC11_1", "DMA_5", "Engine(GAUDI2, 79)", "Engine(none)",
		"SCHED_ARC0", "TPC_QMAN_ARC24", "MME_QMAN_ARC0", "PDMA_QMAN_ARC1", "NIC_QMAN_ARC23", "EngineCore(GAUDI2, 69)", "EngineCore(none)",
		"DIE0_PDMA_0_CH_0", "HDCORE7_EDUP", "Engine(GAUDI3, 194)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	d := &Device{asic: Gaudi2}
	if e, err := d.Engine("dcore2_mme"); err != nil || e != Gaudi2Engine(hl.GAUDI2_DCORE2_ENGINE_ID_MME) {
		t.Errorf("Engine(dcore2_mme) = %v, %v", e, err)
	}
	if c, err := d.EngineCore("edma_qman_arc7"); err != nil || c.ID() != 40 {
		t.Errorf("EngineCore(edma_qman_arc7) = %v, %v", c, err)
	}
	if _, err := d.Engine("TPC_7"); !errors.Is(err, ErrUnknownName) {
		t.Errorf("Gaudi's engine name on Gaudi2: %v", err)
	}
	if e, err := (&Device{asic: Gaudi3HL338}).Engine("die1_pdma_1_ch_4"); err != nil || e != Gaudi3Engine(gaudi3.GAUDI3_DIE1_ENGINE_ID_PDMA_1_CH_4) {
		t.Errorf("Engine(die1_pdma_1_ch_4) on the HL-338 = %v, %v", e, err)
	}
	if _, err := (&Device{asic: Gaudi}).EngineCore("SCHED_ARC0"); !errors.Is(err, ErrUnknownName) {
		t.Errorf("engine core on Gaudi: %v", err)
	}
}
