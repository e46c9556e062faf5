package device

import (
	"context"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"github.com/google/go-cmp/cmp"
)

// TestEventRecords ports hl-thunk's test_event_record and the notifier
// half of the error-injection tests: each kind of event the device
// records reaches its typed query with the recorded values, raises its
// notifier bit, and only the first of a kind is kept.
func TestEventRecords(t *testing.T) {
	s := testSystem(t, sim.Default(sim.Gaudi2, 1))
	defer s.Close()
	sd := s.Device(0)
	d, err := openSim(sd)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	n, err := d.Notifier()
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	start := time.Duration(0)
	if open, err := d.LastOpenTime(); err != nil || open == 0 {
		t.Fatalf("LastOpenTime = %v, %v; want the open just made", open, err)
	} else {
		start = open
	}
	steps := []struct {
		name   string
		record func()
		event  Events
		query  func() (any, bool, error)
		want   any
	}{
		{"razwi", func() { sd.RecordRazwi(0x2000, []uint16{7}, hl.HL_RAZWI_WRITE) }, hl.HL_NOTIFIER_EVENT_RAZWI,
			func() (any, bool, error) { r, ok, err := d.RazwiEvent(); r.Time = 0; return r, ok, err },
			Razwi{Addr: 0x2000, Engines: []uint16{7}, Flags: hl.HL_RAZWI_WRITE}},
		{"page fault", func() { sd.RecordPageFault(0x7000, hl.UserMapping{DevVA: 0x7000, Size: 4096}) }, hl.HL_NOTIFIER_EVENT_PAGE_FAULT,
			func() (any, bool, error) { r, ok, err := d.PageFaultEvent(); r.Time = 0; return r, ok, err },
			PageFault{Addr: 0x7000}},
		{"hw error", func() { sd.RecordHWError(33) }, hl.HL_NOTIFIER_EVENT_CRITICL_HW_ERR,
			func() (any, bool, error) { r, ok, err := d.HWErrEvent(); r.Time = 0; return r, ok, err },
			HWError{EventID: 33}},
		{"fw error", func() { sd.RecordFWError(hl.HL_INFO_FW_REPORTED_ERR, 44) }, hl.HL_NOTIFIER_EVENT_CRITICL_FW_ERR,
			func() (any, bool, error) { r, ok, err := d.FWErrEvent(); r.Time = 0; return r, ok, err },
			FWError{Type: hl.HL_INFO_FW_REPORTED_ERR, EventID: 44}},
		{"engine error", func() { sd.RecordEngineError(5, 2) }, hl.HL_NOTIFIER_EVENT_USER_ENGINE_ERR,
			func() (any, bool, error) { r, ok, err := d.EngineErrEvent(); r.Time = 0; return r, ok, err },
			EngineError{Engine: 5, Count: 2}},
		{"undefined opcode", func() { sd.RecordUndefinedOpcode(12, 0x9000, 64) }, hl.HL_NOTIFIER_EVENT_UNDEFINED_OPCODE,
			func() (any, bool, error) {
				r, ok, err := d.UndefinedOpcodeEvent()
				r.Time, r.CBAddrs = 0, nil
				return r, ok, err
			},
			UndefinedOpcode{Engine: 12, Stream: 4, CQAddr: 0x9000, CQSize: 64}},
		{"cs timeout", func() { sd.RecordCSTimeout(99) }, hl.HL_NOTIFIER_EVENT_CS_TIMEOUT,
			func() (any, bool, error) { r, ok, err := d.CSTimeoutEvent(); r.Time = 0; return r, ok, err },
			CSTimeout{Seq: 99}},
	}
	for _, st := range steps {
		if _, ok, err := st.query(); err != nil || ok {
			t.Fatalf("%s before recording: ok=%v, %v", st.name, ok, err)
		}
		st.record()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ev, err := n.Wait(ctx)
		cancel()
		if err != nil || !ev.Has(st.event) {
			t.Fatalf("%s: notifier %v, %v; want %v", st.name, ev, err, st.event)
		}
		got, ok, err := st.query()
		if err != nil || !ok {
			t.Fatalf("%s: ok=%v, %v", st.name, ok, err)
		}
		if diff := cmp.Diff(st.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", st.name, diff)
		}
		// Only the first event of a kind is kept.
		st.record()
		if again, _, _ := st.query(); !cmp.Equal(again, got) {
			t.Errorf("%s: a second event replaced the first: %+v", st.name, again)
		}
	}
	// The page fault kept the context's mappings.
	maps, err := d.UserMappings()
	if err != nil || !cmp.Equal(maps, []Mapping{{VA: 0x7000, Size: 4096}}) {
		t.Errorf("UserMappings = %+v, %v", maps, err)
	}
	// Event times are CLOCK_MONOTONIC and come after the open.
	if r, _, _ := d.RazwiEvent(); r.Time < start {
		t.Errorf("razwi at %v, before the open at %v", r.Time, start)
	}
}
