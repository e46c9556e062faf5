package main

// hdrSpec names one header: its path in the kernel tree and how the C check
// includes it.
type hdrSpec struct {
	path    string // relative to the kernel source root
	include string // what the check program #includes
}

// builtin is a constant a header uses but takes from a header we do not
// parse (drm/drm.h).
type builtin struct {
	val   int64
	cExpr string
}

// extraRequest is an ioctl request number the current headers no longer
// spell, such as the legacy 'H' encoding of the habanalabs ioctls.
type extraRequest struct {
	name, dir, magic, nr, arg, group string
}

// pkgSpec is the generator's table for one uapi package.
type pkgSpec struct {
	dir     string // output directory, relative to the module root
	pkg     string // Go package name
	doc     string // one line for the package overview
	headers []hdrSpec
	prelude string // C text the check puts before the includes
	// supplied declares, in C, aggregates the headers use but take from
	// headers the parser cannot read (linux/in6.h's conditionals, for
	// one). They are emitted only where a kept type uses them, and the ABI
	// proof checks them against the real headers like every other type.
	supplied      string
	includeDirs   []string
	stripPrefixes []string
	builtins      map[string]builtin
	builtinOrder  []string
	skipDefines   map[string]string // name -> why it has no Go constant
	keepType      func(tag string) bool
	extraRequests []extraRequest
	packetPrefix  string // e.g. "GAUDI_PKT_": shift/mask pairs to prove on packet bytes
	names         []nameTable
	// userPointers names, as "<C type>.<member path>", the members that
	// hold an address in the caller's memory, with the reason; see
	// pointers.go.
	userPointers map[string]string
	views        []viewSpec
}

// nameTable asks for a map from the values of a family of constants to
// their names without the prefix, for error messages and tracers.
type nameTable struct {
	goName   string
	doc      string
	keyType  string
	prefix   string
	excludes []string // constants whose names contain one of these are not members
	enum     bool     // the constants are members of a named enum (typed)
	// goType, when set, takes only the members of the enum of that Go
	// type, which is then also the key type.
	goType string
	// cut is removed from a name after the prefix, where the enum spells
	// it in the middle (GAUDI2_DCORE0_ENGINE_ID_EDMA_0 is DCORE0_EDMA_0).
	cut string
}

var hlLegacy = func() []extraRequest {
	var out []extraRequest
	for _, x := range []struct{ op, arg string }{
		{"INFO", "struct hl_info_args"}, {"CB", "union hl_cb_args"}, {"CS", "union hl_cs_args"},
		{"WAIT_CS", "union hl_wait_cs_args"}, {"MEMORY", "union hl_mem_args"}, {"DEBUG", "struct hl_debug_args"},
	} {
		out = append(out, extraRequest{
			name: "HL_LEGACY_IOCTL_" + x.op, dir: "_IOWR", magic: "'H'", nr: "HL_IOCTL_" + x.op + " + 1", arg: x.arg,
			group: "Legacy ioctl request numbers: type 'H', number HL_IOCTL_* + 1, as kernels up to 6.5 spelled them for /dev/hlN",
		})
	}
	return out
}()

// rdmaVerbsTypes are the structs of ib_user_verbs.h an RDMA control path
// needs: the write-command headers and the commands up to memory regions.
var rdmaVerbsTypes = map[string]bool{
	"ib_uverbs_cmd_hdr": true, "ib_uverbs_ex_cmd_hdr": true,
	"ib_uverbs_get_context": true, "ib_uverbs_get_context_resp": true,
	"ib_uverbs_query_device": true, "ib_uverbs_query_device_resp": true,
	"ib_uverbs_query_port": true, "ib_uverbs_query_port_resp": true,
	"ib_uverbs_alloc_pd": true, "ib_uverbs_alloc_pd_resp": true, "ib_uverbs_dealloc_pd": true,
	"ib_uverbs_reg_mr": true, "ib_uverbs_reg_mr_resp": true, "ib_uverbs_dereg_mr": true,
	"ib_uverbs_rereg_mr": true, "ib_uverbs_rereg_mr_resp": true,
	"ib_uverbs_query_port_resp_ex": true, "ib_uverbs_gid_entry": true,
	"ib_uverbs_attr": true, "ib_uverbs_ioctl_hdr": true,
	// The data path: completion channels, CQs, RC QPs and their states,
	// the work request and completion formats, events.
	"ib_uverbs_create_comp_channel": true, "ib_uverbs_create_comp_channel_resp": true,
	"ib_uverbs_create_cq": true, "ib_uverbs_create_cq_resp": true,
	"ib_uverbs_destroy_cq": true, "ib_uverbs_destroy_cq_resp": true,
	"ib_uverbs_req_notify_cq": true, "ib_uverbs_wc": true,
	"ib_uverbs_create_qp": true, "ib_uverbs_create_qp_resp": true,
	"ib_uverbs_qp_dest": true, "ib_uverbs_modify_qp": true,
	"ib_uverbs_destroy_qp": true, "ib_uverbs_destroy_qp_resp": true,
	"ib_uverbs_qp_attr": true, "ib_uverbs_ah_attr": true, "ib_uverbs_global_route": true,
	"ib_uverbs_post_send": true, "ib_uverbs_post_send_resp": true,
	"ib_uverbs_comp_event_desc": true, "ib_uverbs_async_event_desc": true,
	// rdma_user_cm.h: the RDMA CM's write commands (the sockaddr_in6 set:
	// BIND_IP, RESOLVE_IP, QUERY_ROUTE) and its events.
	"rdma_ucm_cmd_hdr": true, "rdma_ucm_create_id": true, "rdma_ucm_create_id_resp": true,
	"rdma_ucm_destroy_id": true, "rdma_ucm_destroy_id_resp": true,
	"rdma_ucm_bind_ip": true, "rdma_ucm_resolve_ip": true, "rdma_ucm_resolve_route": true,
	"rdma_ucm_query": true, "rdma_ucm_query_route_resp": true,
	"rdma_ucm_conn_param": true, "rdma_ucm_ece": true, "rdma_ucm_connect": true,
	"rdma_ucm_listen": true, "rdma_ucm_accept": true, "rdma_ucm_reject": true,
	"rdma_ucm_disconnect": true, "rdma_ucm_init_qp_attr": true,
	"rdma_ucm_get_event": true, "rdma_ucm_event_resp": true, "rdma_ucm_set_option": true,
	// rdma_user_rxe.h: where rxe's queues are and how they are laid out.
	"mminfo": true, "rxe_create_cq_resp": true, "rxe_create_qp_resp": true,
	"rxe_queue_buf": true, "rxe_sge": true,
}

// rdmaSupplied declares the socket address types rdma_user_cm.h takes
// from linux/in6.h (whose __UAPI_DEF_* conditionals the parser does not
// evaluate); the ABI proof checks them against the real header.
const rdmaSupplied = `
struct in6_addr {
	union {
		__u8 u6_addr8[16];
		__be16 u6_addr16[8];
		__be32 u6_addr32[4];
	} in6_u;
};
struct sockaddr_in6 {
	__u16 sin6_family;
	__be16 sin6_port;
	__be32 sin6_flowinfo;
	struct in6_addr sin6_addr;
	__u32 sin6_scope_id;
};
`

var specs = []*pkgSpec{
	{
		dir: "uapi/hl", pkg: "hl",
		doc: "include/uapi/drm/habanalabs_accel.h",
		headers: []hdrSpec{
			{"include/uapi/drm/habanalabs_accel.h", "drm/habanalabs_accel.h"},
		},
		includeDirs:   []string{"include/uapi"},
		stripPrefixes: []string{"hl_"},
		builtins: map[string]builtin{
			"DRM_IOCTL_BASE":   {'d', "DRM_IOCTL_BASE"},
			"DRM_COMMAND_BASE": {0x40, "DRM_COMMAND_BASE"},
			"SZ_1M":            {1 << 20, "SZ_1M"},
			"U16_MAX":          {0xffff, "U16_MAX"},
		},
		// A few macros are spelled with kernel-internal helpers (SZ_1M from
		// linux/sizes.h, U16_MAX from linux/limits.h, BIT from linux/bits.h)
		// that no uapi header defines; the check defines them as the kernel does.
		prelude:       "#define __user\n#define SZ_1M 0x00100000\n#define U16_MAX ((__u16)~0U)\n#define BIT(nr) (1UL << (nr))\n",
		builtinOrder:  []string{"SZ_1M", "U16_MAX", "DRM_COMMAND_BASE", "DRM_IOCTL_BASE"},
		extraRequests: hlLegacy,
		userPointers:  hlUserPointers,
		views:         hlViews,
		names: []nameTable{
			{goName: "InfoOpNames", doc: "INFO ops (HL_INFO_*)", keyType: "uint32", prefix: "HL_INFO_", excludes: []string{"_MAX_LEN", "_FW_HEARTBEAT_ERR", "_FW_REPORTED_ERR"}},
			{goName: "CBOpNames", doc: "CB ops (HL_CB_OP_*)", keyType: "uint32", prefix: "HL_CB_OP_"},
			{goName: "CBFlagNames", doc: "CB flag bits (HL_CB_FLAGS_*)", keyType: "uint32", prefix: "HL_CB_FLAGS_"},
			{goName: "CSFlagNames", doc: "CS flag bits (HL_CS_FLAGS_*)", keyType: "uint32", prefix: "HL_CS_FLAGS_"},
			{goName: "CSChunkFlagNames", doc: "CS chunk flag bits (HL_CS_CHUNK_FLAGS_*)", keyType: "uint32", prefix: "HL_CS_CHUNK_FLAGS_"},
			{goName: "WaitCSFlagNames", doc: "WAIT_CS flag bits (HL_WAIT_CS_FLAGS_*)", keyType: "uint32", prefix: "HL_WAIT_CS_FLAGS_", excludes: []string{"_MASK", "ANY_"}},
			{goName: "WaitCSStatusNames", doc: "WAIT_CS statuses (HL_WAIT_CS_STATUS_*)", keyType: "uint32", prefix: "HL_WAIT_CS_STATUS_", excludes: []string{"_FLAG_"}},
			{goName: "WaitCSStatusFlagNames", doc: "WAIT_CS status flag bits (HL_WAIT_CS_STATUS_FLAG_*)", keyType: "uint32", prefix: "HL_WAIT_CS_STATUS_FLAG_"},
			{goName: "MemOpNames", doc: "MEMORY ops (HL_MEM_OP_*)", keyType: "uint32", prefix: "HL_MEM_OP_"},
			{goName: "MemFlagNames", doc: "MEMORY flag bits (HL_MEM_*)", keyType: "uint32", prefix: "HL_MEM_", excludes: []string{"_OP_"}},
			{goName: "NotifierEventNames", doc: "notifier event bits (HL_NOTIFIER_EVENT_*)", keyType: "uint64", prefix: "HL_NOTIFIER_EVENT_"},
			{goName: "DebugOpNames", doc: "DEBUG ops (HL_DEBUG_OP_*)", keyType: "uint32", prefix: "HL_DEBUG_OP_"},
			{goName: "RequestNames", doc: "DRM ioctl request numbers (DRM_IOCTL_HL_*)", keyType: "uint32", prefix: "DRM_IOCTL_HL_"},
			{goName: "LegacyRequestNames", doc: "legacy ioctl request numbers (HL_LEGACY_IOCTL_*)", keyType: "uint32", prefix: "HL_LEGACY_IOCTL_"},
			{goName: "GaudiQueueIDNames", doc: "Gaudi queue ids (GAUDI_QUEUE_ID_*, enum gaudi_queue_id)", prefix: "GAUDI_QUEUE_ID_", goType: "GaudiQueueID", excludes: []string{"_SIZE"}},
			{goName: "Gaudi2QueueIDNames", doc: "Gaudi2 queue ids (GAUDI2_QUEUE_ID_*, enum gaudi2_queue_id)", prefix: "GAUDI2_QUEUE_ID_", goType: "Gaudi2QueueID", excludes: []string{"_SIZE"}},
			{goName: "GaudiEngineIDNames", doc: "Gaudi engine ids (GAUDI_ENGINE_ID_*, enum gaudi_engine_id)", prefix: "GAUDI_ENGINE_ID_", goType: "GaudiEngineID", excludes: []string{"_SIZE"}},
			{goName: "Gaudi2EngineIDNames", doc: "Gaudi2 engine ids (GAUDI2_*ENGINE_ID_*, enum gaudi2_engine_id; the name drops ENGINE_ID_ too)", prefix: "GAUDI2_", goType: "Gaudi2EngineID", cut: "ENGINE_ID_", excludes: []string{"_SIZE"}},
		},
	},
	{
		dir: "uapi/gaudi", pkg: "gaudi",
		doc: "drivers/accel/habanalabs/include/gaudi/gaudi_packets.h",
		headers: []hdrSpec{
			{"drivers/accel/habanalabs/include/gaudi/gaudi_packets.h", "gaudi/gaudi_packets.h"},
		},
		prelude:       "#include <linux/types.h>\ntypedef __u8 u8;\n",
		includeDirs:   []string{"drivers/accel/habanalabs/include"},
		stripPrefixes: []string{"gaudi_"},
		packetPrefix:  "GAUDI_PKT_",
	},
	{
		dir: "uapi/gaudi2", pkg: "gaudi2",
		doc: "drivers/accel/habanalabs/include/gaudi2/gaudi2_packets.h",
		headers: []hdrSpec{
			{"drivers/accel/habanalabs/include/gaudi2/gaudi2_packets.h", "gaudi2/gaudi2_packets.h"},
		},
		prelude:       "#include <linux/types.h>\ntypedef __u8 u8;\n",
		includeDirs:   []string{"drivers/accel/habanalabs/include"},
		stripPrefixes: []string{"gaudi2_"},
		packetPrefix:  "GAUDI2_PKT_",
	},
	{
		dir: "uapi/rdma", pkg: "rdma",
		doc: "include/uapi/rdma (uverbs ioctl and write ABI, netlink)",
		headers: []hdrSpec{
			{"include/uapi/rdma/rdma_user_ioctl_cmds.h", "rdma/rdma_user_ioctl_cmds.h"},
			{"include/uapi/rdma/ib_user_ioctl_verbs.h", "rdma/ib_user_ioctl_verbs.h"},
			{"include/uapi/rdma/ib_user_ioctl_cmds.h", "rdma/ib_user_ioctl_cmds.h"},
			{"include/uapi/rdma/ib_user_verbs.h", "rdma/ib_user_verbs.h"},
			{"include/uapi/rdma/rdma_netlink.h", "rdma/rdma_netlink.h"},
			{"include/uapi/rdma/ib_user_sa.h", "rdma/ib_user_sa.h"},
			{"include/uapi/rdma/rdma_user_cm.h", "rdma/rdma_user_cm.h"},
			{"include/uapi/rdma/rdma_user_rxe.h", "rdma/rdma_user_rxe.h"},
		},
		supplied:      rdmaSupplied,
		includeDirs:   []string{"include/uapi"},
		stripPrefixes: []string{"ib_"},
		// RDMA_NLA_TYPE_MASK uses the netlink attribute flags of linux/netlink.h.
		prelude: "#include <linux/netlink.h>\n",
		builtins: map[string]builtin{
			"NLA_F_NESTED":        {1 << 15, "NLA_F_NESTED"},
			"NLA_F_NET_BYTEORDER": {1 << 14, "NLA_F_NET_BYTEORDER"},
		},
		builtinOrder: []string{"NLA_F_NESTED", "NLA_F_NET_BYTEORDER"},
		names: []nameTable{
			{goName: "UverbsObjectNames", doc: "uverbs object ids (UVERBS_OBJECT_*, enum uverbs_default_objects)", keyType: "uint32", prefix: "UVERBS_OBJECT_", enum: true},
		},
		keepType: func(tag string) bool {
			return rdmaVerbsTypes[tag]
		},
	},
	{
		dir: "uapi/dmabuf", pkg: "dmabuf",
		doc: "include/uapi/linux/dma-buf.h and udmabuf.h",
		headers: []hdrSpec{
			{"include/uapi/linux/dma-buf.h", "linux/dma-buf.h"},
			{"include/uapi/linux/udmabuf.h", "linux/udmabuf.h"},
		},
		includeDirs:   []string{"include/uapi"},
		stripPrefixes: []string{"dma_buf_"},
	},
}

// hlUserPointers are the habanalabs members the driver dereferences as user
// memory during the call (copy_from_user/copy_to_user in
// drivers/accel/habanalabs/common: _hl_info_ioctl, hl_debug_ioctl,
// hl_cs_copy_chunk_array, cs_ioctl_engine_cores, cs_ioctl_engines,
// hl_cs_ctx_switch and cs_ioctl_extract_signal_seq,
// _hl_interrupt_wait_ioctl_user_addr).
var hlUserPointers = map[string]string{
	"struct hl_info_args.return_pointer": "INFO copies its answer there",
	"struct hl_debug_args.input_ptr":     "DEBUG reads its parameters there",
	"struct hl_debug_args.output_ptr":    "DEBUG writes its answer there",
	"struct hl_cs_in.chunks_restore":     "CS reads the restore chunk array there",
	"struct hl_cs_in.chunks_execute":     "CS reads the execute chunk array there",
	"struct hl_cs_in.engine_cores":       "CS reads the engine core ids there",
	"struct hl_cs_in.engines":            "CS reads the engine ids there",
	"struct hl_cs_chunk.signal_seq_arr":  "a wait CS reads the signal sequence numbers there",
	"struct hl_wait_cs_in.addr":          "an interrupt wait reads the user's completion value there",
}

// hlViews are the ways of using the habanalabs unions that pass user
// addresses.
var hlViews = []viewSpec{
	{name: "CSChunksArgs", cType: "union hl_cs_args", doc: "for a submission of chunk arrays (any CS but the engine commands and the signal reservations)", fields: []viewField{
		{c: "in.chunks_restore", goName: "ChunksRestore", ptr: true},
		{c: "in.chunks_execute", goName: "ChunksExecute", ptr: true},
		{c: "in.seq", goName: "Seq"},
		{c: "in.num_chunks_restore", goName: "NumChunksRestore"},
		{c: "in.num_chunks_execute", goName: "NumChunksExecute"},
		{c: "in.timeout", goName: "Timeout"},
		{c: "in.cs_flags", goName: "CSFlags"},
		{c: "in.ctx_id", goName: "CtxID"},
		{c: "out", goName: "Out", overlay: "CSOut"},
	}},
	{name: "CSEnginesArgs", cType: "union hl_cs_args", doc: "for an engine command (HL_CS_FLAGS_ENGINES_COMMAND)", fields: []viewField{
		{c: "in.engines", goName: "Engines", ptr: true},
		{c: "in.num_engines", goName: "NumEngines"},
		{c: "in.engine_command", goName: "EngineCommand"},
		{c: "in.cs_flags", goName: "CSFlags"},
		{c: "in.ctx_id", goName: "CtxID"},
		{c: "out", goName: "Out", overlay: "CSOut"},
	}},
	{name: "CSEngineCoresArgs", cType: "union hl_cs_args", doc: "for an engine core command (HL_CS_FLAGS_ENGINE_CORE_COMMAND)", fields: []viewField{
		{c: "in.engine_cores", goName: "EngineCores", ptr: true},
		{c: "in.num_engine_cores", goName: "NumEngineCores"},
		{c: "in.core_command", goName: "CoreCommand"},
		{c: "in.cs_flags", goName: "CSFlags"},
		{c: "in.ctx_id", goName: "CtxID"},
		{c: "out", goName: "Out", overlay: "CSOut"},
	}},
	{name: "CSSignalChunk", cType: "struct hl_cs_chunk", doc: "as the chunk of a wait or collective wait CS that names signal sequence numbers", fields: []viewField{
		{c: "signal_seq_arr", goName: "SignalSeqArr", ptr: true},
		{c: "queue_index", goName: "QueueIndex"},
		{c: "num_signal_seq_arr", goName: "NumSignalSeqArr"},
		{c: "cs_chunk_flags", goName: "CSChunkFlags"},
		{c: "collective_engine_id", goName: "CollectiveEngineID"},
	}},
	{name: "WaitCSMultiArgs", cType: "union hl_wait_cs_args", doc: "for a multi-CS wait (HL_WAIT_CS_FLAGS_MULTI_CS): seq is the address of the sequence array", fields: []viewField{
		{c: "in.seq", goName: "Seqs", ptr: true},
		{c: "in.timeout_us", goName: "TimeoutUs"},
		{c: "in.ctx_id", goName: "CtxID"},
		{c: "in.flags", goName: "Flags"},
		{c: "in.seq_arr_len", goName: "SeqArrLen"},
		{c: "out", goName: "Out", overlay: "WaitCSOut"},
	}},
	{name: "WaitCSInterruptArgs", cType: "union hl_wait_cs_args", doc: "for a wait on a user interrupt that compares a value in user memory (HL_WAIT_CS_FLAGS_INTERRUPT without INTERRUPT_KERNEL_CQ)",
		note: "The driver's answer (Out) lies over Addr: after a call Addr's word holds\nOut's status and flags, small integers that are never taken for a Go\npointer (see Pointer, \"What the driver leaves in a Pointer\"). Clear the\nview before keeping it for later.",
		fields: []viewField{
			{c: "in.addr", goName: "Addr", ptr: true},
			{c: "in.target", goName: "Target"},
			{c: "in.ctx_id", goName: "CtxID"},
			{c: "in.flags", goName: "Flags"},
			{c: "in.interrupt_timeout_us", goName: "InterruptTimeoutUs"},
			{c: "in.cq_counters_offset", goName: "CQCountersOffset"},
			{c: "in.timestamp_handle", goName: "TimestampHandle"},
			{c: "in.timestamp_offset", goName: "TimestampOffset"},
			{c: "out", goName: "Out", overlay: "WaitCSOut"},
		}},
	{name: "MemMapHostArgs", cType: "union hl_mem_args", doc: "for MAP of host memory (HL_MEM_OP_MAP with HL_MEM_USERPTR)", fields: []viewField{
		{c: "in.map_host.host_virt_addr", goName: "HostVirtAddr", ptr: true},
		{c: "in.map_host.hint_addr", goName: "HintAddr"},
		{c: "in.map_host.mem_size", goName: "MemSize"},
		{c: "in.op", goName: "Op"},
		{c: "in.flags", goName: "Flags"},
		{c: "in.ctx_id", goName: "CtxID"},
		{c: "out", goName: "Out", overlay: "MemOut"},
	}},
}
