package ib

import (
	"encoding/binary"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gaudi-go/gaudi/internal/abicheck"
	"github.com/gaudi-go/gaudi/uapi/rdma"
)

// The C proof of what goes on the wire: gcc fills the kernel's own
// structures (include/uapi/rdma: the ioctl header and attributes, and the
// drivers' request structures) with the kernel's constants, and the bytes
// must equal what this package builds. Addresses (pointer attributes)
// differ from run to run and are zeroed on both sides.

var abiTable = &abicheck.Table{
	Package:     "ib",
	IncludeDirs: []string{"include/uapi"},
	Includes: []string{
		"rdma/rdma_user_ioctl_cmds.h", "rdma/ib_user_ioctl_cmds.h", "rdma/ib_user_ioctl_verbs.h", "rdma/ib_user_verbs.h",
		"rdma/mlx5-abi.h", "rdma/irdma-abi.h", "rdma/siw-abi.h", "rdma/rdma_user_rxe.h",
	},
}

// wire encodes r and zeroes the addresses of its pointer attributes.
func wire(r *request, drv DriverID) []byte {
	head := r.encode(uint32(drv))
	b := append([]byte(nil), r.buf[:head]...)
	for i := range r.attrs[:r.n] {
		if k := r.attrs[i].kind; k == kindPtrIn || k == kindPtrOut {
			binary.LittleEndian.PutUint64(b[hdrSize+attrSize*i+8:], 0)
		}
	}
	return b
}

func TestWireBytesAgainstC(t *testing.T) {
	const attrs = "struct ib_uverbs_attr *a = (struct ib_uverbs_attr *)(p + 1);\n"
	snippets := []abicheck.Snippet{
		{Name: "reg_dmabuf_mr", Type: "struct ib_uverbs_ioctl_hdr", Extra: 9 * 16, Code: attrs + `
p->length = sizeof(*p) + 9 * sizeof(*a); p->object_id = UVERBS_OBJECT_MR; p->method_id = UVERBS_METHOD_REG_DMABUF_MR;
p->num_attrs = 9; p->driver_id = RDMA_DRIVER_RXE;
for (int i = 0; i < 9; i++) a[i].flags = UVERBS_ATTR_F_MANDATORY;
a[0].attr_id = UVERBS_ATTR_REG_DMABUF_MR_HANDLE;
a[1].attr_id = UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE; a[1].data = 5;
a[2].attr_id = UVERBS_ATTR_REG_DMABUF_MR_OFFSET; a[2].len = sizeof(__u64); a[2].data = 0x3000;
a[3].attr_id = UVERBS_ATTR_REG_DMABUF_MR_LENGTH; a[3].len = sizeof(__u64); a[3].data = 0x200000;
a[4].attr_id = UVERBS_ATTR_REG_DMABUF_MR_IOVA; a[4].len = sizeof(__u64); a[4].data = 0x1000003000ULL;
a[5].attr_id = UVERBS_ATTR_REG_DMABUF_MR_FD; a[5].len = sizeof(__u32); a[5].data = (__u32)-1;
a[6].attr_id = UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS; a[6].len = sizeof(__u32);
a[6].data = IB_UVERBS_ACCESS_LOCAL_WRITE | IB_UVERBS_ACCESS_REMOTE_READ | IB_UVERBS_ACCESS_RELAXED_ORDERING;
a[7].attr_id = UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY; a[7].len = sizeof(__u32);
a[8].attr_id = UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY; a[8].len = sizeof(__u32);`},
		{Name: "query_port", Type: "struct ib_uverbs_ioctl_hdr", Extra: 2 * 16, Code: attrs + `
p->length = sizeof(*p) + 2 * sizeof(*a); p->method_id = UVERBS_METHOD_QUERY_PORT; p->num_attrs = 2; p->driver_id = RDMA_DRIVER_RXE;
a[0].attr_id = UVERBS_ATTR_QUERY_PORT_PORT_NUM; a[0].len = sizeof(__u64); a[0].flags = UVERBS_ATTR_F_MANDATORY; a[0].data = 1;
a[1].attr_id = UVERBS_ATTR_QUERY_PORT_RESP; a[1].len = sizeof(struct ib_uverbs_query_port_resp_ex); a[1].flags = UVERBS_ATTR_F_MANDATORY;`},
		{Name: "alloc_pd_mlx5", Type: "struct ib_uverbs_ioctl_hdr", Extra: 4 * 16, Code: attrs + `
p->length = sizeof(*p) + 4 * sizeof(*a); p->object_id = UVERBS_OBJECT_DEVICE; p->method_id = UVERBS_METHOD_INVOKE_WRITE;
p->num_attrs = 4; p->driver_id = RDMA_DRIVER_MLX5;
for (int i = 0; i < 4; i++) a[i].flags = UVERBS_ATTR_F_MANDATORY;
a[0].attr_id = UVERBS_ATTR_WRITE_CMD; a[0].len = sizeof(__u64); a[0].data = IB_USER_VERBS_CMD_ALLOC_PD;
a[1].attr_id = UVERBS_ATTR_CORE_IN; a[1].len = sizeof(struct ib_uverbs_alloc_pd);
a[2].attr_id = UVERBS_ATTR_CORE_OUT; a[2].len = sizeof(struct ib_uverbs_alloc_pd_resp);
a[3].attr_id = UVERBS_ATTR_UHW_OUT; a[3].len = 8;`},
		{Name: "mr_destroy", Type: "struct ib_uverbs_ioctl_hdr", Extra: 16, Code: attrs + `
p->length = sizeof(*p) + sizeof(*a); p->object_id = UVERBS_OBJECT_MR; p->method_id = UVERBS_METHOD_MR_DESTROY;
p->num_attrs = 1; p->driver_id = RDMA_DRIVER_RXE;
a[0].attr_id = UVERBS_ATTR_DESTROY_MR_HANDLE; a[0].flags = UVERBS_ATTR_F_MANDATORY; a[0].data = 9;`},
		{Name: "mlx5_ctx_req", Type: "struct mlx5_ib_alloc_ucontext_req_v2", Code: `
p->total_num_bfregs = 1; p->lib_caps = MLX5_LIB_CAP_4K_UAR | MLX5_LIB_CAP_DYN_UAR;`},
		{Name: "mlx5_pd_resp", Type: "struct mlx5_ib_alloc_pd_resp"},
		{Name: "irdma_ctx_req", Type: "struct irdma_alloc_ucontext_req", Code: `p->userspace_ver = IRDMA_ABI_VER;`},
		{Name: "irdma_mr_req", Type: "struct irdma_mem_reg_req", Code: `p->reg_type = IRDMA_MEMREG_TYPE_MEM;`},
		{Name: "siw_ctx_resp", Type: "struct siw_uresp_alloc_ctx"},
		{Name: "siw_mr_req", Type: "struct siw_ureq_reg_mr"},
		{Name: "siw_mr_resp", Type: "struct siw_uresp_reg_mr"},
		{Name: "reg_mr", Type: "struct ib_uverbs_reg_mr", Code: `
p->start = 0x7f0000001000ULL; p->length = 0x100000; p->hca_va = 0x7f0000001000ULL; p->pd_handle = 5;
p->access_flags = IB_UVERBS_ACCESS_LOCAL_WRITE | IB_UVERBS_ACCESS_REMOTE_WRITE;`},
	}
	snippets = append(snippets, rdmaWriteSnippets...)
	c := abicheck.Bytes(t, abiTable, snippets)
	checkRDMAWrite(t, c)

	var r request
	r = request{obj: uint16(rdma.UVERBS_OBJECT_MR), method: uint16(rdma.UVERBS_METHOD_REG_DMABUF_MR)}
	check := func(name string, got []byte) {
		t.Helper()
		if d := cmp.Diff(c[name], got); d != "" {
			t.Errorf("%s: bytes differ from C (-C +Go):\n%s", name, d)
		}
	}

	// REG_DMABUF_MR as PD.RegDMABufMR builds it: through a fake kernel that
	// refuses it, then the recorded request.
	k := newFakeKernel(DriverRXE)
	ctx, err := fakeContext(k, DriverRXE)
	if err != nil {
		t.Fatal(err)
	}
	pd := &PD{c: ctx, handle: 5, mrs: map[*MR]struct{}{}}
	k.fail["MR.REG_DMABUF_MR"] = 95
	pd.RegDMABufMR(-1, 0x3000, 0x200000, 0x1000003000, AccessLocalWrite|AccessRemoteRead|AccessRelaxedOrdering)
	got := append([]byte(nil), k.lastReq...)
	for _, i := range []int{7, 8} {
		binary.LittleEndian.PutUint64(got[hdrSize+attrSize*i+8:], 0)
	}
	check("reg_dmabuf_mr", got)

	r = request{obj: uint16(rdma.UVERBS_OBJECT_DEVICE), method: uint16(rdma.UVERBS_METHOD_QUERY_PORT)}
	r.inline(uint16(rdma.UVERBS_ATTR_QUERY_PORT_PORT_NUM), 8, 1)
	r.ptrOut(uint16(rdma.UVERBS_ATTR_QUERY_PORT_RESP), queryPortRespExSize)
	check("query_port", wire(&r, DriverRXE))

	// ALLOC_PD for mlx5 as invokeWrite builds it: CORE_IN is the 8-byte
	// request (inline), CORE_OUT and UHW_OUT are addresses.
	k5 := newFakeKernel(DriverMLX5)
	c5, err := fakeContext(k5, DriverMLX5)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c5.AllocPD(); err != nil {
		t.Fatal(err)
	}
	got = append([]byte(nil), k5.lastReq...)
	for _, i := range []int{2, 3} {
		binary.LittleEndian.PutUint64(got[hdrSize+attrSize*i+8:], 0)
	}
	check("alloc_pd_mlx5", got)

	r = request{obj: uint16(rdma.UVERBS_OBJECT_MR), method: uint16(rdma.UVERBS_METHOD_MR_DESTROY)}
	r.idr(uint16(rdma.UVERBS_ATTR_DESTROY_MR_HANDLE), 9)
	check("mr_destroy", wire(&r, DriverRXE))

	mlx5 := driverDataFor(DriverMLX5)
	check("mlx5_ctx_req", mlx5.getContextIn)
	if n := len(c["mlx5_pd_resp"]); mlx5.allocPDOutLen < n {
		t.Errorf("mlx5 ALLOC_PD output area %d bytes, the driver writes %d", mlx5.allocPDOutLen, n)
	}
	irdma := driverDataFor(DriverIRDMA)
	check("irdma_ctx_req", irdma.getContextIn)
	check("irdma_mr_req", irdma.regMRIn)
	siw := driverDataFor(DriverSIW)
	if n := len(c["siw_ctx_resp"]); siw.getContextOutLen < n {
		t.Errorf("siw GET_CONTEXT output area %d bytes, the driver needs %d", siw.getContextOutLen, n)
	}
	check("siw_mr_req", siw.regMRIn)
	if n := len(c["siw_mr_resp"]); siw.regMROutLen < n {
		t.Errorf("siw REG_MR output area %d bytes, the driver needs %d", siw.regMROutLen, n)
	}

	// The write-path REG_MR request as PD.RegMR builds it, response address
	// zeroed: through the fake kernel's legacy path.
	kw := newFakeKernel(DriverRXE)
	kw.noIoctl = true
	cw, err := fakeContext(kw, DriverRXE)
	if err != nil {
		t.Fatal(err)
	}
	var seen []byte
	kw2 := &recordingVerbs{verbsFile: kw, onWrite: func(b []byte, n int) { seen = append([]byte(nil), b[8:n]...) }}
	cw.f = kw2
	pdw, err := cw.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	pdw.handle = 5
	kw.pds[5] = true
	if _, err := pdw.RegMR(0x7f0000001000, 0x100000, 0x7f0000001000, AccessLocalWrite|AccessRemoteWrite); err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint64(seen, 0)
	check("reg_mr", seen)
}

// recordingVerbs passes calls through and shows write payloads to a hook.
type recordingVerbs struct {
	verbsFile
	onWrite func(b []byte, n int)
}

func (r *recordingVerbs) write(b []byte, n int) error {
	r.onWrite(b, n)
	return r.verbsFile.write(b, n)
}

// The data path's layouts, filled by gcc the same way: rxe send WQEs of
// every operation, a receive WQE, and the MODIFY_QP requests of RC's
// transitions.
var rdmaWriteSnippets = []abicheck.Snippet{
	{Name: "rxe_write_wqe", Type: "struct rxe_send_wqe", Extra: 32, Code: `
p->wr.wr_id = 0xabc; p->wr.opcode = IB_UVERBS_WR_RDMA_WRITE; p->wr.send_flags = 2;
p->wr.wr.rdma.remote_addr = 0x7f0000200000ULL; p->wr.wr.rdma.rkey = 0x355;
p->iova = 0x7f0000200000ULL; p->dma.length = 8192 + 16; p->dma.resid = 8192 + 16; p->dma.num_sge = 2;
p->dma.sge[0].addr = 0x7f0000100000ULL; p->dma.sge[0].length = 8192; p->dma.sge[0].lkey = 0x344;
p->dma.sge[1].addr = 0x7f0000300000ULL; p->dma.sge[1].length = 16; p->dma.sge[1].lkey = 0x345;`},
	{Name: "rxe_write_imm_wqe", Type: "struct rxe_send_wqe", Extra: 16, Code: `
p->wr.wr_id = 7; p->wr.opcode = IB_UVERBS_WR_RDMA_WRITE_WITH_IMM; p->wr.send_flags = 2 | 4; p->wr.ex.imm_data = __builtin_bswap32(0xdeadbeef);
p->wr.wr.rdma.remote_addr = 0x1000; p->wr.wr.rdma.rkey = 9; p->iova = 0x1000; p->dma.length = 64; p->dma.resid = 64; p->dma.num_sge = 1;
p->dma.sge[0].addr = 0x2000; p->dma.sge[0].length = 64; p->dma.sge[0].lkey = 3;`},
	{Name: "rxe_send_imm_wqe", Type: "struct rxe_send_wqe", Extra: 16, Code: `
p->wr.wr_id = 8; p->wr.opcode = IB_UVERBS_WR_SEND_WITH_IMM; p->wr.ex.imm_data = __builtin_bswap32(77);
p->dma.length = 64; p->dma.resid = 64; p->dma.num_sge = 1;
p->dma.sge[0].addr = 0x2000; p->dma.sge[0].length = 64; p->dma.sge[0].lkey = 3;`},
	{Name: "rxe_send_wqe", Type: "struct rxe_send_wqe", Code: `
p->wr.wr_id = 9; p->wr.opcode = IB_UVERBS_WR_SEND; p->wr.send_flags = 1;`},
	{Name: "rxe_read_wqe", Type: "struct rxe_send_wqe", Extra: 16, Code: `
p->wr.wr_id = 10; p->wr.opcode = IB_UVERBS_WR_RDMA_READ; p->wr.send_flags = 2;
p->wr.wr.rdma.remote_addr = 0x5000; p->wr.wr.rdma.rkey = 11; p->iova = 0x5000; p->dma.length = 4096; p->dma.resid = 4096; p->dma.num_sge = 1;
p->dma.sge[0].addr = 0x6000; p->dma.sge[0].length = 4096; p->dma.sge[0].lkey = 12;`},
	{Name: "rxe_recv_wqe", Type: "struct rxe_recv_wqe", Extra: 32, Code: `
p->wr_id = 0x55; p->dma.length = 300; p->dma.resid = 300; p->dma.num_sge = 2;
p->dma.sge[0].addr = 0x7000; p->dma.sge[0].length = 100; p->dma.sge[0].lkey = 13;
p->dma.sge[1].addr = 0x8000; p->dma.sge[1].length = 200; p->dma.sge[1].lkey = 14;`},
	{Name: "post_send_doorbell", Type: "struct ib_uverbs_post_send", Code: `
p->qp_handle = 6; p->wqe_size = sizeof(struct ib_uverbs_send_wr);`},
	{Name: "modify_init", Type: "struct ib_uverbs_modify_qp", Code: `
p->qp_handle = 4; p->attr_mask = 0x1 | 0x8 | 0x10 | 0x20;
p->qp_state = 1; p->port_num = 1; p->pkey_index = 2; p->qp_access_flags = IB_UVERBS_ACCESS_LOCAL_WRITE | IB_UVERBS_ACCESS_REMOTE_WRITE;`},
	{Name: "modify_rtr", Type: "struct ib_uverbs_modify_qp", Code: `
p->qp_handle = 4; p->attr_mask = 0x129181;
p->qp_state = 2; for (int i = 0; i < 16; i++) p->dest.dgid[i] = i + 1; p->dest.sgid_index = 1; p->dest.hop_limit = 64;
p->dest.flow_label = 0x12345; p->dest.dlid = 0xbeef; p->dest.traffic_class = 3; p->dest.sl = 4; p->dest.src_path_bits = 5; p->dest.static_rate = 6;
p->dest.is_global = 1; p->dest.port_num = 1; p->path_mtu = 3; p->dest_qp_num = 18; p->rq_psn = 0x123456; p->max_dest_rd_atomic = 1; p->min_rnr_timer = 12;`},
	{Name: "modify_rts", Type: "struct ib_uverbs_modify_qp", Code: `
p->qp_handle = 4; p->attr_mask = 0x12E01;
p->qp_state = 3; p->sq_psn = 0xabcdef; p->timeout = 14; p->retry_cnt = 7; p->rnr_retry = 7; p->max_rd_atomic = 1;
p->alt_port_num = 2; p->alt_timeout = 3; p->alt_pkey_index = 9; p->cur_qp_state = 2; p->path_mig_state = 1; p->en_sqd_async_notify = 1;
p->alt_dest.dgid[0] = 0xfe; p->alt_dest.port_num = 2; p->qkey = 0x11111111; p->alt_dest.is_global = 1;`},
	{Name: "qp_attr", Type: "struct ib_uverbs_qp_attr", Code: `
p->qp_attr_mask = 0x129181 | (1 << 25); p->qp_state = 2; p->cur_qp_state = 1; p->path_mtu = 3; p->path_mig_state = 2;
p->qkey = 0x1234; p->rq_psn = 0x111; p->sq_psn = 0x222; p->dest_qp_num = 0x333; p->qp_access_flags = 7;
for (int i = 0; i < 16; i++) p->ah_attr.grh.dgid[i] = 0x10 + i;
p->ah_attr.grh.flow_label = 0x5555; p->ah_attr.grh.sgid_index = 1; p->ah_attr.grh.hop_limit = 64; p->ah_attr.grh.traffic_class = 2;
p->ah_attr.dlid = 0x77; p->ah_attr.sl = 3; p->ah_attr.src_path_bits = 4; p->ah_attr.static_rate = 5; p->ah_attr.is_global = 1; p->ah_attr.port_num = 1;
p->alt_ah_attr.port_num = 2; p->alt_ah_attr.grh.dgid[15] = 0xee;
p->max_send_wr = 99; p->pkey_index = 0x102; p->alt_pkey_index = 0x103; p->en_sqd_async_notify = 1; p->max_rd_atomic = 4;
p->max_dest_rd_atomic = 5; p->min_rnr_timer = 12; p->port_num = 1; p->timeout = 17; p->retry_cnt = 7; p->rnr_retry = 6;
p->alt_port_num = 2; p->alt_timeout = 9;`},
}

func checkRDMAWrite(t *testing.T, c map[string][]byte) {
	t.Helper()
	cmpBytes := func(name string, got []byte) {
		t.Helper()
		if d := cmp.Diff(c[name], got); d != "" {
			t.Errorf("%s differs from C (-C +Go):\n%s", name, d)
		}
	}
	wqe := func(extra int, wr SendWR) []byte {
		w := make([]byte, rxeSendWQESize+extra)
		var n uint32
		for _, s := range wr.SG {
			n += s.Length
		}
		encodeSendWQE(w, &wr, n)
		return w
	}
	cmpBytes("rxe_write_wqe", wqe(32, SendWR{ID: 0xabc, Op: OpRDMAWrite, Flags: SendSignaled, RemoteAddr: 0x7f0000200000, RKey: 0x355,
		SG: []SGE{{Addr: 0x7f0000100000, Length: 8192, LKey: 0x344}, {Addr: 0x7f0000300000, Length: 16, LKey: 0x345}}}))
	cmpBytes("rxe_write_imm_wqe", wqe(16, SendWR{ID: 7, Op: OpRDMAWriteImm, Flags: SendSignaled | SendSolicited, Imm: 0xdeadbeef,
		RemoteAddr: 0x1000, RKey: 9, SG: []SGE{{Addr: 0x2000, Length: 64, LKey: 3}}}))
	cmpBytes("rxe_send_imm_wqe", wqe(16, SendWR{ID: 8, Op: OpSendImm, Imm: 77, RemoteAddr: 0xdead, RKey: 0xbeef,
		SG: []SGE{{Addr: 0x2000, Length: 64, LKey: 3}}}))
	cmpBytes("rxe_send_wqe", wqe(0, SendWR{ID: 9, Op: OpSend, Flags: SendFence, Imm: 5}))
	cmpBytes("rxe_read_wqe", wqe(16, SendWR{ID: 10, Op: OpRDMARead, Flags: SendSignaled, RemoteAddr: 0x5000, RKey: 11,
		SG: []SGE{{Addr: 0x6000, Length: 4096, LKey: 12}}}))
	rw := make([]byte, rxeRecvWQESize+32)
	encodeRecvWQE(rw, &RecvWR{ID: 0x55, SG: []SGE{{Addr: 0x7000, Length: 100, LKey: 13}, {Addr: 0x8000, Length: 200, LKey: 14}}}, 300)
	cmpBytes("rxe_recv_wqe", rw)
	bell := newDoorbell(6)
	le := binary.LittleEndian
	if cmd, in, out := le.Uint32(bell), le.Uint16(bell[4:]), le.Uint16(bell[6:]); cmd != uint32(rdma.IB_USER_VERBS_CMD_POST_SEND) || int(in)*4 != 8+len(c["post_send_doorbell"]) || out != 1 {
		t.Errorf("doorbell header: command %d, %d words in, %d out; want POST_SEND, %d, 1", cmd, in, out, (8+len(c["post_send_doorbell"]))/4)
	}
	db := append([]byte(nil), bell[8:32]...)
	le.PutUint64(db, 0)
	cmpBytes("post_send_doorbell", db)

	var gid [16]byte
	for i := range gid {
		gid[i] = byte(i + 1)
	}
	cmpBytes("modify_init", encodeModifyQP(4, &QPAttr{Mask: AttrState | AttrAccessFlags | AttrPKeyIndex | AttrPort,
		State: QPSInit, Port: 1, PKeyIndex: 2, Access: AccessLocalWrite | AccessRemoteWrite}))
	cmpBytes("modify_rtr", encodeModifyQP(4, &QPAttr{Mask: AttrState | AttrAV | AttrPathMTU | AttrDestQPN | AttrRQPSN | AttrMaxDestRdAtomic | AttrMinRNRTimer,
		State: QPSRTR, PathMTU: 3, DestQPN: 18, RQPSN: 0x123456, MaxDestRdAtomic: 1, MinRNRTimer: 12,
		AH: AH{DGID: gid, SGIDIndex: 1, HopLimit: 64, FlowLabel: 0x12345, DLID: 0xbeef, TrafficClass: 3, SL: 4, SrcPathBits: 5, StaticRate: 6, IsGlobal: true, Port: 1}}))
	cmpBytes("modify_rts", encodeModifyQP(4, &QPAttr{Mask: AttrState | AttrTimeout | AttrRetryCnt | AttrRNRRetry | AttrSQPSN | AttrMaxQPRdAtomic,
		State: QPSRTS, SQPSN: 0xabcdef, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1,
		AltPort: 2, AltTimeout: 3, AltPKeyIndex: 9, CurState: QPSRTR, PathMigState: 1, EnSQDAsync: 1, QKey: 0x11111111,
		AltAH: AH{DGID: [16]byte{0xfe}, Port: 2, IsGlobal: true}}))

	got, err := DecodeQPAttr(c["qp_attr"])
	if err != nil {
		t.Fatal(err)
	}
	var dgid [16]byte
	for i := range dgid {
		dgid[i] = byte(0x10 + i)
	}
	want := QPAttr{Mask: 0x129181, State: QPSRTR, CurState: QPSInit, PathMTU: 3, PathMigState: 2, QKey: 0x1234, RQPSN: 0x111, SQPSN: 0x222,
		DestQPN: 0x333, Access: 7, PKeyIndex: 0x102, AltPKeyIndex: 0x103, EnSQDAsync: 1, MaxRdAtomic: 4, MaxDestRdAtomic: 5,
		MinRNRTimer: 12, Port: 1, Timeout: 17, RetryCnt: 7, RNRRetry: 6, AltPort: 2, AltTimeout: 9,
		AH:    AH{DGID: dgid, FlowLabel: 0x5555, SGIDIndex: 1, HopLimit: 64, TrafficClass: 2, DLID: 0x77, SL: 3, SrcPathBits: 4, StaticRate: 5, IsGlobal: true, Port: 1},
		AltAH: AH{DGID: [16]byte{15: 0xee}, Port: 2}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("DecodeQPAttr of gcc's struct ib_uverbs_qp_attr (-want +got):\n%s", d)
	}
}
