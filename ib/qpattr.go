package ib

import (
	"encoding/binary"
	"fmt"
)

// QPState is a queue pair's state (enum ib_qp_state of the kernel's
// include/rdma/ib_verbs.h).
type QPState uint8

// Queue pair states.
const (
	QPSReset QPState = 0
	QPSInit  QPState = 1
	QPSRTR   QPState = 2 // ready to receive
	QPSRTS   QPState = 3 // ready to send
	QPSSQD   QPState = 4
	QPSSQE   QPState = 5
	QPSErr   QPState = 6
)

// String returns the state's name, such as "RTS".
func (s QPState) String() string {
	if int(s) < len(qpStateNames) {
		return qpStateNames[s]
	}
	return fmt.Sprintf("QPState(%d)", uint8(s))
}

var qpStateNames = [...]string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"}

// QPAttrMask says which fields of a QPAttr a modification sets (enum
// ib_qp_attr_mask, include/rdma/ib_verbs.h; libibverbs' IBV_QP_* share the
// values).
type QPAttrMask uint32

// Attribute mask bits.
const (
	AttrState           QPAttrMask = 1 << 0
	AttrCurState        QPAttrMask = 1 << 1
	AttrAccessFlags     QPAttrMask = 1 << 3
	AttrPKeyIndex       QPAttrMask = 1 << 4
	AttrPort            QPAttrMask = 1 << 5
	AttrQKey            QPAttrMask = 1 << 6
	AttrAV              QPAttrMask = 1 << 7
	AttrPathMTU         QPAttrMask = 1 << 8
	AttrTimeout         QPAttrMask = 1 << 9
	AttrRetryCnt        QPAttrMask = 1 << 10
	AttrRNRRetry        QPAttrMask = 1 << 11
	AttrRQPSN           QPAttrMask = 1 << 12
	AttrMaxQPRdAtomic   QPAttrMask = 1 << 13
	AttrAltPath         QPAttrMask = 1 << 14
	AttrMinRNRTimer     QPAttrMask = 1 << 15
	AttrSQPSN           QPAttrMask = 1 << 16
	AttrMaxDestRdAtomic QPAttrMask = 1 << 17
	AttrPathMigState    QPAttrMask = 1 << 18
	AttrCap             QPAttrMask = 1 << 19
	AttrDestQPN         QPAttrMask = 1 << 20

	// qpMaskAll is every bit MODIFY_QP accepts (uverbs_cmd.c refuses
	// higher ones with EOPNOTSUPP).
	qpMaskAll QPAttrMask = 1<<21 - 1
)

// AH is an address vector: where a connected QP sends (struct
// ib_uverbs_qp_dest in MODIFY_QP, struct ib_uverbs_ah_attr in the CM's
// answers). RoCE needs IsGlobal with a DGID and a valid SGIDIndex.
type AH struct {
	DGID         [16]byte // network order; ::ffff:a.b.c.d for IPv4 on RoCE v2
	FlowLabel    uint32
	DLID         uint16
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
	SL           uint8
	SrcPathBits  uint8
	StaticRate   uint8
	IsGlobal     bool
	Port         uint8
}

// QPAttr is a set of queue pair attributes; Mask names the ones a
// modification sets. The RDMA CM answers them ready to use (cm's
// InitQPAttr). It is plain data.
type QPAttr struct {
	Mask            QPAttrMask
	State           QPState
	CurState        QPState
	PathMTU         uint8 // 1 = 256 bytes ... 5 = 4096 bytes
	PathMigState    uint8
	QKey            uint32
	RQPSN           uint32
	SQPSN           uint32
	DestQPN         uint32
	Access          Access
	PKeyIndex       uint16
	AltPKeyIndex    uint16
	EnSQDAsync      uint8
	MaxRdAtomic     uint8
	MaxDestRdAtomic uint8
	MinRNRTimer     uint8
	Port            uint8
	Timeout         uint8
	RetryCnt        uint8
	RNRRetry        uint8
	AltPort         uint8
	AltTimeout      uint8
	AH              AH
	AltAH           AH
}

// qpAttrSize is sizeof(struct ib_uverbs_qp_attr).
const qpAttrSize = 144

// DecodeQPAttr decodes a struct ib_uverbs_qp_attr (include/uapi/rdma/
// ib_user_verbs.h), as the RDMA CM's INIT_QP_ATTR answers it: u32 mask@0,
// qp_state@4, cur_qp_state@8, path_mtu@12, path_mig_state@16, qkey@20,
// rq_psn@24, sq_psn@28, dest_qp_num@32, qp_access_flags@36, ah_attr@40,
// alt_ah_attr@72, the caps@104, then u16 pkey_index@124,
// alt_pkey_index@126 and u8 en_sqd_async_notify@128, max_rd_atomic@130,
// max_dest_rd_atomic@131, min_rnr_timer@132, port_num@133, timeout@134,
// retry_cnt@135, rnr_retry@136, alt_port_num@137, alt_timeout@138.
// Mask bits MODIFY_QP does not know are dropped.
func DecodeQPAttr(b []byte) (QPAttr, error) {
	if len(b) < qpAttrSize {
		return QPAttr{}, fmt.Errorf("qp attributes: %d bytes: %w", len(b), ErrMalformed)
	}
	le := binary.LittleEndian
	a := QPAttr{
		Mask:            QPAttrMask(le.Uint32(b[0:])) & qpMaskAll,
		State:           QPState(le.Uint32(b[4:])),
		CurState:        QPState(le.Uint32(b[8:])),
		PathMTU:         uint8(le.Uint32(b[12:])),
		PathMigState:    uint8(le.Uint32(b[16:])),
		QKey:            le.Uint32(b[20:]),
		RQPSN:           le.Uint32(b[24:]),
		SQPSN:           le.Uint32(b[28:]),
		DestQPN:         le.Uint32(b[32:]),
		Access:          Access(le.Uint32(b[36:])),
		AH:              decodeAHAttr(b[40:72]),
		AltAH:           decodeAHAttr(b[72:104]),
		PKeyIndex:       le.Uint16(b[124:]),
		AltPKeyIndex:    le.Uint16(b[126:]),
		EnSQDAsync:      b[128],
		MaxRdAtomic:     b[130],
		MaxDestRdAtomic: b[131],
		MinRNRTimer:     b[132],
		Port:            b[133],
		Timeout:         b[134],
		RetryCnt:        b[135],
		RNRRetry:        b[136],
		AltPort:         b[137],
		AltTimeout:      b[138],
	}
	return a, nil
}

// decodeAHAttr reads a struct ib_uverbs_ah_attr: grh {dgid@0,
// flow_label@16, sgid_index@20, hop_limit@21, traffic_class@22}, dlid@24,
// sl@26, src_path_bits@27, static_rate@28, is_global@29, port_num@30.
func decodeAHAttr(b []byte) AH {
	return AH{
		DGID:         [16]byte(b[0:16]),
		FlowLabel:    binary.LittleEndian.Uint32(b[16:]),
		SGIDIndex:    b[20],
		HopLimit:     b[21],
		TrafficClass: b[22],
		DLID:         binary.LittleEndian.Uint16(b[24:]),
		SL:           b[26],
		SrcPathBits:  b[27],
		StaticRate:   b[28],
		IsGlobal:     b[29] != 0,
		Port:         b[30],
	}
}

// modifyQPSize is sizeof(struct ib_uverbs_modify_qp).
const modifyQPSize = 112

// encodeModifyQP lays out a struct ib_uverbs_modify_qp for QP handle h:
// dest@0 and alt_dest@32 (struct ib_uverbs_qp_dest), u32 qp_handle@64,
// attr_mask@68, qkey@72, rq_psn@76, sq_psn@80, dest_qp_num@84,
// qp_access_flags@88, u16 pkey_index@92, alt_pkey_index@94, u8
// qp_state@96, cur_qp_state@97, path_mtu@98, path_mig_state@99,
// en_sqd_async_notify@100, max_rd_atomic@101, max_dest_rd_atomic@102,
// min_rnr_timer@103, port_num@104, timeout@105, retry_cnt@106,
// rnr_retry@107, alt_port_num@108, alt_timeout@109. The kernel reads only
// the fields the mask names.
func encodeModifyQP(h uint32, a *QPAttr) []byte {
	b := make([]byte, modifyQPSize)
	le := binary.LittleEndian
	encodeQPDest(b[0:32], &a.AH)
	encodeQPDest(b[32:64], &a.AltAH)
	le.PutUint32(b[64:], h)
	le.PutUint32(b[68:], uint32(a.Mask&qpMaskAll))
	le.PutUint32(b[72:], a.QKey)
	le.PutUint32(b[76:], a.RQPSN&0xffffff)
	le.PutUint32(b[80:], a.SQPSN&0xffffff)
	le.PutUint32(b[84:], a.DestQPN)
	le.PutUint32(b[88:], uint32(a.Access))
	le.PutUint16(b[92:], a.PKeyIndex)
	le.PutUint16(b[94:], a.AltPKeyIndex)
	b[96] = uint8(a.State)
	b[97] = uint8(a.CurState)
	b[98] = a.PathMTU
	b[99] = a.PathMigState
	b[100] = a.EnSQDAsync
	b[101] = a.MaxRdAtomic
	b[102] = a.MaxDestRdAtomic
	b[103] = a.MinRNRTimer
	b[104] = a.Port
	b[105] = a.Timeout
	b[106] = a.RetryCnt
	b[107] = a.RNRRetry
	b[108] = a.AltPort
	b[109] = a.AltTimeout
	return b
}

// encodeQPDest writes a struct ib_uverbs_qp_dest: dgid@0, flow_label@16,
// dlid@20, sgid_index@24, hop_limit@25, traffic_class@26, sl@27,
// src_path_bits@28, static_rate@29, is_global@30, port_num@31.
func encodeQPDest(b []byte, ah *AH) {
	copy(b[0:16], ah.DGID[:])
	binary.LittleEndian.PutUint32(b[16:], ah.FlowLabel)
	binary.LittleEndian.PutUint16(b[20:], ah.DLID)
	b[24] = ah.SGIDIndex
	b[25] = ah.HopLimit
	b[26] = ah.TrafficClass
	b[27] = ah.SL
	b[28] = ah.SrcPathBits
	b[29] = ah.StaticRate
	if ah.IsGlobal {
		b[30] = 1
	}
	b[31] = ah.Port
}
