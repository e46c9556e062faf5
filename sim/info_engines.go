package sim

import (
	"fmt"
	"strings"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// HW_IDLE and ENGINE_STATUS come from the ASIC's is_device_idle, which
// reads every engine's status registers. The simulated engines are always
// idle (command submission arrives later), and their registers read as the
// idle bits the driver checks and nothing else; on Gaudi3 the PDMA
// channels are busy while their rings hold unconsumed packets
// (info_engines_gaudi3.go).
const (
	idleQMGlblSts0   = 0x3FFF     // PQF, CQF and CP idle (QM_IDLE_MASK), both ASICs
	idleQMGlblSts1   = 0x1        // ARC CQF idle (QM_ARC_IDLE_MASK), Gaudi2
	idleQMCGMSts     = 0x100      // agent idle (CGM_IDLE_MASK), both ASICs
	gaudi2IdleMME    = 0xC07FFE00 // MME_ARCH_IDLE_MASK, Gaudi2
	gaudi2IdleTPC    = 0xEA       // TPC_IDLE_MASK, Gaudi2
	gaudiIdleMME     = 0x1180     // MME_ARCH_IDLE_MASK, Gaudi
	gaudiIdleTPC     = 0xEE       // TPC_IDLE_MASK, Gaudi
	gaudi2PCIeDecMsk = 0x300      // PCIE_DEC_EN_MASK
)

// hw_idle: whether every engine is idle and, if not, which are busy.
func (f *File) infoHWIdle(a *hl.InfoArgs) error {
	r := hl.InfoHWIdle{IsIdle: 1}
	if f.dev.prof.asic == Gaudi3 {
		r = hl.InfoHWIdle{}
		f.dev.gaudi3HWIdle(&r)
	}
	return f.copyResult(a, structBytes(&r))
}

// engine_status_info: return_size must be 1 KB..HL_ENGINES_DATA_MAX_SIZE
// and the pointer set (EINVAL); a table that does not fit is ENOMEM, with
// nothing written. Otherwise user_buffer_actual_size is set and that many
// bytes are copied.
func (f *File) infoEngineStatus(a *hl.InfoArgs) error {
	size := a.ReturnSize
	if size < 1024 || size > hl.HL_ENGINES_DATA_MAX_SIZE || a.ReturnPointer.IsNil() {
		return unix.EINVAL
	}
	e := engineData{buf: make([]byte, size)}
	f.dev.engineStatus(&e)
	if e.actual > len(e.buf) {
		return unix.ENOMEM
	}
	a.SetUserBufferActualSize(uint32(e.actual))
	return f.copyOut(a.ReturnPointer.Addr(), e.buf[:e.actual])
}

// engineData is the driver's struct engines_data: each string goes into
// the buffer followed by its NUL (so the table holds a NUL between
// strings) when it fits with room to spare; actual counts every string,
// written or not (hl_engine_data_sprintf).
type engineData struct {
	buf    []byte
	actual int
}

func (e *engineData) add(s string) {
	n := len(s) + 1
	if e.actual+n < len(e.buf) {
		copy(e.buf[e.actual:], s)
		e.buf[e.actual+len(s)] = 0
	}
	e.actual += n
}

// cx formats v as C's "%#x": 0 has no prefix.
func cx(v uint32) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%#x", v)
}

// row joins columns, each left-justified to its width (0: no padding), and
// ends the line.
func row(cols ...any) string {
	var b strings.Builder
	for i := 0; i+1 < len(cols); i += 2 {
		fmt.Fprintf(&b, "%-*v", cols[i+1].(int), cols[i])
	}
	b.WriteByte('\n')
	return b.String()
}

// engineStatus writes the engine table of the device's ASIC.
func (d *Device) engineStatus(e *engineData) {
	switch d.prof.asic {
	case Gaudi:
		gaudiEngineStatus(e)
	case Gaudi3:
		d.gaudi3EngineStatus(e)
	default:
		gaudi2EngineStatus(e, &d.prof)
	}
}

// gaudi2EngineStatus follows gaudi2_is_device_idle: EDMA, PDMA, NIC (no
// NIC ports upstream), MME, TPC, decoders, rotators.
func gaudi2EngineStatus(e *engineData, p *profile) {
	y, q0, cgm := "Y", cx(idleQMGlblSts0), cx(idleQMCGMSts)
	e.add("\nCORE  EDMA  is_idle  QM_GLBL_STS0  DMA_CORE_STS0  DMA_CORE_STS1\n" +
		"----  ----  -------  ------------  -------------  -------------\n")
	for i := 0; i < 4; i++ {
		for j := 0; j < 2; j++ {
			if p.edmaMask&(1<<(i*2+j)) != 0 {
				e.add(row(i, 6, j, 6, y, 9, q0, 14, cx(0), 15, cx(0), 0))
			}
		}
	}
	e.add("\nPDMA  is_idle  QM_GLBL_STS0  DMA_CORE_STS0  DMA_CORE_STS1\n" +
		"----  -------  ------------  -------------  -------------\n")
	for i := 0; i < 2; i++ {
		e.add(row(i, 6, y, 9, q0, 14, cx(0), 15, cx(0), 0))
	}
	e.add("\nMME  Stub  is_idle  QM_GLBL_STS0  MME_ARCH_STATUS\n" +
		"---  ----  -------  ------------  ---------------\n")
	for i := 0; i < 4; i++ {
		e.add(row(i, 5, "N", 6, y, 9, q0, 14, cx(gaudi2IdleMME), 0))
	}
	tpc := func(dcore, inst int) {
		e.add(row(dcore, 6, inst, 5, y, 9, q0, 14, cgm, 12, cx(gaudi2IdleTPC), 0))
	}
	if p.tpcMask != 0 {
		e.add("\nCORE  TPC  is_idle  QM_GLBL_STS0  QM_CGM_STS  STATUS\n" +
			"----  ---  -------  ------------  ----------  ------\n")
	}
	for dcore := 0; dcore < 4; dcore++ {
		for inst := 0; inst < 6; inst++ {
			if p.tpcMask&(1<<(dcore*6+inst)) != 0 {
				tpc(dcore, inst)
			}
		}
	}
	if p.tpcMask&(1<<24) != 0 { // DCORE0 TPC6, the PCI TPC, comes last
		tpc(0, 6)
	}
	if p.decoderMask&^gaudi2PCIeDecMsk != 0 {
		e.add("\nCORE  DEC  is_idle  VSI_CMD_SWREG15\n" +
			"----  ---  -------  ---------------\n")
	}
	for i := 0; i < 4; i++ {
		for j := 0; j < 2; j++ {
			if p.decoderMask&(1<<(i*2+j)) != 0 {
				e.add(row(i, 6, j, 5, y, 9, cx(0), 0))
			}
		}
	}
	if p.decoderMask&gaudi2PCIeDecMsk != 0 {
		e.add("\nPCIe DEC  is_idle  VSI_CMD_SWREG15\n" +
			"--------  -------  ---------------\n")
	}
	for i := 0; i < 2; i++ {
		if p.decoderMask&(1<<(8+i)) != 0 {
			e.add(row(i, 10, y, 9, cx(0), 0))
		}
	}
	e.add("\nCORE  ROT  is_idle  QM_GLBL_STS0  QM_GLBL_STS1  QM_CGM_STS\n" +
		"----  ---  -------  ------------  ------------  ----------\n")
	for i := 0; i < 2; i++ {
		e.add(row(i, 6, 0, 5, y, 9, q0, 14, cx(idleQMGlblSts1), 14, cgm, 0))
	}
}

// gaudiEngineStatus follows gaudi_is_device_idle: DMA, TPC, MME (the odd
// ones are slaves without a queue manager), NIC (none initialized
// upstream), and a closing newline.
func gaudiEngineStatus(e *engineData) {
	y, q0, cgm := "Y", cx(idleQMGlblSts0), cx(idleQMCGMSts)
	e.add("\nDMA  is_idle  QM_GLBL_STS0  QM_CGM_STS  DMA_CORE_STS0\n" +
		"---  -------  ------------  ----------  -------------\n")
	for i := 0; i < 8; i++ {
		e.add(row(i, 5, y, 9, q0, 14, cgm, 12, cx(0), 0))
	}
	e.add("\nTPC  is_idle  QM_GLBL_STS0  QM_CGM_STS  CFG_STATUS\n" +
		"---  -------  ------------  ----------  ----------\n")
	for i := 0; i < 8; i++ {
		e.add(row(i, 5, y, 9, q0, 14, cgm, 12, cx(gaudiIdleTPC), 0))
	}
	e.add("\nMME  is_idle  QM_GLBL_STS0  QM_CGM_STS  ARCH_STATUS\n" +
		"---  -------  ------------  ----------  -----------\n")
	for i := 0; i < 4; i++ {
		if i%2 == 0 {
			e.add(row(i, 5, y, 9, q0, 14, cgm, 12, cx(gaudiIdleMME), 0))
		} else {
			e.add(row(i, 5, y, 9, "-", 14, "-", 12, cx(gaudiIdleMME), 0))
		}
	}
	e.add("\nNIC  is_idle  QM_GLBL_STS0  QM_CGM_STS\n" +
		"---  -------  ------------  ----------\n")
	e.add("\n")
}
