package packet

import (
	"fmt"
	"math/bits"

	g1 "github.com/gaudi-go/gaudi/uapi/gaudi"
)

// The sync manager is programmed with MSG_SHORT packets whose Value is one
// of three layouts, chosen by the register the packet writes: a sync object
// (SOB) update, a monitor arm, or (Gaudi2) a monitor configuration.

var (
	sobValue  = fieldOf(g1.GAUDI_PKT_SHORT_VAL_SOB_SYNC_VAL_SHIFT, g1.GAUDI_PKT_SHORT_VAL_SOB_SYNC_VAL_MASK)
	sobMode   = fieldOf(g1.GAUDI_PKT_SHORT_VAL_SOB_MOD_SHIFT, g1.GAUDI_PKT_SHORT_VAL_SOB_MOD_MASK)
	sobTE     = field{30, 1} // hl-thunk
	g2SOBLong = field{24, 1} // hl-thunk, Gaudi2

	monGroup = fieldOf(g1.GAUDI_PKT_SHORT_VAL_MON_SYNC_GID_SHIFT, g1.GAUDI_PKT_SHORT_VAL_MON_SYNC_GID_MASK)
	monMask  = fieldOf(g1.GAUDI_PKT_SHORT_VAL_MON_MASK_SHIFT, g1.GAUDI_PKT_SHORT_VAL_MON_MASK_MASK)
	monMode  = fieldOf(g1.GAUDI_PKT_SHORT_VAL_MON_MODE_SHIFT, g1.GAUDI_PKT_SHORT_VAL_MON_MODE_MASK)
	monValue = fieldOf(g1.GAUDI_PKT_SHORT_VAL_MON_SYNC_VAL_SHIFT, g1.GAUDI_PKT_SHORT_VAL_MON_SYNC_VAL_MASK)

	// Gaudi2 monitor configuration, from hl-thunk.
	cfgLongSOB   = field{0, 1}
	cfgCQEnable  = field{4, 1}
	cfgWrNum     = field{5, 2}
	cfgLBWEnable = field{8, 1}
	cfgMSBSID    = field{16, 4}
	cfgLongHigh  = field{31, 1}
)

// SOBUpdate is the Value of a MSG_SHORT that writes a sync object: set it to
// Value, or add Value to it.
//
// Bits: Value = 14:0 and Add = 31 (K); TE = 30 (T); LongMode = 24 (T,
// Gaudi2 and the Gaudi3 formats); ZeroCounter = 28 (S, the Gaudi3 formats'
// zero_sob_cntr).
type SOBUpdate struct {
	Value       uint16 // 15 bits
	Add         bool   // mode: add Value instead of setting the object to it
	TE          bool   // hl-thunk "te"
	LongMode    bool   // Gaudi2 and Gaudi3: long (60-bit) sync object mode
	ZeroCounter bool   // Gaudi3 formats only: zero_sob_cntr
}

// Word returns the 32-bit MSG_SHORT value for format f.
func (u SOBUpdate) Word(f Format) (uint32, error) {
	c := newCheck(f, OpMsgShort)
	sobValue.check(&c, "SOBUpdate.Value", uint64(u.Value))
	c.onlyIn(inGaudi2|inG3, "SOBUpdate.LongMode", b2u(u.LongMode))
	c.onlyIn(inG3, "SOBUpdate.ZeroCounter", b2u(u.ZeroCounter))
	if c.err != nil {
		return 0, c.err
	}
	return sobValue.put(uint64(u.Value)) | sobMode.flag(u.Add) | sobTE.flag(u.TE) | g2SOBLong.flag(u.LongMode) |
		g3SOBZero.flag(u.ZeroCounter), nil
}

// SOBUpdate reads p.Value as a sync object update. Bits outside the layout
// are ignored.
func (p MsgShort) SOBUpdate() SOBUpdate {
	v := p.Value
	return SOBUpdate{Value: uint16(sobValue.get(v)), Add: sobMode.on(v), TE: sobTE.on(v), LongMode: g2SOBLong.on(v),
		ZeroCounter: g3SOBZero.on(v)}
}

// MonArm is the Value of a MSG_SHORT that arms a monitor: it fires when the
// watched sync objects of group Group reach Value (or equal it, with Equal).
// A monitor watches the 8 objects Group*8 .. Group*8+7 whose bits are clear
// in Mask; SOBMask computes Mask the way the driver does.
//
// Bits (K): Group = 7:0, Mask = 15:8, Equal = 16, Value = 31:17.
type MonArm struct {
	Group uint8  // sync group: the first watched object's id / 8
	Mask  uint8  // a set bit excludes that object of the group
	Equal bool   // fire on equality instead of greater-or-equal
	Value uint16 // 15 bits
}

// Word returns the 32-bit MSG_SHORT value.
func (m MonArm) Word(f Format) (uint32, error) {
	c := newCheck(f, OpMsgShort)
	monValue.check(&c, "MonArm.Value", uint64(m.Value))
	if c.err != nil {
		return 0, c.err
	}
	return monGroup.put(uint64(m.Group)) | monMask.put(uint64(m.Mask)) | monMode.flag(m.Equal) | monValue.put(uint64(m.Value)), nil
}

// MonArm reads p.Value as a monitor arm.
func (p MsgShort) MonArm() MonArm {
	v := p.Value
	return MonArm{Group: uint8(monGroup.get(v)), Mask: uint8(monMask.get(v)), Equal: monMode.on(v), Value: uint16(monValue.get(v))}
}

// MonConfig is the Value of a Gaudi2 MSG_SHORT that configures a monitor
// (hl-thunk's mon_config_register; the driver writes this register directly
// rather than through packets).
//
// Bits (T): LongSOB = 0, CQEnable = 4, WrNum = 6:5, LBWEnable = 8,
// MSBSID = 19:16, LongHighGroup = 31.
type MonConfig struct {
	LongSOB       bool
	CQEnable      bool
	WrNum         uint8 // 2 bits
	LBWEnable     bool
	MSBSID        uint8 // 4 bits
	LongHighGroup bool
}

// Word returns the 32-bit MSG_SHORT value. Only Gaudi2 has it: the Gaudi3
// specifications lay the monitor configuration out differently (wr_num in
// bits 27:24, with sm_data_config and auto_zero), which this type does not
// encode.
func (m MonConfig) Word(f Format) (uint32, error) {
	c := newCheck(f, OpMsgShort)
	if c.err == nil && f != Gaudi2 {
		c.fail("MonConfig", 1, 0, ErrNotInFormat)
	}
	cfgWrNum.check(&c, "MonConfig.WrNum", uint64(m.WrNum))
	cfgMSBSID.check(&c, "MonConfig.MSBSID", uint64(m.MSBSID))
	if c.err != nil {
		return 0, c.err
	}
	return cfgLongSOB.flag(m.LongSOB) | cfgCQEnable.flag(m.CQEnable) | cfgWrNum.put(uint64(m.WrNum)) |
		cfgLBWEnable.flag(m.LBWEnable) | cfgMSBSID.put(uint64(m.MSBSID)) | cfgLongHigh.flag(m.LongHighGroup), nil
}

// MonConfig reads p.Value as a Gaudi2 monitor configuration.
func (p MsgShort) MonConfig() MonConfig {
	v := p.Value
	return MonConfig{
		LongSOB: cfgLongSOB.on(v), CQEnable: cfgCQEnable.on(v), WrNum: uint8(cfgWrNum.get(v)),
		LBWEnable: cfgLBWEnable.on(v), MSBSID: uint8(cfgMSBSID.get(v)), LongHighGroup: cfgLongHigh.on(v),
	}
}

// SOBMask returns the MonArm.Mask that watches the objects selected by mask,
// bit i meaning object sobBase+i, as the driver computes it (hl_gen_sob_mask):
// mask 1 watches sobBase alone, at its position within its group of 8;
// larger masks are taken relative to the group and must not reach past its
// end. A zero mask is an error.
func SOBMask(sobBase uint16, mask uint8) (uint8, error) {
	if mask == 0 {
		return 0, fmt.Errorf("packet: empty SOB mask: %w", ErrFieldRange)
	}
	if mask == 1 {
		return ^uint8(1 << (sobBase & 7)), nil
	}
	if msb := 7 - bits.LeadingZeros8(mask); msb > 8-int(sobBase&7)-1 {
		return 0, fmt.Errorf("packet: SOB mask %#x at SOB %d reaches past its group of 8: %w", mask, sobBase, ErrFieldRange)
	}
	return ^mask, nil
}

// The driver programs the queue managers' MSG_SHORT base registers so that
// these bases reach the sync manager (gaudi_gen_signal_cb,
// gaudi_add_mon_msg_short, gaudi2_gen_signal_cb, gaudi2_add_mon_msg_short).
const (
	GaudiBaseMonitor  = 2 // W_S sync manager monitors (MON_PAY_ADDRL_0)
	GaudiBaseSOB      = 3 // W_S sync manager sync objects
	Gaudi2BaseMonitor = 0 // DCORE0 sync manager monitors (MON_PAY_ADDRL_0)
	Gaudi2BaseSOB     = 1 // DCORE0 sync manager sync objects
)

// Signal returns the packet of the driver's signal command buffer
// (gaudi_gen_signal_cb, gaudi2_gen_signal_cb): add 1 to sync object sob,
// with MsgBarrier set, RegBarrier on Gaudi, and EngineBarrier as given. The
// object's register is sob*4 bytes from the SOB base, so sob must be below
// 16384.
//
// The Gaudi3 driver builds no signal command buffers (its signal and wait
// CB sizes are 0), so Signal returns an error matching ErrNotInFormat for
// the Gaudi3 formats.
func (f Format) Signal(sob uint16, engineBarrier bool) (MsgShort, error) {
	c := newCheck(f, OpMsgShort)
	c.onlyIn(inGaudi|inGaudi2, "Signal", 1)
	shortAddr.check(&c, "sob*4", uint64(sob)*4)
	if c.err != nil {
		return MsgShort{}, c.err
	}
	p := MsgShort{
		Header: Header{EngineBarrier: engineBarrier, MsgBarrier: true},
		Value:  sobValue.put(1) | sobMode.flag(true),
		Offset: sob * 4,
		Base:   Gaudi2BaseSOB,
	}
	if f == Gaudi {
		p.Base = GaudiBaseSOB
		p.RegBarrier = true
	}
	return p, nil
}

// MonitorWrite returns a packet that writes value to the monitor register
// offset bytes from the monitor base, as the driver's wait command buffer
// does to set a monitor's payload address and data
// (gaudi_add_mon_msg_short, gaudi2_add_mon_msg_short): no barriers, except
// RegBarrier on Gaudi. The offset of a register of monitor m is its block
// offset minus MON_PAY_ADDRL_0, plus 4*m. Any format but Gaudi gets the
// Gaudi2 packet; the Gaudi3 driver builds no such buffers.
func (f Format) MonitorWrite(offset uint16, value uint32) MsgShort {
	p := MsgShort{Value: value, Offset: offset, Base: Gaudi2BaseMonitor}
	if f == Gaudi {
		p.Base = GaudiBaseMonitor
		p.RegBarrier = true
	}
	return p
}

// ArmMonitor returns the packet that arms the monitor whose MON_ARM register
// is offset bytes from the monitor base, to fire when the objects selected
// by sobBase and mask (see SOBMask) are at least value
// (gaudi_add_arm_monitor_pkt, gaudi2_add_arm_monitor_pkt): MsgBarrier set,
// and RegBarrier on Gaudi. Like Signal, it refuses the Gaudi3 formats.
func (f Format) ArmMonitor(offset, sobBase uint16, mask uint8, value uint16) (MsgShort, error) {
	m, err := SOBMask(sobBase, mask)
	if err != nil {
		return MsgShort{}, err
	}
	c := newCheck(f, OpMsgShort)
	c.onlyIn(inGaudi|inGaudi2, "ArmMonitor", 1)
	monGroup.check(&c, "sobBase/8", uint64(sobBase/8))
	if c.err != nil {
		return MsgShort{}, c.err
	}
	w, err := MonArm{Group: uint8(sobBase / 8), Mask: m, Value: value}.Word(f)
	if err != nil {
		return MsgShort{}, err
	}
	p := f.MonitorWrite(offset, w)
	p.MsgBarrier = true
	return p, nil
}

// FenceWait returns the FENCE that ends the driver's wait command buffer
// (gaudi_add_fence_pkt, gaudi2_add_fence_pkt): wait on fence counter 2 until
// it reaches 1, then decrement it by 1; MsgBarrier set, and RegBarrier on
// Gaudi. The monitor armed before it writes 1 to that counter.
func (f Format) FenceWait() Fence {
	return Fence{Header: Header{MsgBarrier: true, RegBarrier: f == Gaudi}, ID: 2, Target: 1, Dec: 1}
}
