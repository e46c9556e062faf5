package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// TestGaudi3Decoding decodes captured Gaudi3 calls: MAP_BLOCK of PDMA
// channel blocks, named once the device is known as a Gaudi3, and the
// interrupt waits in their user address and kernel CQ forms.
func TestGaudi3Decoding(t *testing.T) {
	const rdev = 511<<20 | 4
	info := synth(bpfCallCALL_HL_INFO, hl.DRM_IOCTL_HL_INFO, 0, 0, 1,
		&bpfInfoBody{Op: hl.HL_INFO_HW_IP_INFO, ReturnSize: 4096, Rdev: rdev, DeviceId: g3.PCI_IDS_GAUDI3, Answered: 1})
	mapBlock := func(addr uint64, rdev uint32) *Event {
		return synth(bpfCallCALL_HL_MEMORY, hl.DRM_IOCTL_HL_MEMORY, 0, 0, 1,
			&bpfMemBody{Op: hl.HL_MEM_OP_MAP_BLOCK, In: [3]uint64{addr}, Out: [2]uint64{0x2000000000005000, 4096}, Rdev: rdev})
	}
	wait := func(b *bpfWaitBody) *Event {
		return synth(bpfCallCALL_HL_WAIT_CS, hl.DRM_IOCTL_HL_WAIT_CS, 0, 0, 1, b)
	}
	for _, tc := range []struct {
		name string
		e    *Event
		want string
	}{
		{"channel 5", mapBlock(g3.PDMAChannelBlock(5), rdev),
			`op=MAP_BLOCK block="PDMA ch 5 (die 0 group 0) PQM CH_A" flags=0 -> handle=0x2000000000005000 size=4096 = 0`},
		{"channel 20, inside", mapBlock(g3.PDMAChannelBlock(20)+g3.PDMA_CH_A_PQM_CH_MSQ_PI, rdev),
			`block="PDMA ch 20 (die 1 group 3) PQM CH_A +0x1f8"`},
		{"channel 7", mapBlock(g3.PDMAChannelBlock(7), rdev), `block="PDMA ch 7 (die 0 group 1) PQM CH_A"`},
		{"not a block", mapBlock(0x1000, rdev), "block=0x1000 "},
		{"unknown device", mapBlock(g3.PDMAChannelBlock(5), 511<<20|9), "block=0x300007ffc545000 "},
		{"user address", wait(&bpfWaitBody{Seq: 0x7f0000001000, TimeoutUs: 3, InterruptTimeoutUs: 1000000,
			Flags: hl.HL_WAIT_CS_FLAGS_INTERRUPT | 71<<20, Status: hl.HL_WAIT_CS_STATUS_COMPLETED}),
			"WAIT_CS  fd=3 interrupt=71 addr=0x7f0000001000 target=3 timeout_us=1000000 flags=INTERRUPT -> status=COMPLETED = 0"},
		{"kernel CQ", wait(&bpfWaitBody{Seq: 0x2000000000003000, CqCountersOffset: 8, TimeoutUs: 12, InterruptTimeoutUs: 500,
			Flags: hl.HL_WAIT_CS_FLAGS_INTERRUPT | hl.HL_WAIT_CS_FLAGS_INTERRUPT_KERNEL_CQ | 72<<20, Status: hl.HL_WAIT_CS_STATUS_TIMEDOUT}),
			"interrupt=72 cq_handle=0x2000000000003000 cq_offset=0x8 target=12 timeout_us=500 flags=INTERRUPT|INTERRUPT_KERNEL_CQ -> status=TIMEDOUT"},
		{"any CQ", wait(&bpfWaitBody{Seq: 0x1000, TimeoutUs: 1, Flags: hl.HL_WAIT_CS_FLAGS_INTERRUPT | hl.HL_WAIT_CS_FLAGS_ANY_CQ_INTERRUPT}),
			"interrupt=ANY_CQ addr=0x1000 target=1 timeout_us=0 flags=INTERRUPT "},
		{"any decoder", wait(&bpfWaitBody{Seq: 0x1000, TimeoutUs: 1, Flags: hl.HL_WAIT_CS_FLAGS_INTERRUPT | hl.HL_WAIT_CS_FLAGS_ANY_DEC_INTERRUPT}),
			"interrupt=ANY_DEC "},
		{"registered", wait(&bpfWaitBody{Seq: 0x1000, TimeoutUs: 1, TimestampHandle: 0x8000000000001000, TimestampOffset: 16,
			Flags: hl.HL_WAIT_CS_FLAGS_INTERRUPT | hl.HL_WAIT_CS_FLAGS_REGISTER_INTERRUPT | 80<<20}),
			"interrupt=80 addr=0x1000 target=1 timeout_us=0 ts_handle=0x8000000000001000 ts_offset=0x10 flags=INTERRUPT|REGISTER_INTERRUPT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := newPrinter(&buf, outputOptions{SysFS: t.TempDir()}, func(uint64) time.Time { return t0 })
			for _, e := range []*Event{info, tc.e} {
				if err := p.event(e); err != nil {
					t.Fatal(err)
				}
			}
			p.flush()
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if got := lines[len(lines)-1]; !strings.Contains(got, tc.want) {
				t.Errorf("line\n%s\nlacks\n%s", got, tc.want)
			}
		})
	}

	// JSON keeps the numbers and adds the names.
	e := mapBlock(g3.PDMAChannelBlock(5), rdev)
	e.asic = device.Gaudi3
	var buf bytes.Buffer
	if err := writeJSON(&buf, e.JSON(t0)); err != nil {
		t.Fatal(err)
	}
	var got struct{ Args map[string]any }
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Args["block"] != "0x300007ffc545000" || got.Args["block_name"] != "PDMA ch 5 (die 0 group 0) PQM CH_A" {
		t.Errorf("JSON args %v", got.Args)
	}
	w := wait(&bpfWaitBody{Flags: hl.HL_WAIT_CS_FLAGS_INTERRUPT | hl.HL_WAIT_CS_FLAGS_ANY_CQ_INTERRUPT})
	buf.Reset()
	if err := writeJSON(&buf, w.JSON(t0)); err != nil {
		t.Fatal(err)
	}
	if s := buf.String(); !strings.Contains(s, `"interrupt":4095,"interrupt_name":"ANY_CQ"`) || !strings.Contains(s, `"op":"INTERRUPT"`) {
		t.Errorf("JSON %s", s)
	}
}

// TestBlockName names the Gaudi3 PDMA channel blocks and nothing else.
func TestBlockName(t *testing.T) {
	for _, tc := range []struct {
		asic device.ASIC
		addr uint64
		want string
	}{
		{device.Gaudi3, g3.PDMAChannelBlock(0), "PDMA ch 0 (die 0 group 0) PQM CH_A"},
		{device.Gaudi3, g3.PDMAChannelBlock(23), "PDMA ch 23 (die 1 group 3) PQM CH_A"},
		{device.Gaudi3, g3.PDMAChannelBlock(12) + 4, "PDMA ch 12 (die 1 group 2) PQM CH_A +0x4"},
		{device.Gaudi3, g3.PDMAChannelBlock(23) + g3.PDMA_CH_OFFSET, ""},
		{device.Gaudi3, g3.SyncMngrObjsBlock(1, 0), "HD1 SYNC_MNGR OBJS group 0"},
		{device.Gaudi3, g3.SyncMngrObjsBlock(0, 1), "HD0 SYNC_MNGR OBJS group 1"},
		{device.Gaudi3, g3.SyncMngrGlblBlock(7), "HD7 SYNC_MNGR GLBL"},
		{device.Gaudi3, g3.SyncMngrObjsBlock(0, 0), ""}, // the driver's own: not mappable
		{device.Gaudi3, g3.SyncMngrGlblBlock(0), ""},
		{device.Gaudi2, g3.PDMAChannelBlock(0), ""},
		{device.ASICUnknown, g3.PDMAChannelBlock(0), ""},
	} {
		if got := blockName(tc.asic, tc.addr); got != tc.want {
			t.Errorf("blockName(%v, %#x) = %q, want %q", tc.asic, tc.addr, got, tc.want)
		}
	}
	if a := asicFamily(g3.PCI_IDS_GAUDI3, 0); a != device.Gaudi3 {
		t.Errorf("asicFamily(0x1060) = %v", a)
	}
}

// TestASICByFile: a served node is a regular file without a device
// number; the INFO answer on a descriptor names the ASIC of that
// descriptor's calls until it is closed.
func TestASICByFile(t *testing.T) {
	var buf bytes.Buffer
	p := newPrinter(&buf, outputOptions{SysFS: t.TempDir()}, func(uint64) time.Time { return t0 })
	block := func() *Event {
		return synth(bpfCallCALL_HL_MEMORY, hl.DRM_IOCTL_HL_MEMORY, 0, 0, 1,
			&bpfMemBody{Op: hl.HL_MEM_OP_MAP_BLOCK, In: [3]uint64{g3.PDMAChannelBlock(1)}, Out: [2]uint64{0x2000000000001000, 4096}})
	}
	other := block()
	other.raw.Hdr.Fd = 4
	for _, c := range []struct {
		e    *Event
		want string
	}{
		{block(), "block=0x300007ffc541000 "},
		{synth(bpfCallCALL_HL_INFO, hl.DRM_IOCTL_HL_INFO, 0, 0, 1,
			&bpfInfoBody{Op: hl.HL_INFO_HW_IP_INFO, ReturnSize: 4096, DeviceId: g3.PCI_IDS_GAUDI3, Answered: 1}), "HW_IP_INFO"},
		{block(), `block="PDMA ch 1 (die 0 group 0) PQM CH_A"`},
		{other, "block=0x300007ffc541000 "}, // another descriptor
		{synth[bpfMmapBody](bpfCallCALL_CLOSE, 0, 0, 0, 1, nil), "close"},
		{block(), "block=0x300007ffc541000 "},
	} {
		buf.Reset()
		if err := p.event(c.e); err != nil {
			t.Fatal(err)
		}
		p.flush()
		if !strings.Contains(buf.String(), c.want) {
			t.Errorf("%s lacks %s", buf.String(), c.want)
		}
	}
}
