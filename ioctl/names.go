package ioctl

import (
	"strconv"

	"github.com/gaudi-go/gaudi/uapi/hl"
)

// The ioctl numbers, as indexes into the request tables.
const (
	nrInfo   = hl.HL_IOCTL_INFO
	nrCB     = hl.HL_IOCTL_CB
	nrCS     = hl.HL_IOCTL_CS
	nrWaitCS = hl.HL_IOCTL_WAIT_CS
	nrMemory = hl.HL_IOCTL_MEMORY
	nrDebug  = hl.HL_IOCTL_DEBUG
	nrNIC    = hl.HL_IOCTL_NIC
	numNr    = nrNIC + 1
)

// opNames gives Error.Op for each ioctl number.
var opNames = [numNr]string{
	nrInfo:   "INFO",
	nrCB:     "CB",
	nrCS:     "CS",
	nrWaitCS: "WAIT_CS",
	nrMemory: "MEMORY",
	nrDebug:  "DEBUG",
	nrNIC:    "NIC",
}

// csKinds are the flags that choose the kind of a submission, in the order
// the driver tests them (hl_cs_get_cs_type in command_submission.c). A
// submission with none of them is a plain one and has no sub-operation name,
// unless it is a part of a staged submission: that is named
// STAGED_SUBMISSION, since the driver refuses the flag on ASICs without
// staged submissions before it looks at the kind (hl_cs_sanity_checks).
var csKinds = [...]uint32{
	hl.HL_CS_FLAGS_SIGNAL,
	hl.HL_CS_FLAGS_WAIT,
	hl.HL_CS_FLAGS_COLLECTIVE_WAIT,
	hl.HL_CS_FLAGS_RESERVE_SIGNALS_ONLY,
	hl.HL_CS_FLAGS_UNRESERVE_SIGNALS_ONLY,
	hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND,
	hl.HL_CS_FLAGS_ENGINES_COMMAND,
	hl.HL_CS_FLAGS_FLUSH_PCI_HBW_WRITES,
}

// waitKinds are the flags that choose the kind of a wait, in the order the
// driver tests them (hl_wait_ioctl); a wait on one sequence has no name.
var waitKinds = [...]uint32{
	hl.HL_WAIT_CS_FLAGS_INTERRUPT,
	hl.HL_WAIT_CS_FLAGS_MULTI_CS,
}

// subName names sub-operation code of ioctl nr with the generated name
// tables of package hl, upstream's and then the out-of-tree driver's: code
// is the op field for INFO, CB, MEMORY, DEBUG and NIC,
// and the flags for CS and WAIT_CS, named by their kind (a plain staged
// submission is named STAGED_SUBMISSION). It only runs to build an error, so it may
// allocate for an unknown op.
func subName(nr int, code uint32) string {
	var table, outOfTree map[uint32]string
	switch nr {
	case nrInfo:
		table, outOfTree = hl.InfoOpNames, hl.OutOfTreeInfoOpNames
	case nrCB:
		table = hl.CBOpNames
	case nrMemory:
		table, outOfTree = hl.MemOpNames, hl.OutOfTreeMemOpNames
	case nrDebug:
		table, outOfTree = hl.DebugOpNames, hl.OutOfTreeDebugOpNames
	case nrNIC:
		table = hl.NICOpNames
	case nrCS:
		if k := flagKind(code, csKinds[:], hl.CSFlagNames); k != "" {
			return k
		}
		if code&hl.HL_CS_FLAGS_STAGED_SUBMISSION != 0 {
			return hl.CSFlagNames[hl.HL_CS_FLAGS_STAGED_SUBMISSION]
		}
		return ""
	case nrWaitCS:
		return flagKind(code, waitKinds[:], hl.WaitCSFlagNames)
	default:
		return ""
	}
	if name, ok := table[code]; ok {
		return name
	}
	if name, ok := outOfTree[code]; ok {
		return name
	}
	return "OP_" + strconv.FormatUint(uint64(code), 10)
}

// flagKind returns the name of the first of kinds set in flags, or "".
func flagKind(flags uint32, kinds []uint32, names map[uint32]string) string {
	for _, k := range kinds {
		if flags&k != 0 {
			return names[k]
		}
	}
	return ""
}
