//go:build amd64 || arm64

package hl

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNameTables(t *testing.T) {
	tests := []struct {
		table map[uint32]string
		key   uint32
		want  string
	}{
		{InfoOpNames, HL_INFO_HW_IP_INFO, "HW_IP_INFO"},
		{InfoOpNames, HL_INFO_DEV_SIGNED, "DEV_SIGNED"},
		{MemOpNames, HL_MEM_OP_EXPORT_DMABUF_FD, "EXPORT_DMABUF_FD"},
		{MemFlagNames, HL_MEM_USERPTR, "USERPTR"},
		{CBOpNames, HL_CB_OP_DESTROY, "DESTROY"},
		{CSFlagNames, HL_CS_FLAGS_TIMESTAMP, "TIMESTAMP"},
		{WaitCSStatusNames, HL_WAIT_CS_STATUS_ABORTED, "ABORTED"},
		{WaitCSFlagNames, HL_WAIT_CS_FLAGS_MULTI_CS, "MULTI_CS"},
		{DebugOpNames, HL_DEBUG_OP_SET_MODE, "SET_MODE"},
		{RequestNames, DRM_IOCTL_HL_MEMORY, "MEMORY"},
		{LegacyRequestNames, HL_LEGACY_IOCTL_MEMORY, "MEMORY"},
	}
	for _, tt := range tests {
		if got := tt.table[tt.key]; got != tt.want {
			t.Errorf("name of %#x = %q, want %q", tt.key, got, tt.want)
		}
	}
	// Limits that share a prefix with the ops are not ops.
	for v, name := range InfoOpNames {
		if name == "VERSION_MAX_LEN" || name == "CARD_NAME_MAX_LEN" {
			t.Errorf("InfoOpNames[%d] = %q, a length limit", v, name)
		}
	}
	// Every op number from 0 to the highest is named, except the gaps the
	// header leaves (5, 19, 20, 39).
	var missing []uint32
	for op := uint32(0); op <= HL_INFO_DEV_SIGNED; op++ {
		if _, ok := InfoOpNames[op]; !ok {
			missing = append(missing, op)
		}
	}
	if d := cmp.Diff([]uint32{5, 19, 20, 39}, missing); d != "" {
		t.Errorf("unnamed INFO ops (-want +got):\n%s", d)
	}
}

// TestIDNameTables: the queue and engine id tables name every member of
// their enums but the _SIZE count, without the prefix (and, for Gaudi2
// engines, without the ENGINE_ID_ in the middle).
func TestIDNameTables(t *testing.T) {
	if got, want := len(Gaudi2QueueIDNames), int(GAUDI2_QUEUE_ID_SIZE); got != want {
		t.Errorf("%d Gaudi2 queue names, want %d", got, want)
	}
	if got, want := len(GaudiQueueIDNames), int(GAUDI_QUEUE_ID_SIZE); got != want {
		t.Errorf("%d Gaudi queue names, want %d", got, want)
	}
	if got, want := len(Gaudi2EngineIDNames), int(GAUDI2_ENGINE_ID_SIZE); got != want {
		t.Errorf("%d Gaudi2 engine names, want %d", got, want)
	}
	if got, want := len(GaudiEngineIDNames), int(GAUDI_ENGINE_ID_SIZE); got != want {
		t.Errorf("%d Gaudi engine names, want %d", got, want)
	}
	got := []string{
		Gaudi2QueueIDNames[GAUDI2_QUEUE_ID_PDMA_0_0],
		Gaudi2QueueIDNames[GAUDI2_QUEUE_ID_DCORE3_EDMA_1_3],
		Gaudi2QueueIDNames[GAUDI2_QUEUE_ID_CPU_PQ],
		GaudiQueueIDNames[GAUDI_QUEUE_ID_DMA_5_2],
		Gaudi2EngineIDNames[GAUDI2_DCORE0_ENGINE_ID_EDMA_0],
		Gaudi2EngineIDNames[GAUDI2_PCIE_ENGINE_ID_DEC_1],
		Gaudi2EngineIDNames[GAUDI2_ENGINE_ID_KDMA],
		GaudiEngineIDNames[GAUDI_ENGINE_ID_TPC_7],
	}
	want := []string{"PDMA_0_0", "DCORE3_EDMA_1_3", "CPU_PQ", "DMA_5_2", "DCORE0_EDMA_0", "PCIE_DEC_1", "KDMA", "TPC_7"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
}
