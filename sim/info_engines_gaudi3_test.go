package sim

import (
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/packet"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// gaudi3EngineText returns the strings of INFO ENGINE_STATUS on f (the
// NUL-separated table, the empty tail after the last NUL dropped).
func gaudi3EngineText(t *testing.T, f *File) []string {
	t.Helper()
	buf := poisoned(64 << 10)
	a, err := callInfo(f, infoReq{op: hl.HL_INFO_ENGINE_STATUS, size: uint32(len(buf))}, buf)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(buf[:a.UserBufferActualSize()]), "\x00")
	if parts[len(parts)-1] != "" {
		t.Fatalf("engine table does not end with a NUL: %q", parts[len(parts)-1])
	}
	return parts[:len(parts)-1]
}

// The expected text is written out from gaudi3_is_device_idle's format
// strings (gaudi3.c @f9523baa), not from the simulator's constants.
func TestGaudi3EngineStatusText(t *testing.T) {
	_, _, f := openSim(t, Gaudi3)
	parts := gaudi3EngineText(t, f)

	wantHeaders := []string{
		"\nDIE  PDMA  is_idle  PQM_GLBL_STS  PQM_CGM_STS  DMA_STATUS  DMA_AXI_CNT\n" +
			"---  ----  -------  ------------  -----------  ----------  -----------\n",
		"\nDIE  PDMA_DUP  is_idle  DUP_STATUS\n" +
			"---  --------  -------  ----------\n",
		"\nHD  EDMA  is_idle  QM_GLBL_STS0  QM_GLBL_STS1  QM_CGM_STS  DMA_STATUS  DBG_STS\n" +
			"--  ----  -------  ------------  ------------  ----------  ----------  -------\n",
		"\nHD  TPC  is_idle  QM_GLBL_STS0  QM_GLBL_STS1  QM_CGM_STS  STATUS      TSB_INFLIGHT_CNTR  WQ_INFLIGHT_CNTR\n" +
			"--  ---  -------  ------------  ------------  ----------  ------      -----------------  ----------------\n",
		"\nHD  MME  is_idle  QM_GLBL_STS0  QM_GLBL_STS1  QM_CGM_STS  ARCH_STATUS_MASTER  ARCH_STATUS_SLAVE\n" +
			"--  ---  -------  ------------  ------------  ----------  ------------------  -----------------\n",
		"\nHD  ROT  is_idle  QM_GLBL_STS0  QM_GLBL_STS1  QM_CGM_STS  RSB_INFO    WBC_INFO\n" +
			"--  ---  -------  ------------  ------------  ----------  --------    --------\n",
		"\nHD  DEC  is_idle  VSI_CMD_SWREG15\n" +
			"--  ---  -------  ---------------\n",
		"\nHD  ARC_FARM_DUP  is_idle  DUP_STATUS\n" +
			"--  ------------  -------  ----------\n",
	}
	// Rows per table with the default masks: 4 PDMA groups, 4 PDMA dup
	// engines, 8 EDMAs, 64 TPCs, 8 MMEs, 6 rotators (0x77), 16 decoders,
	// 16 scheduler ARCs.
	wantRows := []int{4, 4, 8, 64, 8, 6, 14, 16} // decoders: 0x7F7F

	var headers []string
	var rows []int
	for _, p := range parts {
		if strings.HasPrefix(p, "\n") {
			headers = append(headers, p)
			rows = append(rows, 0)
			continue
		}
		if len(rows) == 0 {
			t.Fatalf("row %q before any header", p)
		}
		rows[len(rows)-1]++
	}
	if len(headers) != len(wantHeaders) {
		t.Fatalf("%d tables, want %d:\n%q", len(headers), len(wantHeaders), headers)
	}
	for i := range headers {
		if headers[i] != wantHeaders[i] {
			t.Errorf("table %d header\n%q\nwant\n%q", i, headers[i], wantHeaders[i])
		}
		if rows[i] != wantRows[i] {
			t.Errorf("table %d has %d rows, want %d", i, rows[i], wantRows[i])
		}
	}

	// Rows, by index in parts: the first and last of each table, and the
	// rotators whose binning leaves gaps.
	want := map[int]string{
		1:   "0    0     Y        0x3           0x700        0           0\n",
		4:   "1    1     Y        0x3           0x700        0           0\n",
		6:   "0    0         Y        0\n",
		9:   "1    1         Y        0\n",
		11:  "1   0     Y        0x3           0x1           0xf00       0           0x3e\n",
		18:  "6   1     Y        0x3           0x1           0xf00       0           0x3e\n",
		20:  "0   0    Y        0x3           0x1           0xf00       0xea        0                  0\n",
		83:  "7   7    Y        0x3           0x1           0xf00       0xea        0                  0\n",
		85:  "0   0    Y        0x3           0x1           0xf00       0xc00fff00          0xc00fff00\n",
		92:  "7   0    Y        0x3           0x1           0xf00       0xc00fff00          0xc00fff00\n",
		94:  "1   0    Y        0x3           0x1           0xf00       0x3         0x3\n",
		95:  "1   1    Y        0x3           0x1           0xf00       0x3         0x3\n",
		96:  "3   0    Y        0x3           0x1           0xf00       0x3         0x3\n",
		97:  "4   0    Y        0x3           0x1           0xf00       0x3         0x3\n",
		99:  "6   0    Y        0x3           0x1           0xf00       0x3         0x3\n",
		101: "0   0    Y        0\n",
		107: "3   0    Y        0\n", // decoder 1 of HDCORE 3, the last of die 0, is binned
		108: "4   0    Y        0\n",
		114: "7   0    Y        0\n", // and HDCORE 7's, the last of die 1
		116: "0   0             Y        0\n",
		131: "7   1             Y        0\n",
	}
	if len(parts) != 132 {
		t.Fatalf("%d strings in the engine table, want 132", len(parts))
	}
	for i, w := range want {
		if parts[i] != w {
			t.Errorf("string %d = %q, want %q", i, parts[i], w)
		}
	}
	if strings.Contains(strings.Join(parts, ""), "CORE") {
		t.Error("Gaudi2's CORE columns in Gaudi3's table")
	}

	var idle hl.InfoHWIdle
	readStruct(t, f, infoReq{op: hl.HL_INFO_HW_IDLE}, &idle)
	if idle != (hl.InfoHWIdle{IsIdle: 1}) {
		t.Errorf("HW_IDLE %+v on an idle device", idle)
	}
}

// TestGaudi3EngineStatusBusyPDMA: a PDMA channel whose ring waits on a
// FENCE is busy: its group's row shows N and the channel's bit of the
// DMA_STATUS IDLE field (16 + channel in group), and HW_IDLE names its
// engine id; released, the channel is idle again.
func TestGaudi3EngineStatusBusyPDMA(t *testing.T) {
	_, _, f := openSim(t, Gaudi3)
	// Channel 7 is die 0, group 1, channel 1: engine 127, bit 63 of word
	// 1. Channel 13 is die 1, group 0, channel 1: engine 133, bit 5 of
	// word 2.
	u7 := newPQMUser(t, f, 7, 4096)
	u13 := newPQMUser(t, f, 13, 4096)
	fence := pqmPackets(t, func(b *packet.Builder) {
		b.Gaudi3Fence(packet.Gaudi3Fence{ID: 0, Target: 1, Dec: 1})
	})
	u7.push(fence)
	u13.push(fence)

	parts := gaudi3EngineText(t, f)
	wantPDMA := []string{
		"0    0     Y        0x3           0x700        0           0\n",
		"0    1     N        0x3           0x700        0x20000     0\n",
		"1    0     N        0x3           0x700        0x20000     0\n",
		"1    1     Y        0x3           0x700        0           0\n",
	}
	for i, w := range wantPDMA {
		if parts[1+i] != w {
			t.Errorf("PDMA row %d = %q, want %q", i, parts[1+i], w)
		}
	}
	var idle hl.InfoHWIdle
	readStruct(t, f, infoReq{op: hl.HL_INFO_HW_IDLE}, &idle)
	want := hl.InfoHWIdle{BusyEnginesMaskExt: [4]uint64{0, 1 << 63, 1 << 5, 0}}
	if idle != want {
		t.Errorf("HW_IDLE %+v, want %+v", idle, want)
	}
	if id := g3.PDMAChannelEngine(7); id != g3.GAUDI3_DIE0_ENGINE_ID_PDMA_1_CH_1 || int(id) != 64+63 {
		t.Errorf("channel 7 is engine %d", id)
	}

	u7.setReg(g3.PDMA_CH_A_PQM_CH_FENCE_INC_0, 1)
	u13.setReg(g3.PDMA_CH_A_PQM_CH_FENCE_INC_0, 1)
	u7.waitCI()
	u13.waitCI()
	parts = gaudi3EngineText(t, f)
	for i := range 4 {
		if !strings.HasPrefix(parts[1+i][11:], "Y ") {
			t.Errorf("PDMA row %d after the fences: %q", i, parts[1+i])
		}
	}
	readStruct(t, f, infoReq{op: hl.HL_INFO_HW_IDLE}, &idle)
	if idle != (hl.InfoHWIdle{IsIdle: 1}) {
		t.Errorf("HW_IDLE %+v after the fences", idle)
	}
}

// TestGaudi3PDMAGroupRules: the busy-channel rule of
// gaudi3_is_pdma_group_idle for register values the simulator itself does
// not produce.
func TestGaudi3PDMAGroupRules(t *testing.T) {
	for _, c := range []struct {
		name string
		g    g3PDMAGroup
		idle bool
		busy uint32
	}{
		{"idle", g3PDMAGroup{glblSts: 0x3, cgmSts: 0x700}, true, 0},
		{"channel 5", g3PDMAGroup{glblSts: 0x3, cgmSts: 0x700, dmaStatus: 0x200000}, false, 0x20},
		{"halt bits only", g3PDMAGroup{glblSts: 0x3, cgmSts: 0x700, dmaStatus: 0x3F}, true, 0},
		{"engine busy", g3PDMAGroup{glblSts: 0x7, cgmSts: 0x700}, false, 0x3F},
		{"CP not idle", g3PDMAGroup{glblSts: 0x2, cgmSts: 0x700}, false, 0x3F},
		{"CGM agent busy", g3PDMAGroup{glblSts: 0x3, cgmSts: 0x600}, false, 0x3F},
		{"AXI writes", g3PDMAGroup{glblSts: 0x3, cgmSts: 0x700, axiCnt: true}, false, 0x3F},
	} {
		if idle, _ := c.g.idle(); idle != c.idle || c.g.busyChannels() != c.busy {
			t.Errorf("%s: idle %v busy %#x, want %v %#x", c.name, idle, c.g.busyChannels(), c.idle, c.busy)
		}
	}
}
