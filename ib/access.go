package ib

import (
	"strconv"
	"strings"

	"github.com/gaudi-go/gaudi/uapi/rdma"
)

// Access is the set of rights a memory region grants (enum ib_access_flags,
// IB_UVERBS_ACCESS_* in include/uapi/rdma/ib_user_ioctl_verbs.h). The
// kernel requires AccessLocalWrite whenever AccessRemoteWrite or
// AccessRemoteAtomic is set.
type Access uint32

// Access rights. Bits from AccessRelaxedOrdering up are optional: a kernel
// that does not know them ignores them instead of failing.
const (
	// AccessLocalWrite lets the NIC write the region (receives, RDMA READ
	// responses landing here).
	AccessLocalWrite Access = Access(rdma.IB_UVERBS_ACCESS_LOCAL_WRITE)
	// AccessRemoteWrite lets peers RDMA WRITE into the region.
	AccessRemoteWrite Access = Access(rdma.IB_UVERBS_ACCESS_REMOTE_WRITE)
	// AccessRemoteRead lets peers RDMA READ from the region.
	AccessRemoteRead Access = Access(rdma.IB_UVERBS_ACCESS_REMOTE_READ)
	// AccessRemoteAtomic lets peers issue atomics on the region.
	AccessRemoteAtomic Access = Access(rdma.IB_UVERBS_ACCESS_REMOTE_ATOMIC)
	// AccessMWBind allows binding memory windows to the region.
	AccessMWBind Access = Access(rdma.IB_UVERBS_ACCESS_MW_BIND)
	// AccessZeroBased makes the region's addresses start at 0.
	AccessZeroBased Access = Access(rdma.IB_UVERBS_ACCESS_ZERO_BASED)
	// AccessOnDemand asks for on-demand paging instead of pinning.
	AccessOnDemand Access = Access(rdma.IB_UVERBS_ACCESS_ON_DEMAND)
	// AccessHugeTLB tells the driver the memory is backed by huge pages.
	AccessHugeTLB Access = Access(rdma.IB_UVERBS_ACCESS_HUGETLB)
	// AccessRelaxedOrdering allows PCIe relaxed ordering for the region's
	// traffic.
	AccessRelaxedOrdering Access = Access(rdma.IB_UVERBS_ACCESS_RELAXED_ORDERING)
)

// AccessDMABufMask is the set of rights REG_DMABUF_MR accepts; the kernel
// refuses any other bit with EINVAL.
const AccessDMABufMask = AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic | AccessRelaxedOrdering

var accessNames = []struct {
	bit  Access
	name string
}{
	{AccessLocalWrite, "LocalWrite"},
	{AccessRemoteWrite, "RemoteWrite"},
	{AccessRemoteRead, "RemoteRead"},
	{AccessRemoteAtomic, "RemoteAtomic"},
	{AccessMWBind, "MWBind"},
	{AccessZeroBased, "ZeroBased"},
	{AccessOnDemand, "OnDemand"},
	{AccessHugeTLB, "HugeTLB"},
	{AccessRelaxedOrdering, "RelaxedOrdering"},
}

// String returns the rights joined with "|", such as
// "LocalWrite|RemoteRead", "0" for none, and unknown bits in hex.
func (a Access) String() string {
	if a == 0 {
		return "0"
	}
	var parts []string
	for _, n := range accessNames {
		if a&n.bit != 0 {
			parts = append(parts, n.name)
			a &^= n.bit
		}
	}
	if a != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(a), 16))
	}
	return strings.Join(parts, "|")
}
