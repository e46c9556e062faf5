package hl

// Names of the out-of-tree driver's additions, for error messages and
// tracers; written by hand beside oot.go, whose constants they name.

// NICOpNames maps NIC ops (HL_NIC_OP_*) to their names without the prefix.
var NICOpNames = map[uint32]string{
	HL_NIC_OP_ALLOC_CONN:              "ALLOC_CONN",
	HL_NIC_OP_SET_REQ_CONN_CTX:        "SET_REQ_CONN_CTX",
	HL_NIC_OP_SET_RES_CONN_CTX:        "SET_RES_CONN_CTX",
	HL_NIC_OP_DESTROY_CONN:            "DESTROY_CONN",
	HL_NIC_OP_CQ_CREATE:               "CQ_CREATE",
	HL_NIC_OP_CQ_DESTROY:              "CQ_DESTROY",
	HL_NIC_OP_CQ_WAIT:                 "CQ_WAIT",
	HL_NIC_OP_CQ_POLL:                 "CQ_POLL",
	HL_NIC_OP_CQ_UPDATE_CONSUMED_CQES: "CQ_UPDATE_CONSUMED_CQES",
	HL_NIC_OP_USER_WQ_SET:             "USER_WQ_SET",
	HL_NIC_OP_USER_WQ_UNSET:           "USER_WQ_UNSET",
	HL_NIC_OP_USER_CQ_SET:             "USER_CQ_SET",
	HL_NIC_OP_USER_CQ_UNSET:           "USER_CQ_UNSET",
	HL_NIC_OP_USER_CQ_UPDATE_CI:       "USER_CQ_UPDATE_CI",
	HL_NIC_OP_ALLOC_USER_CQ_ID:        "ALLOC_USER_CQ_ID",
	HL_NIC_OP_SET_USER_APP_PARAMS:     "SET_USER_APP_PARAMS",
	HL_NIC_OP_GET_USER_APP_PARAMS:     "GET_USER_APP_PARAMS",
	HL_NIC_OP_ALLOC_USER_DB_FIFO:      "ALLOC_USER_DB_FIFO",
	HL_NIC_OP_USER_DB_FIFO_SET:        "USER_DB_FIFO_SET",
	HL_NIC_OP_USER_DB_FIFO_UNSET:      "USER_DB_FIFO_UNSET",
	HL_NIC_OP_EQ_POLL:                 "EQ_POLL",
	HL_NIC_OP_USER_ENCAP_ALLOC:        "USER_ENCAP_ALLOC",
	HL_NIC_OP_USER_ENCAP_SET:          "USER_ENCAP_SET",
	HL_NIC_OP_USER_ENCAP_UNSET:        "USER_ENCAP_UNSET",
	HL_NIC_OP_USER_CCQ_SET:            "USER_CCQ_SET",
	HL_NIC_OP_USER_CCQ_UNSET:          "USER_CCQ_UNSET",
	HL_NIC_OP_USER_CQ_ID_SET:          "USER_CQ_ID_SET",
	HL_NIC_OP_USER_CQ_ID_UNSET:        "USER_CQ_ID_UNSET",
	HL_NIC_OP_ALLOC_COLL_CONN:         "ALLOC_COLL_CONN",
	HL_NIC_OP_DUMP_QP:                 "DUMP_QP",
}

// OutOfTreeInfoOpNames maps the INFO ops only the out-of-tree driver has
// to their names; InfoOpNames holds upstream's.
var OutOfTreeInfoOpNames = map[uint32]string{
	HL_INFO_HABANA_LINK_STATE:        "HABANA_LINK_STATE",
	HL_INFO_HABANA_LINK_COUNTERS:     "HABANA_LINK_COUNTERS",
	HL_INFO_TIME_SYNC_PER_DIE:        "TIME_SYNC_PER_DIE",
	HL_INFO_MEMORY_CONSUMPTION:       "MEMORY_CONSUMPTION",
	HL_INFO_CONFIG_DRM_ACCEL_ENABLED: "CONFIG_DRM_ACCEL_ENABLED",
	HL_INFO_MODULE_PARAMS:            "MODULE_PARAMS",
}

// OutOfTreeMemOpNames maps the MEMORY ops only the out-of-tree driver has
// to their names; MemOpNames holds upstream's.
var OutOfTreeMemOpNames = map[uint32]string{
	HL_MEM_OP_REG_DMABUF_FD: "REG_DMABUF_FD",
}

// OutOfTreeDebugOpNames maps the DEBUG ops only the out-of-tree driver has
// to their names; DebugOpNames holds upstream's.
var OutOfTreeDebugOpNames = map[uint32]string{
	HL_DEBUG_OP_FETCH_TRACE:          "FETCH_TRACE",
	HL_DEBUG_OP_DIO:                  "DIO",
	HL_DEBUG_OP_READMEM:              "READMEM",
	HL_DEBUG_OP_MEMCPY:               "MEMCPY",
	HL_DEBUG_OP_SCHED_SUBMIT_BUF:     "SCHED_SUBMIT_BUF",
	HL_DEBUG_OP_READBLOCK:            "READBLOCK",
	HL_DEBUG_ENABLE_ERR_INFO_CAPTURE: "ENABLE_ERR_INFO_CAPTURE",
}
