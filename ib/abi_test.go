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

// The layouts TestKernelRDMAWrite writes by hand, filled by gcc the same
// way: the rxe send WQE with one sge and the three MODIFY_QP requests.
var rdmaWriteSnippets = []abicheck.Snippet{
	{Name: "rxe_write_wqe", Type: "struct rxe_send_wqe", Extra: 16, Code: `
p->wr.wr_id = 0xabc; p->wr.opcode = 0; p->wr.send_flags = 2;
p->wr.wr.rdma.remote_addr = 0x7f0000200000ULL; p->wr.wr.rdma.rkey = 0x355;
p->iova = 0x7f0000200000ULL; p->dma.length = 8192; p->dma.resid = 8192; p->dma.num_sge = 1;
p->dma.sge[0].addr = 0x7f0000100000ULL; p->dma.sge[0].length = 8192; p->dma.sge[0].lkey = 0x344;`},
	{Name: "modify_init", Type: "struct ib_uverbs_modify_qp", Code: `
p->qp_state = 1; p->port_num = 1; p->qp_access_flags = IB_UVERBS_ACCESS_LOCAL_WRITE | IB_UVERBS_ACCESS_REMOTE_WRITE;`},
	{Name: "modify_rtr", Type: "struct ib_uverbs_modify_qp", Code: `
p->qp_state = 2; for (int i = 0; i < 16; i++) p->dest.dgid[i] = i + 1; p->dest.sgid_index = 1; p->dest.hop_limit = 1;
p->dest.is_global = 1; p->dest.port_num = 1; p->path_mtu = 3; p->dest_qp_num = 18; p->max_dest_rd_atomic = 1; p->min_rnr_timer = 12;`},
	{Name: "modify_rts", Type: "struct ib_uverbs_modify_qp", Code: `
p->qp_state = 3; p->timeout = 14; p->retry_cnt = 7; p->rnr_retry = 7; p->max_rd_atomic = 1;`},
}

func checkRDMAWrite(t *testing.T, c map[string][]byte) {
	t.Helper()
	wqe := make([]byte, 208+16)
	fillWriteWQE(wqe, 0xabc, 0x7f0000200000, 0x355, 0x7f0000100000, 8192, 0x344)
	if d := cmp.Diff(c["rxe_write_wqe"], wqe); d != "" {
		t.Errorf("rxe send WQE differs from C (-C +Go):\n%s", d)
	}
	var gid [16]byte
	for i := range gid {
		gid[i] = byte(i + 1)
	}
	for name, fill := range map[string]func([]byte) uint32{
		"modify_init": modifyToInit,
		"modify_rtr":  func(m []byte) uint32 { return modifyToRTR(m, gid, 1, 18) },
		"modify_rts":  modifyToRTS,
	} {
		m := make([]byte, 112)
		fill(m)
		if d := cmp.Diff(c[name], m); d != "" {
			t.Errorf("%s differs from C (-C +Go):\n%s", name, d)
		}
	}
}
