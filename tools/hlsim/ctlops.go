package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gaudi-go/gaudi/uapi/hl"
)

// faultKinds are the kinds of call a fault can name: the ioctls the
// simulator counts (sim.Fault.Ioctl) and the two opens.
var faultKinds = []string{"INFO", "CB", "CS", "WAIT_CS", "MEMORY", "DEBUG", "NIC", "OPEN", "OPEN_CONTROL"}

// faultOps are the sub-operations a fault of a kind can name, by the
// uapi's names without their prefix (HL_INFO_, HL_MEM_OP_, HL_CB_OP_ of
// include/uapi/drm/habanalabs_accel.h): the kinds whose arguments have an
// op field the simulator matches.
var faultOps = map[string]map[string]uint32{
	"MEMORY": {
		"ALLOC": hl.HL_MEM_OP_ALLOC, "FREE": hl.HL_MEM_OP_FREE, "MAP": hl.HL_MEM_OP_MAP,
		"UNMAP": hl.HL_MEM_OP_UNMAP, "MAP_BLOCK": hl.HL_MEM_OP_MAP_BLOCK,
		"EXPORT_DMABUF_FD": hl.HL_MEM_OP_EXPORT_DMABUF_FD, "TS_ALLOC": hl.HL_MEM_OP_TS_ALLOC,
	},
	"CB": {"CREATE": hl.HL_CB_OP_CREATE, "DESTROY": hl.HL_CB_OP_DESTROY, "INFO": hl.HL_CB_OP_INFO},
	"INFO": {
		"HW_IP_INFO": hl.HL_INFO_HW_IP_INFO, "HW_EVENTS": hl.HL_INFO_HW_EVENTS,
		"DRAM_USAGE": hl.HL_INFO_DRAM_USAGE, "HW_IDLE": hl.HL_INFO_HW_IDLE,
		"DEVICE_STATUS": hl.HL_INFO_DEVICE_STATUS, "DEVICE_UTILIZATION": hl.HL_INFO_DEVICE_UTILIZATION,
		"HW_EVENTS_AGGREGATE": hl.HL_INFO_HW_EVENTS_AGGREGATE, "CLK_RATE": hl.HL_INFO_CLK_RATE,
		"RESET_COUNT": hl.HL_INFO_RESET_COUNT, "TIME_SYNC": hl.HL_INFO_TIME_SYNC,
		"CS_COUNTERS": hl.HL_INFO_CS_COUNTERS, "PCI_COUNTERS": hl.HL_INFO_PCI_COUNTERS,
		"CLK_THROTTLE_REASON": hl.HL_INFO_CLK_THROTTLE_REASON, "SYNC_MANAGER": hl.HL_INFO_SYNC_MANAGER,
		"TOTAL_ENERGY": hl.HL_INFO_TOTAL_ENERGY, "PLL_FREQUENCY": hl.HL_INFO_PLL_FREQUENCY,
		"POWER": hl.HL_INFO_POWER, "OPEN_STATS": hl.HL_INFO_OPEN_STATS,
		"DRAM_REPLACED_ROWS": hl.HL_INFO_DRAM_REPLACED_ROWS, "DRAM_PENDING_ROWS": hl.HL_INFO_DRAM_PENDING_ROWS,
		"LAST_ERR_OPEN_DEV_TIME": hl.HL_INFO_LAST_ERR_OPEN_DEV_TIME, "CS_TIMEOUT_EVENT": hl.HL_INFO_CS_TIMEOUT_EVENT,
		"RAZWI_EVENT": hl.HL_INFO_RAZWI_EVENT, "DEV_MEM_ALLOC_PAGE_SIZES": hl.HL_INFO_DEV_MEM_ALLOC_PAGE_SIZES,
		"SECURED_ATTESTATION": hl.HL_INFO_SECURED_ATTESTATION, "REGISTER_EVENTFD": hl.HL_INFO_REGISTER_EVENTFD,
		"UNREGISTER_EVENTFD": hl.HL_INFO_UNREGISTER_EVENTFD, "GET_EVENTS": hl.HL_INFO_GET_EVENTS,
		"UNDEFINED_OPCODE_EVENT": hl.HL_INFO_UNDEFINED_OPCODE_EVENT, "ENGINE_STATUS": hl.HL_INFO_ENGINE_STATUS,
		"PAGE_FAULT_EVENT": hl.HL_INFO_PAGE_FAULT_EVENT, "USER_MAPPINGS": hl.HL_INFO_USER_MAPPINGS,
		"FW_GENERIC_REQ": hl.HL_INFO_FW_GENERIC_REQ, "HW_ERR_EVENT": hl.HL_INFO_HW_ERR_EVENT,
		"FW_ERR_EVENT": hl.HL_INFO_FW_ERR_EVENT, "USER_ENGINE_ERR_EVENT": hl.HL_INFO_USER_ENGINE_ERR_EVENT,
		"DEV_SIGNED": hl.HL_INFO_DEV_SIGNED,
	},
}

// parseKind reads a fault's kind, in any case; an unknown kind is an
// error that lists the known ones.
func parseKind(s string) (string, error) {
	k := strings.ToUpper(s)
	for _, known := range faultKinds {
		if k == known {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown kind %q (want one of %s)", s, strings.Join(faultKinds, ", "))
}

// parseOp reads the sub-operation of a fault of kind: a number, or a name
// of faultOps[kind] in any case, with or without the uapi's prefix
// ("ALLOC", "HL_MEM_OP_ALLOC").
func parseOp(kind, s string) (uint32, error) {
	if v, err := strconv.ParseUint(s, 0, 32); err == nil {
		return uint32(v), nil
	}
	ops, ok := faultOps[kind]
	if !ok {
		return 0, fmt.Errorf("bad op %q: %s has no named ops (give a number)", s, kind)
	}
	name := strings.ToUpper(s)
	for _, p := range []string{"HL_MEM_OP_", "HL_CB_OP_", "HL_INFO_"} {
		name = strings.TrimPrefix(name, p)
	}
	if v, ok := ops[name]; ok {
		return v, nil
	}
	return 0, fmt.Errorf("bad op %q for %s (want a number or one of %s)", s, kind, strings.Join(opNames(kind), ", "))
}

// opName is the name of op of kind, or its number when it has none.
func opName(kind string, op uint32) string {
	for name, v := range faultOps[kind] {
		if v == op {
			return name
		}
	}
	return strconv.FormatUint(uint64(op), 10)
}

// opNames lists the names of kind's ops in order.
func opNames(kind string) []string {
	var names []string
	for n := range faultOps[kind] {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return faultOps[kind][names[i]] < faultOps[kind][names[j]] })
	return names
}
