package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gaudi-go/gaudi/device"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// Queue, engine and engine core numbers mean different things on each
// ASIC (queue 0 is DMA_0_0 on Gaudi and PDMA_0_0 on Gaudi2), so hltrace
// names them only for a device whose ASIC it knows. It learns the ASIC of
// a device (by its dev_t, which the BPF side reports with each CS) from
//   - the device's answer to INFO HW_IP_INFO, which every Gaudi library
//     asks for when it opens a device (the BPF side reads the PCI device
//     id and revision from the caller's buffer when the call returns);
//   - sysfs: /sys/dev/char/MAJ:MIN is the device's class directory, whose
//     "device" link is the PCI function on the accel layout, and whose
//     pci_addr attribute names it on the legacy layout (the facts are in
//     package device, discover.go);
//   - else the -asic flag.

// asicResolver knows the ASIC family (device.Gaudi, Gaudi2 or Gaudi3) of
// the devices seen so far. Not safe for concurrent use.
type asicResolver struct {
	root     string      // where sysfs is: "/" on the live system
	fallback device.ASIC // -asic: for devices nothing identifies
	byDev    map[uint32]device.ASIC
	// byFile is for files without a device number: the simulator's
	// served nodes (tools/hlsim) are regular files, whose dev_t is 0.
	// By process and descriptor, from the INFO answer on that file, until
	// the descriptor is closed.
	byFile map[fileKey]device.ASIC
}

// fileKey names an open file: a process and a descriptor.
type fileKey struct {
	pid uint32
	fd  int32
}

func newASICResolver(root string, fallback device.ASIC) *asicResolver {
	return &asicResolver{root: root, fallback: fallback, byDev: map[uint32]device.ASIC{}, byFile: map[fileKey]device.ASIC{}}
}

// observe learns from an INFO HW_IP_INFO answer, and forgets a file's
// ASIC when it is closed.
func (r *asicResolver) observe(e *Event) {
	if e.Call() == bpfCallCALL_CLOSE && e.OK() {
		delete(r.byFile, fileKey{e.PID(), e.FD()})
		return
	}
	if e.Call() != bpfCallCALL_HL_INFO || !e.OK() {
		return
	}
	b := e.Info()
	if b.Answered == 0 {
		return
	}
	a := asicFamily(b.DeviceId, b.Revision)
	switch {
	case a == device.ASICUnknown:
	case b.Rdev != 0:
		r.byDev[b.Rdev] = a
	default:
		r.byFile[fileKey{e.PID(), e.FD()}] = a
	}
}

// ofCall returns the ASIC family of the device of call e, whose file has
// device number rdev (0 for none).
func (r *asicResolver) ofCall(e *Event, rdev uint32) device.ASIC {
	if rdev == 0 {
		if a, ok := r.byFile[fileKey{e.PID(), e.FD()}]; ok {
			return a
		}
	}
	return r.of(rdev)
}

// of returns the ASIC family of the device rdev (kernel dev_t), the
// fallback when nothing identifies it.
func (r *asicResolver) of(rdev uint32) device.ASIC {
	if rdev == 0 {
		return r.fallback
	}
	a, ok := r.byDev[rdev]
	if !ok {
		a = sysfsASIC(r.root, rdev)
		r.byDev[rdev] = a
	}
	if a == device.ASICUnknown {
		return r.fallback
	}
	return a
}

// asicFamily returns Gaudi, Gaudi2 or Gaudi3 for a PCI device id and
// revision, the numbering a device's queues, engines and blocks follow.
func asicFamily(deviceID uint32, revision uint8) device.ASIC {
	switch a := device.ASICFromPCI(deviceID, revision); {
	case a.IsGaudi():
		return device.Gaudi
	case a.IsGaudi2(), deviceID == device.PCIDeviceGaudi2: // a revision this table lacks
		return device.Gaudi2
	case a.IsGaudi3():
		return device.Gaudi3
	}
	return device.ASICUnknown
}

// sysfsASIC reads the ASIC family of the character device rdev from sysfs
// under root; ASICUnknown when it is not a Habana Labs PCI device.
func sysfsASIC(root string, rdev uint32) device.ASIC {
	dir := filepath.Join(root, "sys/dev/char", fmt.Sprintf("%d:%d", rdev>>20, rdev&(1<<20-1)))
	pci := filepath.Join(dir, "device") // accel layout
	if _, err := os.Stat(filepath.Join(pci, "vendor")); err != nil {
		addr, err := os.ReadFile(filepath.Join(dir, "pci_addr")) // legacy layout
		if err != nil {
			return device.ASICUnknown
		}
		pci = filepath.Join(root, "sys/bus/pci/devices", strings.TrimSpace(string(addr)))
	}
	hex := func(name string) (uint64, bool) {
		b, err := os.ReadFile(filepath.Join(pci, name))
		if err != nil {
			return 0, false
		}
		v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(string(b)), "0x"), 16, 32)
		return v, err == nil
	}
	vendor, ok := hex("vendor")
	if !ok || vendor != device.PCIVendorHabana {
		return device.ASICUnknown
	}
	id, ok := hex("device")
	if !ok {
		return device.ASICUnknown
	}
	rev, _ := hex("revision")
	return asicFamily(uint32(id), uint8(rev))
}

// parseASIC reads the -asic flag: "gaudi", "gaudi2" or "gaudi3", in any
// case.
func parseASIC(s string) (device.ASIC, error) {
	switch strings.ToLower(s) {
	case "":
		return device.ASICUnknown, nil
	case "gaudi":
		return device.Gaudi, nil
	case "gaudi2":
		return device.Gaudi2, nil
	case "gaudi3":
		return device.Gaudi3, nil
	}
	return device.ASICUnknown, fmt.Errorf("-asic %q: want gaudi, gaudi2 or gaudi3", s)
}

// queueName names queue id of the ASIC family, or returns "".
func queueName(asic device.ASIC, id uint32) string {
	switch asic {
	case device.Gaudi:
		if _, ok := hl.GaudiQueueIDNames[hl.GaudiQueueID(id)]; ok {
			return device.GaudiQueue(hl.GaudiQueueID(id)).String()
		}
	case device.Gaudi2:
		if _, ok := hl.Gaudi2QueueIDNames[hl.Gaudi2QueueID(id)]; ok {
			return device.Gaudi2Queue(hl.Gaudi2QueueID(id)).String()
		}
	}
	return ""
}

// engineName names engine id of the ASIC family, or returns "".
func engineName(asic device.ASIC, id uint32) string {
	switch asic {
	case device.Gaudi:
		if _, ok := hl.GaudiEngineIDNames[hl.GaudiEngineID(id)]; ok {
			return device.GaudiEngine(hl.GaudiEngineID(id)).String()
		}
	case device.Gaudi2:
		if _, ok := hl.Gaudi2EngineIDNames[hl.Gaudi2EngineID(id)]; ok {
			return device.Gaudi2Engine(hl.Gaudi2EngineID(id)).String()
		}
	}
	return ""
}

// engineCoreName names engine core id (Gaudi2 only), or returns "".
func engineCoreName(asic device.ASIC, id uint32) string {
	if asic != device.Gaudi2 {
		return ""
	}
	// String spells an id without a name as EngineCore(GAUDI2, id).
	if n := device.Gaudi2EngineCore(id).String(); !strings.HasPrefix(n, "EngineCore(") {
		return n
	}
	return ""
}

// blockName names the HW block at addr that MEMORY MAP_BLOCK maps on the
// ASIC family, or returns "". On Gaudi3 the user's blocks are the PDMA
// channels' CH_A (PQM) register blocks (package uapi/gaudi3, from Habana's
// Gaudi3 tests: 4 groups of 6 channels, two groups per die), such as
// "PDMA ch 5 (die 0 group 0) PQM CH_A"; an address inside a block, which
// the simulator takes, adds its offset.
func blockName(asic device.ASIC, addr uint64) string {
	if asic != device.Gaudi3 {
		return ""
	}
	ch, ok := g3.PDMAChannelOfBlock(addr)
	if !ok {
		return syncMngrBlockName(addr)
	}
	n := fmt.Sprintf("PDMA ch %d (die %d group %d) PQM CH_A", ch, g3.PDMAChannelDie(ch), ch/g3.NUM_OF_PDMA_CH_PER_GRP)
	if off := addr - g3.PDMAChannelBlock(ch); off != 0 {
		n += fmt.Sprintf(" +%#x", off)
	}
	return n
}

// syncMngrBlockName names a Gaudi3 sync manager block the driver lets
// users map (an OBJS group or a GLBL block, uapi/gaudi3
// SyncMngrUserBlock), or returns "".
func syncMngrBlockName(addr uint64) string {
	if _, ok := g3.SyncMngrUserBlock(addr); !ok {
		return ""
	}
	for hd := range g3.NUM_OF_HDCORES {
		for grp := range 2 {
			if addr == g3.SyncMngrObjsBlock(hd, grp) {
				return fmt.Sprintf("HD%d SYNC_MNGR OBJS group %d", hd, grp)
			}
		}
		if addr == g3.SyncMngrGlblBlock(hd) {
			return fmt.Sprintf("HD%d SYNC_MNGR GLBL", hd)
		}
	}
	return ""
}
