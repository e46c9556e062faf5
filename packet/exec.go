package packet

import (
	g1 "github.com/gaudi-go/gaudi/uapi/gaudi"
)

var (
	laeDst = fieldOf(g1.GAUDI_PKT_LOAD_AND_EXE_CFG_DST_SHIFT, g1.GAUDI_PKT_LOAD_AND_EXE_CFG_DST_MASK)
	// The rest of LOAD_AND_EXE, CP_DMA and CB_LIST, from hl-thunk.
	g2LaePMap = field{1, 1}
	laeLoad   = field{8, 1}
	laeExe    = field{9, 1}
	laeEType  = field{10, 1}
	g2CPUpper = field{5, 1}
	g2CBSize  = field{5, 1}

	g1LaeKnown = laeDst.mask() | laeLoad.mask() | laeExe.mask() | laeEType.mask()
	g2LaeKnown = g1LaeKnown | g2LaePMap.mask()
)

// LoadAndExe is a LOAD_AND_EXE packet (16 bytes): load a descriptor from Src
// into the engine (Load) and/or execute it (Exe). The Gaudi driver refuses it
// from users when Dst is set (gaudi_validate_load_and_exe_pkt, -EPERM).
//
// Bits: Dst = cfg 0 (K on Gaudi, T on Gaudi2); PMap = cfg 1 (T, Gaudi2
// and Gaudi3); Load = cfg 8, Exe = cfg 9, EType = cfg 10, Pred = ctl 4:0
// (T); Src = src_addr (K). Gaudi3 (S) keeps Gaudi2's layout; Gaudi3PQM has
// no LOAD_AND_EXE.
type LoadAndExe struct {
	Header
	Src   uint64
	Dst   bool
	PMap  bool // Gaudi2 and Gaudi3 only
	Load  bool
	Exe   bool
	EType bool
	Pred  uint8 // predicate id, 5 bits
}

// Opcode returns OpLoadAndExe.
func (LoadAndExe) Opcode() Opcode { return OpLoadAndExe }

// Len returns 16.
func (LoadAndExe) Len() int { return 16 }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p LoadAndExe) Append(f Format, b []byte) ([]byte, error) {
	c := newCheck(f, OpLoadAndExe)
	c.onlyIn(inGaudi2|inGaudi3, "PMap", b2u(p.PMap))
	ctlPred.check(&c, "Pred", uint64(p.Pred))
	if c.err != nil {
		return b, c.err
	}
	cfg := laeDst.flag(p.Dst) | g2LaePMap.flag(p.PMap) | laeLoad.flag(p.Load) | laeExe.flag(p.Exe) | laeEType.flag(p.EType)
	return put16(b, cfg, p.ctl(OpLoadAndExe)|ctlPred.put(uint64(p.Pred)), p.Src), nil
}

func decodeLoadAndExe(f Format, cfg, ctl uint32, src uint64) (LoadAndExe, string) {
	p := LoadAndExe{
		Header: headerOf(ctl),
		Src:    src,
		Dst:    laeDst.on(cfg),
		Load:   laeLoad.on(cfg),
		Exe:    laeExe.on(cfg),
		EType:  laeEType.on(cfg),
		Pred:   uint8(ctlPred.get(ctl)),
	}
	known := g1LaeKnown
	if f == Gaudi2 || f == Gaudi3 {
		p.PMap = g2LaePMap.on(cfg)
		known = g2LaeKnown
	}
	return p, either(reserved("cfg", cfg&^known), reserved("ctl", ctl&^ctlPredKnown))
}

// String returns a one-line description of the packet.
func (p LoadAndExe) String() string {
	s := newStr(OpLoadAndExe)
	s.hex("Src", p.Src)
	s.flag(p.Dst, "Dst")
	s.flag(p.PMap, "PMap")
	s.flag(p.Load, "Load")
	s.flag(p.Exe, "Exe")
	s.flag(p.EType, "EType")
	s.decNZ("Pred", uint64(p.Pred))
	p.barriers(s)
	return s.String()
}

// CPDMA is a CP_DMA packet (16 bytes): the queue manager fetches Size bytes
// of command buffer from Src and executes them. The Gaudi driver refuses it
// from users.
//
// Bits: Size = tsize, Src = src_addr (K); Pred = ctl 4:0, UpperCP = ctl 5
// (T, Gaudi2 only).
type CPDMA struct {
	Header
	Src     uint64
	Size    uint32
	Pred    uint8 // predicate id, 5 bits
	UpperCP bool  // Gaudi2 only (hl-thunk "upper_cp")
}

// Opcode returns OpCPDMA.
func (CPDMA) Opcode() Opcode { return OpCPDMA }

// Len returns 16.
func (CPDMA) Len() int { return 16 }

// Append appends the packet to b; see LinDMA.Append for the contract.
func (p CPDMA) Append(f Format, b []byte) ([]byte, error) {
	c := newCheck(f, OpCPDMA)
	c.only(Gaudi2, "UpperCP", b2u(p.UpperCP))
	ctlPred.check(&c, "Pred", uint64(p.Pred))
	if c.err != nil {
		return b, c.err
	}
	ctl := p.ctl(OpCPDMA) | ctlPred.put(uint64(p.Pred)) | g2CPUpper.flag(p.UpperCP)
	return put16(b, p.Size, ctl, p.Src), nil
}

func decodeCPDMA(f Format, w0, ctl uint32, src uint64) (CPDMA, string) {
	p := CPDMA{Header: headerOf(ctl), Src: src, Size: w0, Pred: uint8(ctlPred.get(ctl))}
	known := ctlPredKnown
	if f == Gaudi2 {
		p.UpperCP = g2CPUpper.on(ctl)
		known |= g2CPUpper.mask()
	}
	return p, reserved("ctl", ctl&^known)
}

// String returns a one-line description of the packet.
func (p CPDMA) String() string {
	s := newStr(OpCPDMA)
	s.hex("Src", p.Src)
	s.dec("Size", uint64(p.Size))
	s.flag(p.UpperCP, "UpperCP")
	s.decNZ("Pred", uint64(p.Pred))
	p.barriers(s)
	return s.String()
}

// CBList is a Gaudi2 CB_LIST packet (24 bytes): execute command buffers
// listed in a table. The kernel header gives the layout; the meaning of the
// two addresses and of SizeDesc is hl-thunk's naming, not documented.
//
// Bits: IndexAddr = index_addr, TableAddr = table_addr (K); Pred = ctl 4:0,
// SizeDesc = ctl 5 (T).
type CBList struct {
	Header
	IndexAddr uint64
	TableAddr uint64
	SizeDesc  bool
	Pred      uint8 // predicate id, 5 bits
}

// Opcode returns OpCBList.
func (CBList) Opcode() Opcode { return OpCBList }

// Len returns 24.
func (CBList) Len() int { return 24 }

// Append appends the packet to b; see LinDMA.Append for the contract. Only
// Gaudi2 has CB_LIST.
func (p CBList) Append(f Format, b []byte) ([]byte, error) {
	c := newCheck(f, OpCBList)
	ctlPred.check(&c, "Pred", uint64(p.Pred))
	if c.err != nil {
		return b, c.err
	}
	ctl := p.ctl(OpCBList) | ctlPred.put(uint64(p.Pred)) | g2CBSize.flag(p.SizeDesc)
	return put24(b, 0, ctl, p.IndexAddr, p.TableAddr), nil
}

func decodeCBList(w0, ctl uint32, index, table uint64) (CBList, string) {
	return CBList{
		Header:    headerOf(ctl),
		IndexAddr: index,
		TableAddr: table,
		SizeDesc:  g2CBSize.on(ctl),
		Pred:      uint8(ctlPred.get(ctl)),
	}, either(reserved("reserved word", w0), reserved("ctl", ctl&^(ctlPredKnown|g2CBSize.mask())))
}

// String returns a one-line description of the packet.
func (p CBList) String() string {
	s := newStr(OpCBList)
	s.hex("IndexAddr", p.IndexAddr)
	s.hex("TableAddr", p.TableAddr)
	s.flag(p.SizeDesc, "SizeDesc")
	s.decNZ("Pred", uint64(p.Pred))
	p.barriers(s)
	return s.String()
}
