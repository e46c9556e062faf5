package strict

import (
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
)

// Use tells how the driver uses the memory of a Region.
type Use uint8

const (
	// In is memory the driver only reads, such as a chunk array: it must
	// hold the same bytes from the start of the call to its end.
	In Use = iota + 1
	// Out is memory the driver writes its answer to, such as INFO's
	// return buffer.
	Out
	// Shared is memory whose bytes may change during the call by design:
	// the counter a user-address interrupt wait watches, or host memory
	// given to MAP.
	Shared
)

// Region is memory an ioctl argument names by address.
type Region struct {
	What string // the member, as "CS chunks_execute"
	Addr uint64
	Len  uint64
	Use  Use
}

// Regions returns what the argument of ioctl nr (hl.HL_IOCTL_*, not the
// request number) at arg names by address, as the driver reads and writes
// it (drivers/accel/habanalabs/common: _hl_info_ioctl, hl_debug_ioctl,
// hl_cs_copy_chunk_array, cs_ioctl_extract_signal_seq,
// cs_ioctl_engine_cores, cs_ioctl_engines, hl_multi_cs_wait_ioctl,
// _hl_interrupt_wait_ioctl_user_addr, hl_pin_host_memory). Host memory
// given to MAP is named by its first page at most. read copies len(b)
// bytes of the caller's memory at addr into b and reports whether it
// could; Regions uses it to find the sequence array of a wait CS, which
// its chunk names. Addresses are read as integers, so the result does not
// depend on how the Go types spell them.
func Regions(nr uint, arg unsafe.Pointer, read func(addr uint64, b []byte) bool) []Region {
	var rs []Region
	return AppendRegions(rs, nr, arg, read)
}

// AppendRegions is Regions appending to rs.
func AppendRegions(rs []Region, nr uint, arg unsafe.Pointer, read func(addr uint64, b []byte) bool) []Region {
	u64 := func(off uintptr) uint64 { return *(*uint64)(unsafe.Add(arg, off)) }
	add := func(what string, addr, n uint64, use Use) {
		if addr != 0 && n != 0 {
			rs = append(rs, Region{what, addr, n, use})
		}
	}
	switch nr {
	case hl.HL_IOCTL_INFO:
		a := (*hl.InfoArgs)(arg)
		add("INFO return_pointer", u64(0), infoWrites(a.Op, uint64(a.ReturnSize)), Out)
	case hl.HL_IOCTL_DEBUG:
		a := (*hl.DebugArgs)(arg)
		add("DEBUG input_ptr", u64(0), uint64(a.InputSize), In)
		add("DEBUG output_ptr", u64(8), uint64(a.OutputSize), Out)
	case hl.HL_IOCTL_CS:
		in := (*hl.CSArgs)(arg).In()
		switch {
		case in.CSFlags&hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND != 0:
			add("CS engine_cores", in.EngineCores(), 4*uint64(in.NumEngineCores()), In)
		case in.CSFlags&hl.HL_CS_FLAGS_ENGINES_COMMAND != 0:
			add("CS engines", in.Engines(), 4*uint64(in.NumEngines()), In)
		case in.CSFlags&(hl.HL_CS_FLAGS_RESERVE_SIGNALS_ONLY|hl.HL_CS_FLAGS_UNRESERVE_SIGNALS_ONLY|hl.HL_CS_FLAGS_FLUSH_PCI_HBW_WRITES) != 0:
		default:
			size := uint64(unsafe.Sizeof(hl.CSChunk{}))
			// The driver reads the restore chunks on a context switch
			// (the context's first CS) and with FORCE_RESTORE.
			add("CS chunks_restore", in.ChunksRestore(), size*uint64(in.NumChunksRestore), In)
			add("CS chunks_execute", in.ChunksExecute(), size*uint64(in.NumChunksExecute), In)
			wait := in.CSFlags&(hl.HL_CS_FLAGS_WAIT|hl.HL_CS_FLAGS_COLLECTIVE_WAIT) != 0
			if wait && in.CSFlags&hl.HL_CS_FLAGS_ENCAP_SIGNALS == 0 && in.NumChunksExecute > 0 && in.ChunksExecute() != 0 {
				var c hl.CSChunk
				if read(in.ChunksExecute(), unsafe.Slice((*byte)(unsafe.Pointer(&c)), unsafe.Sizeof(c))) {
					add("CS chunk signal_seq_arr", c.SignalSeqArr(), 8*uint64(c.NumSignalSeqArr()), In)
				}
			}
		}
	case hl.HL_IOCTL_WAIT_CS:
		in := (*hl.WaitCSArgs)(arg).In()
		switch {
		case in.Flags&hl.HL_WAIT_CS_FLAGS_MULTI_CS != 0:
			add("WAIT_CS multi-CS seq array", in.Seq(), 8*uint64(in.SeqArrLen()), In)
		case in.Flags&hl.HL_WAIT_CS_FLAGS_INTERRUPT != 0 && in.Flags&hl.HL_WAIT_CS_FLAGS_INTERRUPT_KERNEL_CQ == 0:
			add("WAIT_CS interrupt addr", u64(0), 8, Shared)
		}
	case hl.HL_IOCTL_MEMORY:
		in := (*hl.MemArgs)(arg).In()
		if in.Op == hl.HL_MEM_OP_MAP && in.Flags&hl.HL_MEM_USERPTR != 0 {
			add("MEMORY map host_virt_addr", in.MapHost().HostVirtAddr, min(in.MapHost().MemSize, 4096), Shared)
		}
	case hl.HL_IOCTL_NIC: // the out-of-tree driver's (hl_nic_ioctl, cn_control)
		a := (*hl.NICArgs)(arg)
		add("NIC input_ptr", u64(0), uint64(a.InputSize), In)
		add("NIC output_ptr", u64(8), uint64(a.OutputSize), Out)
	}
	return rs
}

// infoWrites returns how many bytes of the return buffer INFO op writes
// when return_size is size: the driver copies min(size, its answer's
// size) (drivers/accel/habanalabs/common/habanalabs_ioctl.c, the function
// named for each op), nothing when it refuses the size, and up to size
// for answers whose length the driver or the firmware decides.
func infoWrites(op uint32, size uint64) uint64 {
	var answer uint64
	switch op {
	case hl.HL_INFO_HW_IP_INFO: // hw_ip_info
		answer = uint64(unsafe.Sizeof(hl.InfoHWIPInfo{}))
	case hl.HL_INFO_DEVICE_STATUS: // device_status_info
		answer = uint64(unsafe.Sizeof(hl.InfoDeviceStatus{}))
	case hl.HL_INFO_DRAM_USAGE: // dram_usage_info
		answer = uint64(unsafe.Sizeof(hl.InfoDRAMUsage{}))
	case hl.HL_INFO_HW_IDLE: // hw_idle
		answer = uint64(unsafe.Sizeof(hl.InfoHWIdle{}))
	case hl.HL_INFO_DEVICE_UTILIZATION: // device_utilization
		answer = uint64(unsafe.Sizeof(hl.InfoDeviceUtilization{}))
	case hl.HL_INFO_CLK_RATE: // get_clk_rate
		answer = uint64(unsafe.Sizeof(hl.InfoClkRate{}))
	case hl.HL_INFO_RESET_COUNT: // get_reset_count
		answer = uint64(unsafe.Sizeof(hl.InfoResetCount{}))
	case hl.HL_INFO_TIME_SYNC: // time_sync_info
		answer = uint64(unsafe.Sizeof(hl.InfoTimeSync{}))
	case hl.HL_INFO_CS_COUNTERS: // cs_counters_info
		answer = uint64(unsafe.Sizeof(hl.InfoCSCounters{}))
	case hl.HL_INFO_PCI_COUNTERS: // pci_counters_info
		answer = uint64(unsafe.Sizeof(hl.InfoPCICounters{}))
	case hl.HL_INFO_CLK_THROTTLE_REASON: // clk_throttle_info
		answer = uint64(unsafe.Sizeof(hl.InfoClkThrottle{}))
	case hl.HL_INFO_SYNC_MANAGER: // sync_manager_info
		answer = uint64(unsafe.Sizeof(hl.InfoSyncManager{}))
	case hl.HL_INFO_TOTAL_ENERGY: // total_energy_consumption_info
		answer = uint64(unsafe.Sizeof(hl.InfoEnergy{}))
	case hl.HL_INFO_PLL_FREQUENCY: // pll_frequency_info
		answer = uint64(unsafe.Sizeof(hl.PLLFrequencyInfo{}))
	case hl.HL_INFO_POWER: // power_info
		answer = uint64(unsafe.Sizeof(hl.PowerInfo{}))
	case hl.HL_INFO_OPEN_STATS: // open_stats_info
		answer = uint64(unsafe.Sizeof(hl.OpenStatsInfo{}))
	case hl.HL_INFO_DRAM_PENDING_ROWS: // dram_pending_rows_info: a u32
		answer = 4
	case hl.HL_INFO_LAST_ERR_OPEN_DEV_TIME: // last_err_open_dev_info
		answer = uint64(unsafe.Sizeof(hl.InfoLastErrOpenDevTime{}))
	case hl.HL_INFO_CS_TIMEOUT_EVENT: // cs_timeout_info
		answer = uint64(unsafe.Sizeof(hl.InfoCSTimeoutEvent{}))
	case hl.HL_INFO_RAZWI_EVENT: // razwi_info
		answer = uint64(unsafe.Sizeof(hl.InfoRazwiEvent{}))
	case hl.HL_INFO_DEV_MEM_ALLOC_PAGE_SIZES: // dev_mem_alloc_page_sizes_info
		answer = uint64(unsafe.Sizeof(hl.InfoDevMemallocPageSizes{}))
	case hl.HL_INFO_SECURED_ATTESTATION: // sec_attest_info
		answer = uint64(unsafe.Sizeof(hl.InfoSecAttest{}))
	case hl.HL_INFO_DEV_SIGNED: // dev_info_signed
		answer = uint64(unsafe.Sizeof(hl.InfoSigned{}))
	case hl.HL_INFO_UNDEFINED_OPCODE_EVENT: // undefined_opcode_info
		answer = uint64(unsafe.Sizeof(hl.InfoUndefinedOpcodeEvent{}))
	case hl.HL_INFO_PAGE_FAULT_EVENT: // page_fault_info
		answer = uint64(unsafe.Sizeof(hl.PageFaultInfo{}))
	case hl.HL_INFO_REGISTER_EVENTFD, hl.HL_INFO_UNREGISTER_EVENTFD:
		// eventfd_register, eventfd_unregister: the fd is in the
		// arguments; the return buffer is not used.
		return 0
	case hl.HL_INFO_GET_EVENTS: // events_info: a u64, or EINVAL below it
		answer = 8
		if size < answer {
			return 0
		}
	case hl.HL_INFO_HW_ERR_EVENT, hl.HL_INFO_FW_ERR_EVENT, hl.HL_INFO_USER_ENGINE_ERR_EVENT:
		// hw_err_info, fw_err_info, engine_err_info: the whole event, or
		// ENOMEM when it does not fit.
		switch op {
		case hl.HL_INFO_HW_ERR_EVENT:
			answer = uint64(unsafe.Sizeof(hl.InfoHWErrEvent{}))
		case hl.HL_INFO_FW_ERR_EVENT:
			answer = uint64(unsafe.Sizeof(hl.InfoFWErrEvent{}))
		default:
			answer = uint64(unsafe.Sizeof(hl.InfoEngineErrEvent{}))
		}
		if size < answer {
			return 0
		}
	default:
		// hw_events_info (the ASIC's event table), engine_status_info
		// (the text the ASIC prints), user_mappings_info (the recorded
		// mappings), send_fw_generic_request (the firmware's answer),
		// dram_replaced_rows_info (cpucp_hbm_row_info, which uapi/hl
		// does not mirror), the out-of-tree driver's ops and unknown
		// ones: up to size.
		return size
	}
	return min(size, answer)
}
