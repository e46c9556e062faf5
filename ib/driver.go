package ib

import (
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/gaudi-go/gaudi/uapi/rdma"
)

// DriverID is the kernel's number for an RDMA driver (enum rdma_driver_id
// in include/uapi/rdma/ib_user_ioctl_verbs.h). Every uverbs ioctl carries
// it, and the kernel refuses a request whose id is not the device's with
// EINVAL.
type DriverID uint32

// Driver ids of the NICs this package knows how to talk to, and of the
// software devices used in tests.
const (
	DriverUnknown DriverID = DriverID(rdma.RDMA_DRIVER_UNKNOWN)
	DriverMLX5    DriverID = DriverID(rdma.RDMA_DRIVER_MLX5)
	DriverMLX4    DriverID = DriverID(rdma.RDMA_DRIVER_MLX4)
	DriverBNXTRE  DriverID = DriverID(rdma.RDMA_DRIVER_BNXT_RE)
	DriverIRDMA   DriverID = DriverID(rdma.RDMA_DRIVER_IRDMA)
	DriverRXE     DriverID = DriverID(rdma.RDMA_DRIVER_RXE)
	DriverEFA     DriverID = DriverID(rdma.RDMA_DRIVER_EFA)
	DriverSIW     DriverID = DriverID(rdma.RDMA_DRIVER_SIW)
	DriverERDMA   DriverID = DriverID(rdma.RDMA_DRIVER_ERDMA)
	DriverMANA    DriverID = DriverID(rdma.RDMA_DRIVER_MANA)
)

// driverNames maps driver ids to the kernel module names that register
// them; it also serves DriverIDForName, the fallback when netlink cannot
// give the id.
var driverNames = map[DriverID]string{
	DriverMLX5:                            "mlx5",
	DriverMLX4:                            "mlx4",
	DriverID(rdma.RDMA_DRIVER_CXGB4):      "cxgb4",
	DriverID(rdma.RDMA_DRIVER_MTHCA):      "mthca",
	DriverBNXTRE:                          "bnxt_re",
	DriverID(rdma.RDMA_DRIVER_OCRDMA):     "ocrdma",
	DriverIRDMA:                           "irdma",
	DriverID(rdma.RDMA_DRIVER_VMW_PVRDMA): "vmw_pvrdma",
	DriverID(rdma.RDMA_DRIVER_QEDR):       "qedr",
	DriverID(rdma.RDMA_DRIVER_HNS):        "hns",
	DriverID(rdma.RDMA_DRIVER_USNIC):      "usnic",
	DriverRXE:                             "rxe",
	DriverID(rdma.RDMA_DRIVER_HFI1):       "hfi1",
	DriverID(rdma.RDMA_DRIVER_QIB):        "qib",
	DriverEFA:                             "efa",
	DriverSIW:                             "siw",
	DriverERDMA:                           "erdma",
	DriverMANA:                            "mana",
}

// String returns the driver's short name, such as "rxe" or "mlx5", or
// "DriverID(N)".
func (d DriverID) String() string {
	if d == DriverUnknown {
		return "unknown"
	}
	if n, ok := driverNames[d]; ok {
		return n
	}
	return "DriverID(" + strconv.FormatUint(uint64(d), 10) + ")"
}

// driverAliases are sysfs driver names (the PCI driver of the NIC, or
// the prefix of the RDMA device name) that differ from the short name.
var driverAliases = map[string]DriverID{
	"mlx5_core": DriverMLX5, "mlx4_core": DriverMLX4, "mlx4_ib": DriverMLX4,
	"bnxt_en": DriverBNXTRE, "i40e": DriverIRDMA, "ice": DriverIRDMA, "i40iw": DriverIRDMA,
	"rdma_rxe": DriverRXE, "siw": DriverSIW, "efa": DriverEFA, "mana_ib": DriverMANA,
	"hns_roce": DriverID(rdma.RDMA_DRIVER_HNS), "hns_roce_hw_v2": DriverID(rdma.RDMA_DRIVER_HNS),
	"qede": DriverID(rdma.RDMA_DRIVER_QEDR), "cxgb4": DriverID(rdma.RDMA_DRIVER_CXGB4),
	"vmw_pvrdma": DriverID(rdma.RDMA_DRIVER_VMW_PVRDMA), "erdma": DriverERDMA,
}

// DriverIDForName guesses a driver id from a PCI driver name (such as
// "mlx5_core") or an RDMA device name (such as "rxe0" or "mlx5_1"). It is
// the fallback when RDMA netlink cannot report the id; it returns
// DriverUnknown when nothing matches.
func DriverIDForName(name string) DriverID {
	if id, ok := driverAliases[name]; ok {
		return id
	}
	// Device names are the driver's prefix plus a number, sometimes with
	// an underscore ("mlx5_0", "rxe0", "irdma1", "bnxt_re0").
	base := strings.TrimRight(name, "0123456789")
	base = strings.TrimSuffix(base, "_")
	if id, ok := driverAliases[base]; ok {
		return id
	}
	for id, n := range driverNames {
		if n == base {
			return id
		}
	}
	return DriverUnknown
}

// driverData is the private request data ("udata") a driver needs on the
// calls this package makes. Drivers copy at most what they are given, so
// output areas only need to be large enough for what the driver insists
// on writing.
type driverData struct {
	getContextIn     []byte // UHW_IN of GET_CONTEXT
	getContextOutLen int    // UHW_OUT of GET_CONTEXT
	allocPDOutLen    int    // UHW_OUT of ALLOC_PD
	regMRIn          []byte // UHW_IN of REG_MR
	regMROutLen      int    // UHW_OUT of REG_MR
}

// driverDataFor returns what driver d needs, from the 6.12 drivers:
//
//   - mlx5 (drivers/infiniband/hw/mlx5/main.c, mlx5_ib_alloc_ucontext):
//     GET_CONTEXT needs a struct mlx5_ib_alloc_ucontext_req_v2
//     (include/uapi/rdma/mlx5-abi.h) of at least 16 bytes: we send all 32
//     with total_num_bfregs 1, flags, comp_mask and the reserved fields 0,
//     and lib_caps = MLX5_LIB_CAP_4K_UAR|MLX5_LIB_CAP_DYN_UAR (bit 0 and 1,
//     the u64 at offset 24), which lets the driver skip the static UAR
//     accounting. mlx5_ib_alloc_pd copies a 4-byte struct
//     mlx5_ib_alloc_pd_resp {pdn} unconditionally, so ALLOC_PD needs a
//     4-byte output area.
//   - irdma (hw/irdma/verbs.c, irdma_alloc_ucontext): GET_CONTEXT needs a
//     struct irdma_alloc_ucontext_req {u32 rsvd32; u8 userspace_ver; u8
//     rsvd8[3]; u64 comp_mask} (irdma-abi.h) with userspace_ver between 4
//     and IRDMA_ABI_VER (5), and an output area larger than the legacy
//     minimum; irdma_reg_user_mr reads a struct irdma_mem_reg_req {u16
//     reg_type; u16 cq_pages, rq_pages, sq_pages} with reg_type
//     IRDMA_MEMREG_TYPE_MEM (0).
//   - siw (sw/siw/siw_verbs.c): siw_alloc_ucontext refuses an output area
//     smaller than struct siw_uresp_alloc_ctx (8 bytes); siw_reg_user_mr
//     reads a struct siw_ureq_reg_mr (8 bytes; stag_key 0) and writes a
//     struct siw_uresp_reg_mr (8 bytes).
//   - rxe and the rest: nothing (rxe ignores udata on these calls).
//
// Output areas are 256 bytes where the driver writes a response of its
// own size, which covers every 6.12 response.
func driverDataFor(d DriverID) driverData {
	switch d {
	case DriverMLX5:
		req := make([]byte, 32)
		binary.LittleEndian.PutUint32(req[0:], 1)  // total_num_bfregs
		binary.LittleEndian.PutUint64(req[24:], 3) // lib_caps: 4K_UAR | DYN_UAR
		return driverData{getContextIn: req, getContextOutLen: 256, allocPDOutLen: 8}
	case DriverIRDMA:
		req := make([]byte, 16)
		req[4] = 5 // userspace_ver = IRDMA_ABI_VER
		return driverData{getContextIn: req, getContextOutLen: 256, regMRIn: make([]byte, 8)}
	case DriverSIW:
		return driverData{getContextOutLen: 8, regMRIn: make([]byte, 8), regMROutLen: 8}
	}
	return driverData{}
}
