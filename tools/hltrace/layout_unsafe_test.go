package main

import (
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"github.com/gaudi-go/gaudi/uapi/rdma"
)

// TestLayout proves the user API structs hltrace.bpf.c declares (as bpf2go
// turned them into Go) against package uapi, which is proven against the
// kernel headers by gcc: same sizes, and each field the BPF programs read
// at the offset where uapi keeps it. Union members are located by writing
// a marker through uapi's setter and reading it at the BPF field's offset.
func TestLayout(t *testing.T) {
	size := func(name string, bpf, uapi uintptr) {
		t.Helper()
		if bpf != uapi {
			t.Errorf("%s: BPF size %d, uapi %d", name, bpf, uapi)
		}
	}
	size("hl_info_args", unsafe.Sizeof(bpfHlInfoArgs{}), unsafe.Sizeof(hl.InfoArgs{}))
	size("hl_cb_in", unsafe.Sizeof(bpfHlCbIn{}), unsafe.Sizeof(hl.CBIn{}))
	size("hl_cs_in", unsafe.Sizeof(bpfHlCsIn{}), unsafe.Sizeof(hl.CSIn{}))
	size("hl_cs_out", unsafe.Sizeof(bpfHlCsOut{}), unsafe.Sizeof(hl.CSOut{}))
	size("hl_cs_chunk", unsafe.Sizeof(bpfHlCsChunk{}), unsafe.Sizeof(hl.CSChunk{}))
	size("hl_wait_cs_in", unsafe.Sizeof(bpfHlWaitCsIn{}), unsafe.Sizeof(hl.WaitCSIn{}))
	size("hl_wait_cs_out", unsafe.Sizeof(bpfHlWaitCsOut{}), unsafe.Sizeof(hl.WaitCSOut{}))
	size("hl_mem_in", unsafe.Sizeof(bpfHlMemIn{}), unsafe.Sizeof(hl.MemIn{}))
	size("hl_debug_args", unsafe.Sizeof(bpfHlDebugArgs{}), unsafe.Sizeof(hl.DebugArgs{}))
	size("ib_uverbs_ioctl_hdr", unsafe.Sizeof(bpfIbUverbsIoctlHdr{}), unsafe.Sizeof(rdma.UverbsIoctlHdr{}))
	size("ib_uverbs_attr", unsafe.Sizeof(bpfIbUverbsAttr{}), unsafe.Sizeof(rdma.UverbsAttr{}))

	off := func(name string, bpf, uapi uintptr) {
		t.Helper()
		if bpf != uapi {
			t.Errorf("%s: BPF offset %d, uapi %d", name, bpf, uapi)
		}
	}
	// at returns the offset at which set's marker landed in v.
	at := func(v unsafe.Pointer, n uintptr, set func()) uintptr {
		set()
		b := unsafe.Slice((*byte)(v), n)
		for i, c := range b {
			if c == 0xa5 {
				return uintptr(i)
			}
		}
		return ^uintptr(0)
	}
	const m8, m32 = 0xa5, 0xa5

	var info hl.InfoArgs
	off("info.return_pointer", unsafe.Offsetof(bpfHlInfoArgs{}.ReturnPointer), unsafe.Offsetof(info.ReturnPointer))
	off("info.return_size", unsafe.Offsetof(bpfHlInfoArgs{}.ReturnSize), unsafe.Offsetof(info.ReturnSize))
	off("info.op", unsafe.Offsetof(bpfHlInfoArgs{}.Op), unsafe.Offsetof(info.Op))
	off("info.ctx_id", unsafe.Offsetof(bpfHlInfoArgs{}.CtxId), at(unsafe.Pointer(&info), unsafe.Sizeof(info), func() { info.SetCtxID(m32) }))

	var cb hl.CBIn
	off("cb.cb_handle", unsafe.Offsetof(bpfHlCbIn{}.CbHandle), unsafe.Offsetof(cb.CBHandle))
	off("cb.op", unsafe.Offsetof(bpfHlCbIn{}.Op), unsafe.Offsetof(cb.Op))
	off("cb.cb_size", unsafe.Offsetof(bpfHlCbIn{}.CbSize), unsafe.Offsetof(cb.CBSize))
	off("cb.ctx_id", unsafe.Offsetof(bpfHlCbIn{}.CtxId), unsafe.Offsetof(cb.CtxID))
	off("cb.flags", unsafe.Offsetof(bpfHlCbIn{}.Flags), unsafe.Offsetof(cb.Flags))

	var cs hl.CSIn
	p := unsafe.Pointer(&cs)
	var view hl.CSChunksArgs // the user addresses are written through the view
	off("cs.chunks_restore", unsafe.Offsetof(bpfHlCsIn{}.ChunksRestore), unsafe.Offsetof(view.ChunksRestore))
	off("cs.chunks_execute", unsafe.Offsetof(bpfHlCsIn{}.ChunksExecute), unsafe.Offsetof(view.ChunksExecute))
	off("cs.seq", unsafe.Offsetof(bpfHlCsIn{}.Seq), at(p, unsafe.Sizeof(cs), func() { cs = hl.CSIn{}; cs.SetSeq(m8) }))
	off("cs.num_chunks_restore", unsafe.Offsetof(bpfHlCsIn{}.NumChunksRestore), unsafe.Offsetof(cs.NumChunksRestore))
	off("cs.num_chunks_execute", unsafe.Offsetof(bpfHlCsIn{}.NumChunksExecute), unsafe.Offsetof(cs.NumChunksExecute))
	off("cs.timeout", unsafe.Offsetof(bpfHlCsIn{}.Timeout), unsafe.Offsetof(cs.Timeout))
	off("cs.cs_flags", unsafe.Offsetof(bpfHlCsIn{}.CsFlags), unsafe.Offsetof(cs.CSFlags))
	off("cs.ctx_id", unsafe.Offsetof(bpfHlCsIn{}.CtxId), unsafe.Offsetof(cs.CtxID))

	var cso hl.CSOut
	off("cs_out.seq", unsafe.Offsetof(bpfHlCsOut{}.Seq), at(unsafe.Pointer(&cso), unsafe.Sizeof(cso), func() { cso.SetSeq(m8) }))
	off("cs_out.status", unsafe.Offsetof(bpfHlCsOut{}.Status), unsafe.Offsetof(cso.Status))

	var ch hl.CSChunk
	p = unsafe.Pointer(&ch)
	off("chunk.cb_handle", unsafe.Offsetof(bpfHlCsChunk{}.CbHandle), at(p, unsafe.Sizeof(ch), func() { ch = hl.CSChunk{}; ch.SetCBHandle(m8) }))
	off("chunk.queue_index", unsafe.Offsetof(bpfHlCsChunk{}.QueueIndex), unsafe.Offsetof(ch.QueueIndex))
	off("chunk.cb_size", unsafe.Offsetof(bpfHlCsChunk{}.CbSize), at(p, unsafe.Sizeof(ch), func() { ch = hl.CSChunk{}; ch.SetCBSize(m32) }))
	off("chunk.cs_chunk_flags", unsafe.Offsetof(bpfHlCsChunk{}.CsChunkFlags), unsafe.Offsetof(ch.CSChunkFlags))

	off("chunk.collective_engine_id", unsafe.Offsetof(bpfHlCsChunk{}.CollectiveEngineId), unsafe.Offsetof(ch.CollectiveEngineID))
	if n := unsafe.Offsetof(ch.CollectiveEngineID) + 4; n != 24 {
		t.Errorf("hl_cs_chunk.collective_engine_id ends at %d; enter_cs reads 24 bytes", n)
	}

	// An engine or engine core command: cs_ids_body takes the union's
	// members at hl_cs_in's offsets (it copies the struct as it is).
	off("cs.engine_cores", unsafe.Offsetof(bpfCsIdsBody{}.IdsAddr), unsafe.Offsetof(hl.CSEngineCoresArgs{}.EngineCores))
	off("cs.num_engine_cores", unsafe.Offsetof(bpfCsIdsBody{}.NumIds), unsafe.Offsetof(hl.CSEngineCoresArgs{}.NumEngineCores))
	off("cs.core_command", unsafe.Offsetof(bpfCsIdsBody{}.Command), unsafe.Offsetof(hl.CSEngineCoresArgs{}.CoreCommand))
	off("cs.engines", unsafe.Offsetof(bpfCsIdsBody{}.IdsAddr), unsafe.Offsetof(hl.CSEnginesArgs{}.Engines))
	off("cs.num_engines", unsafe.Offsetof(bpfCsIdsBody{}.NumIds), unsafe.Offsetof(hl.CSEnginesArgs{}.NumEngines))
	off("cs.engine_command", unsafe.Offsetof(bpfCsIdsBody{}.Command), unsafe.Offsetof(hl.CSEnginesArgs{}.EngineCommand))
	off("cs_body.chunks_execute as num_ids", unsafe.Offsetof(bpfCsBody{}.ChunksExecute), unsafe.Offsetof(bpfCsIdsBody{}.NumIds))
	off("cs_ids_body.flags", unsafe.Offsetof(bpfCsIdsBody{}.Flags), unsafe.Offsetof(bpfCsBody{}.Flags))
	off("cs_ids_body.nids", unsafe.Offsetof(bpfCsIdsBody{}.Nids), unsafe.Offsetof(bpfCsBody{}.Nchunks))
	off("cs_ids_body.seq", unsafe.Offsetof(bpfCsIdsBody{}.Seq), unsafe.Offsetof(bpfCsBody{}.Seq))
	off("cs_ids_body.rdev", unsafe.Offsetof(bpfCsIdsBody{}.Rdev), unsafe.Offsetof(bpfCsBody{}.Rdev))
	size("cs_ids_body", unsafe.Sizeof(bpfCsIdsBody{}), unsafe.Sizeof(bpfCsBody{}))

	// Where the HW_IP_INFO answer keeps what names the ASIC.
	off("hw_ip_info.device_id", uintptr(bpfHwIpOffsetHW_IP_DEVICE_ID), unsafe.Offsetof(hl.InfoHWIPInfo{}.DeviceID))
	off("hw_ip_info.revision_id", uintptr(bpfHwIpOffsetHW_IP_REVISION_ID), unsafe.Offsetof(hl.InfoHWIPInfo{}.RevisionID))

	var w hl.WaitCSIn
	p = unsafe.Pointer(&w)
	off("wait.seq", unsafe.Offsetof(bpfHlWaitCsIn{}.Seq), at(p, unsafe.Sizeof(w), func() { w = hl.WaitCSIn{}; w.SetSeq(m8) }))
	off("wait.timeout_us", unsafe.Offsetof(bpfHlWaitCsIn{}.TimeoutUs), at(p, unsafe.Sizeof(w), func() { w = hl.WaitCSIn{}; w.SetTimeoutUs(m8) }))
	off("wait.ctx_id", unsafe.Offsetof(bpfHlWaitCsIn{}.CtxId), unsafe.Offsetof(w.CtxID))
	off("wait.flags", unsafe.Offsetof(bpfHlWaitCsIn{}.Flags), unsafe.Offsetof(w.Flags))
	off("wait.seq_arr_len", unsafe.Offsetof(bpfHlWaitCsIn{}.SeqArrLen), at(p, unsafe.Sizeof(w), func() { w = hl.WaitCSIn{}; w.SetSeqArrLen(m8) }))

	var wo hl.WaitCSOut
	off("wait_out.status", unsafe.Offsetof(bpfHlWaitCsOut{}.Status), unsafe.Offsetof(wo.Status))
	off("wait_out.flags", unsafe.Offsetof(bpfHlWaitCsOut{}.Flags), unsafe.Offsetof(wo.Flags))
	off("wait_out.timestamp_nsec", unsafe.Offsetof(bpfHlWaitCsOut{}.TimestampNsec), unsafe.Offsetof(wo.TimestampNsec))
	off("wait_out.cs_completion_map", unsafe.Offsetof(bpfHlWaitCsOut{}.CsCompletionMap), unsafe.Offsetof(wo.CSCompletionMap))

	var mem hl.MemIn
	p = unsafe.Pointer(&mem)
	off("mem.map_host.host_virt_addr", unsafe.Offsetof(bpfHlMemIn{}.U), at(p, unsafe.Sizeof(mem), func() { mem = hl.MemIn{}; mem.MapHost().HostVirtAddr = m8 }))
	off("mem.map_host.mem_size", unsafe.Offsetof(bpfHlMemIn{}.U)+16, at(p, unsafe.Sizeof(mem), func() { mem = hl.MemIn{}; mem.MapHost().MemSize = m8 }))
	off("mem.export.offset", unsafe.Offsetof(bpfHlMemIn{}.U)+16, at(p, unsafe.Sizeof(mem), func() { mem = hl.MemIn{}; mem.ExportDmabufFD().Offset = m8 }))
	off("mem.op", unsafe.Offsetof(bpfHlMemIn{}.Op), unsafe.Offsetof(mem.Op))
	off("mem.flags", unsafe.Offsetof(bpfHlMemIn{}.Flags), unsafe.Offsetof(mem.Flags))
	off("mem.num_of_elements", unsafe.Offsetof(bpfHlMemIn{}.NumOfElements), unsafe.Offsetof(mem.NumOfElements))

	var mo hl.MemOut
	p = unsafe.Pointer(&mo)
	off("mem_out.fd", 0, at(p, unsafe.Sizeof(mo), func() { mo = hl.MemOut{}; mo.SetFD(m32) }))
	off("mem_out.block_size", 8, at(p, unsafe.Sizeof(mo), func() { mo = hl.MemOut{}; mo.SetBlockSize(m32) }))

	var dbg hl.DebugArgs
	off("debug.op", unsafe.Offsetof(bpfHlDebugArgs{}.Op), unsafe.Offsetof(dbg.Op))
	off("debug.reg_idx", unsafe.Offsetof(bpfHlDebugArgs{}.RegIdx), unsafe.Offsetof(dbg.RegIdx))
	off("debug.enable", unsafe.Offsetof(bpfHlDebugArgs{}.Enable), unsafe.Offsetof(dbg.Enable))
	off("debug.input_size", unsafe.Offsetof(bpfHlDebugArgs{}.InputSize), unsafe.Offsetof(dbg.InputSize))

	var uh rdma.UverbsIoctlHdr
	off("uverbs.length", unsafe.Offsetof(bpfIbUverbsIoctlHdr{}.Length), unsafe.Offsetof(uh.Length))
	off("uverbs.object_id", unsafe.Offsetof(bpfIbUverbsIoctlHdr{}.ObjectId), unsafe.Offsetof(uh.ObjectID))
	off("uverbs.method_id", unsafe.Offsetof(bpfIbUverbsIoctlHdr{}.MethodId), unsafe.Offsetof(uh.MethodID))
	off("uverbs.num_attrs", unsafe.Offsetof(bpfIbUverbsIoctlHdr{}.NumAttrs), unsafe.Offsetof(uh.NumAttrs))
	off("uverbs.driver_id", unsafe.Offsetof(bpfIbUverbsIoctlHdr{}.DriverId), unsafe.Offsetof(uh.DriverID))
	var ua rdma.UverbsAttr
	off("uverbs_attr.attr_id", unsafe.Offsetof(bpfIbUverbsAttr{}.AttrId), unsafe.Offsetof(ua.AttrID))
}
