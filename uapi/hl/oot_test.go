//go:build amd64 || arm64

package hl

import (
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

// TestOOTLayout pins the out-of-tree additions to the sizes and offsets of
// the out-of-tree header (HabanaAI/drivers.accel.habanalabs.kernel
// include/uapi/drm/habanalabs_accel.h at 1646573d; checked with gcc during
// development), so an edit of oot.go that moves a member fails here.
func TestOOTLayout(t *testing.T) {
	var (
		nic  NICArgs
		app  NICGetUserAppParamsOut
		cnt  InfoHabanaLinkCounters
		die  InfoTimeSyncPerDie
		mod  InfoModuleParams
		reg  MemRegDmabufFDArgs
		hwip InfoHWIPInfo
	)
	got := map[string]uintptr{
		"sizeof(struct hl_nic_args)":                          unsafe.Sizeof(nic),
		"hl_nic_args.input_ptr":                               unsafe.Offsetof(nic.InputPtr),
		"hl_nic_args.output_ptr":                              unsafe.Offsetof(nic.OutputPtr),
		"hl_nic_args.input_size":                              unsafe.Offsetof(nic.InputSize),
		"hl_nic_args.output_size":                             unsafe.Offsetof(nic.OutputSize),
		"hl_nic_args.ctx_id":                                  unsafe.Offsetof(nic.CtxID),
		"hl_nic_args.op":                                      unsafe.Offsetof(nic.Op),
		"sizeof(struct hl_nic_get_user_app_params_in)":        unsafe.Sizeof(NICGetUserAppParamsIn{}),
		"sizeof(struct hl_nic_get_user_app_params_out)":       unsafe.Sizeof(app),
		"hl_nic_get_user_app_params_out.speed":                unsafe.Offsetof(app.Speed),
		"hl_nic_get_user_app_params_out.nic_macro_idx":        unsafe.Offsetof(app.NICMacroIdx),
		"hl_nic_get_user_app_params_out.base_coll_qp_idx":     unsafe.Offsetof(app.BaseCollQPIdx),
		"sizeof(struct hl_info_habana_link_state)":            unsafe.Sizeof(InfoHabanaLinkState{}),
		"sizeof(struct hl_info_habana_link_counters)":         unsafe.Sizeof(cnt),
		"hl_info_habana_link_counters.num_of_stat":            unsafe.Offsetof(cnt.NumOfStat),
		"sizeof(struct hl_info_time_sync_per_die)":            unsafe.Sizeof(die),
		"hl_info_time_sync_per_die.device_time":               unsafe.Offsetof(die.DeviceTime),
		"sizeof(struct hl_info_memory_consumption)":           unsafe.Sizeof(InfoMemoryConsumption{}),
		"sizeof(struct hl_info_module_params)":                unsafe.Sizeof(mod),
		"hl_info_module_params.nic_lanes_per_port":            unsafe.Offsetof(mod.NICLanesPerPort),
		"sizeof(union hl_mem_args)":                           unsafe.Sizeof(reg),
		"hl_mem_args.in.reg_dmabuf_fd.length":                 unsafe.Offsetof(reg.Length),
		"hl_mem_args.in.op":                                   unsafe.Offsetof(reg.Op),
		"hl_mem_args.in.ctx_id":                               unsafe.Offsetof(reg.CtxID),
		"hl_info_hw_ip_info.pdma_user_owned_ch_mask":          unsafe.Offsetof(hwip.Reserved3),
		"hl_info_hw_ip_info.nic_ports_mask":                   unsafe.Offsetof(hwip.Reserved4),
		"hl_info_hw_ip_info.odp_supported":                    unsafe.Offsetof(hwip.Reserved7),
		"hl_info_hw_ip_info.sched_arc_enabled_mask":           unsafe.Offsetof(hwip.Reserved9),
		"hl_open_stats_info.compute_ctx_has_mapped_resources": unsafe.Offsetof(OpenStatsInfo{}.Pad),
	}
	want := map[string]uintptr{
		"sizeof(struct hl_nic_args)":                          32,
		"hl_nic_args.input_ptr":                               0,
		"hl_nic_args.output_ptr":                              8,
		"hl_nic_args.input_size":                              16,
		"hl_nic_args.output_size":                             20,
		"hl_nic_args.ctx_id":                                  24,
		"hl_nic_args.op":                                      28,
		"sizeof(struct hl_nic_get_user_app_params_in)":        8,
		"sizeof(struct hl_nic_get_user_app_params_out)":       48,
		"hl_nic_get_user_app_params_out.speed":                20,
		"hl_nic_get_user_app_params_out.nic_macro_idx":        24,
		"hl_nic_get_user_app_params_out.base_coll_qp_idx":     44,
		"sizeof(struct hl_info_habana_link_state)":            8,
		"sizeof(struct hl_info_habana_link_counters)":         24,
		"hl_info_habana_link_counters.num_of_stat":            16,
		"sizeof(struct hl_info_time_sync_per_die)":            32,
		"hl_info_time_sync_per_die.device_time":               8,
		"sizeof(struct hl_info_memory_consumption)":           16,
		"sizeof(struct hl_info_module_params)":                128,
		"hl_info_module_params.nic_lanes_per_port":            120,
		"sizeof(union hl_mem_args)":                           40,
		"hl_mem_args.in.reg_dmabuf_fd.length":                 8,
		"hl_mem_args.in.op":                                   24,
		"hl_mem_args.in.ctx_id":                               32,
		"hl_info_hw_ip_info.pdma_user_owned_ch_mask":          240,
		"hl_info_hw_ip_info.nic_ports_mask":                   256,
		"hl_info_hw_ip_info.odp_supported":                    276,
		"hl_info_hw_ip_info.sched_arc_enabled_mask":           284,
		"hl_open_stats_info.compute_ctx_has_mapped_resources": 18,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("out-of-tree layout (-header +Go):\n%s", diff)
	}
	// The request number: _IOWR('d', DRM_COMMAND_BASE + HL_IOCTL_NIC, 32 bytes).
	const iowr = 3
	req := uint32(iowr)<<30 | uint32(unsafe.Sizeof(nic))<<16 | uint32(DRM_IOCTL_BASE)<<8 | (DRM_COMMAND_BASE + HL_IOCTL_NIC)
	if req != DRM_IOCTL_HL_NIC {
		t.Errorf("DRM_IOCTL_HL_NIC = %#x, computed %#x", uint32(DRM_IOCTL_HL_NIC), req)
	}
	// The MEMORY view's answer overlays the same storage as MemArgs'.
	reg.Out().SetDeviceVirtAddr(0x1234)
	if reg.FD != 0x1234 {
		t.Errorf("MemRegDmabufFDArgs.Out does not overlay the arguments")
	}
}

// The out-of-tree name tables add ops upstream does not have and name every
// NIC op once.
func TestOutOfTreeNames(t *testing.T) {
	for _, tc := range []struct {
		name             string
		upstream, extras map[uint32]string
	}{
		{"INFO", InfoOpNames, OutOfTreeInfoOpNames},
		{"MEMORY", MemOpNames, OutOfTreeMemOpNames},
		{"DEBUG", DebugOpNames, OutOfTreeDebugOpNames},
	} {
		for op, name := range tc.extras {
			if up, ok := tc.upstream[op]; ok {
				t.Errorf("%s op %d is upstream's %s and out-of-tree %s", tc.name, op, up, name)
			}
		}
	}
	if len(NICOpNames) != HL_NIC_OP_DUMP_QP+1 {
		t.Errorf("%d NIC op names, want %d", len(NICOpNames), HL_NIC_OP_DUMP_QP+1)
	}
	for op := uint32(0); op <= HL_NIC_OP_DUMP_QP; op++ {
		if NICOpNames[op] == "" {
			t.Errorf("NIC op %d has no name", op)
		}
	}
}
