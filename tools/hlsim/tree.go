package main

import (
	"fmt"
	"path"
	"runtime"
	"strings"
	"syscall"

	"github.com/gaudi-go/gaudi/sim"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
)

// The served tree: the device nodes and a sysfs-like tree that describes
// them, laid out as the live system's / (see device.RootEnv):
//
//	dev/accel/accelN, dev/accel/accel_controlDN   the nodes
//	sys/class/accel/accelN           -> ../../devices/hlsim/PCI/accel/accelN
//	sys/class/accel/accel_controlDN  -> ../../devices/hlsim/virtual/accel/accel_controlDN
//	sys/devices/hlsim/PCI/           the PCI function: vendor, device,
//	                                 revision, driver link and the
//	                                 driver's attributes (status, ...)
//	sys/bus/pci/devices/PCI          -> ../../../devices/hlsim/PCI
//	sys/bus/pci/drivers/habanalabs/  the driver, linking its devices
//	sys/dev/char/261:N, 508:N        -> the nodes' directories above
//	sys/dev/char/0:0                 -> the directory of the node the
//	                                 reading process holds (devchar.go)
//	hlsim/pid                        the server's process id
//	hlsim/ctl                        commands (ctl.go)
//	hlsim/dmabuf/N                   the served dma-bufs, opened by the
//	                                 server alone (dmabuf_unsafe.go)
//
// The kernel puts PCI functions under sys/devices/pciDDDD:BB and control
// devices under sys/devices/virtual; the tree keeps its own under
// sys/devices/hlsim so that `hlsim run` can add them to a live /sys
// without hiding real devices. Readers follow the links, as the kernel's
// layout asks of them (device.SysFS does).

// nodeKind is what an inode of the tree is.
type nodeKind int

const (
	kindDir  nodeKind = iota + 1
	kindLink          // a symbolic link
	kindAttr          // a text attribute, read (and written) through functions
	kindDev           // a device node
)

// node is an inode of the tree. The tree is built before it is mounted
// and never changes, so nodes are read without locks.
type node struct {
	ino    uint64
	name   string
	kind   nodeKind
	perm   uint32
	kids   []*node
	byName map[string]*node

	target string // kindLink; with resolve, the longest answer (the size stat reports)
	// resolve, for a kindLink, answers each reader its own target, from
	// the thread that reads it (devchar.go).
	resolve func(tid uint32) (string, error)
	read    func() string        // kindAttr: the content, without the newline
	write   func(v string) error // kindAttr, writable
	// exchange, for a kindAttr, answers each write with a reply that a
	// read of the same open file gives (the control file, ctl.go).
	exchange func(cmd string) (string, error)
	dev      int  // kindDev: the device index
	ctl      bool // kindDev: the control node
}

// tree is the served filesystem: inodes by number (the root is 1, FUSE's
// root id).
type tree struct {
	nodes []*node // nodes[ino-1]
}

func newTree() *tree {
	t := &tree{}
	t.add(nil, "", kindDir, 0o755)
	return t
}

func (t *tree) root() *node { return t.nodes[0] }

// get returns inode ino, or nil.
func (t *tree) get(ino uint64) *node {
	if ino == 0 || ino > uint64(len(t.nodes)) {
		return nil
	}
	return t.nodes[ino-1]
}

func (t *tree) add(parent *node, name string, kind nodeKind, perm uint32) *node {
	n := &node{ino: uint64(len(t.nodes) + 1), name: name, kind: kind, perm: perm}
	if kind == kindDir {
		n.byName = map[string]*node{}
	}
	t.nodes = append(t.nodes, n)
	if parent != nil {
		if _, dup := parent.byName[name]; dup {
			panic("hlsim: tree: " + name + " twice")
		}
		parent.kids = append(parent.kids, n)
		parent.byName[name] = n
	}
	return n
}

// dir returns the directory at p (slash separated, relative to the root),
// making it and its parents.
func (t *tree) dir(p string) *node {
	n := t.root()
	for _, elem := range strings.Split(p, "/") {
		if elem == "" {
			continue
		}
		next := n.byName[elem]
		if next == nil {
			next = t.add(n, elem, kindDir, 0o755)
		}
		n = next
	}
	return n
}

func (t *tree) link(p, target string) {
	n := t.add(t.dir(path.Dir(p)), path.Base(p), kindLink, 0o777)
	n.target = target
}

// attr adds a read-only attribute.
func (t *tree) attr(p string, read func() string) *node {
	n := t.add(t.dir(path.Dir(p)), path.Base(p), kindAttr, 0o444)
	n.read = read
	return n
}

// control adds a write-only attribute: each write is a command for fn.
func (t *tree) control(p string, fn func(v string) error) {
	n := t.add(t.dir(path.Dir(p)), path.Base(p), kindAttr, 0o200)
	n.write = fn
}

// exchanger adds an attribute that answers each write (see node.exchange):
// root may write commands and read the replies.
func (t *tree) exchanger(p string, fn func(cmd string) (string, error)) {
	n := t.add(t.dir(path.Dir(p)), path.Base(p), kindAttr, 0o600)
	n.exchange = fn
}

// value adds an attribute whose content never changes.
func (t *tree) value(p, v string) { t.attr(p, func() string { return v }) }

// sysPCI is where the tree keeps PCI functions and control devices.
const sysPCI = "sys/devices/hlsim"

// pciIDs are PCI_DEVICE_ID_HABANALABS_* by ASIC (the driver's
// habanalabs_drv.c id table; Gaudi3's from the out-of-tree driver, as the
// simulator answers it in HW_IP_INFO: package uapi/gaudi3).
var pciIDs = map[sim.ASIC]string{sim.Gaudi3: fmt.Sprintf("%#x", g3.PCI_IDS_GAUDI3), sim.Gaudi2: "0x1020", sim.Gaudi: "0x1000"}

// buildTree lays out the devices of s (see the comment at the top).
func buildTree(s *server) *tree {
	t := newTree()
	t.dir("dev/accel")
	t.dir("sys/bus/pci/drivers/habanalabs")
	for i, d := range s.sys.Devices() {
		cfg := d.Config()
		pci := cfg.PCIAddress
		num := fmt.Sprint(i)
		fn := sysPCI + "/" + pci

		dev := t.add(t.dir("dev/accel"), "accel"+num, kindDev, 0o666)
		dev.dev = i
		ctl := t.add(t.dir("dev/accel"), "accel_controlD"+num, kindDev, 0o666)
		ctl.dev, ctl.ctl = i, true

		t.link("sys/class/accel/accel"+num, "../../devices/hlsim/"+pci+"/accel/accel"+num)
		t.link("sys/class/accel/accel_controlD"+num, "../../devices/hlsim/virtual/accel/accel_controlD"+num)
		t.link("sys/bus/pci/devices/"+pci, "../../../devices/hlsim/"+pci)
		t.link("sys/bus/pci/drivers/habanalabs/"+pci, "../../../../devices/hlsim/"+pci)

		// The PCI function (drivers/pci/pci-sysfs.c formats).
		t.value(fn+"/vendor", "0x1da3")
		t.value(fn+"/device", pciIDs[cfg.ASIC])
		t.value(fn+"/subsystem_vendor", "0x1da3")
		t.value(fn+"/subsystem_device", pciIDs[cfg.ASIC])
		t.value(fn+"/revision", fmt.Sprintf("0x%02x", cfg.Revision))
		t.value(fn+"/class", "0x120000")
		t.value(fn+"/numa_node", "-1")
		t.value(fn+"/local_cpulist", fmt.Sprintf("0-%d", runtime.NumCPU()-1))
		t.link(fn+"/driver", "../../../bus/pci/drivers/habanalabs")

		// The driver's attributes (common/sysfs.c formats), read from the
		// device each time.
		t.value(fn+"/device_type", cfg.ASIC.String())
		t.value(fn+"/module_id", fmt.Sprint(cfg.ModuleID))
		t.value(fn+"/pci_addr", pci)
		t.value(fn+"/parent_device", pci)
		t.attr(fn+"/status", func() string { return statusText(d.State()) })
		t.attr(fn+"/hard_reset_cnt", func() string { return fmt.Sprint(s.resetCount(i).HardResetCnt) })
		t.attr(fn+"/soft_reset_cnt", func() string { return fmt.Sprint(s.resetCount(i).SoftResetCnt) })
		// serial_number and uuid: no habanalabs driver has them (the
		// card's identity is in its EEPROM); they stand for the driver
		// that HLML's callers (gohlml, hlinfo) read them from, so that
		// the served devices have a stable identity per server config.
		t.value(fn+"/serial_number", simSerial(cfg))
		t.value(fn+"/uuid", simUUID(cfg))
		for _, name := range []string{"cpucp_ver", "armcp_ver"} {
			t.attr(fn+"/"+name, func() string { return s.cpucpVersion(i) })
		}
		// hard_reset_store: any write resets the device.
		t.control(fn+"/hard_reset", func(string) error { d.Reset(); return nil })

		acc := accelDir(pci, num)
		t.value(acc+"/dev", devNumber(accelMajor, num))
		t.value(acc+"/uevent", fmt.Sprintf("MAJOR=%d\nMINOR=%s\nDEVNAME=accel/accel%s", accelMajor, num, num))
		t.link(acc+"/device", "../../../"+pci)
		t.link(acc+"/subsystem", "../../../../../class/accel")

		vc := controlDir(num)
		t.value(vc+"/dev", devNumber(controlMajor, num))
		t.value(vc+"/uevent", fmt.Sprintf("MAJOR=%d\nMINOR=%s\nDEVNAME=accel/accel_controlD%s", controlMajor, num, num))
		t.link(vc+"/subsystem", "../../../../../class/accel")
	}
	s.addDevChar(t)
	t.value("hlsim/pid", fmt.Sprint(syscall.Getpid()))
	t.exchanger("hlsim/ctl", s.command)
	s.dmabufDir = t.add(t.dir("hlsim"), "dmabuf", kindDir, 0o700)
	return t
}

// statusText is the driver's status attribute: the state with a capital
// first letter (hl_status_to_str, 6.12).
func statusText(st sim.State) string {
	s := st.String()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// simSerial is a served device's serial_number: the chip and the PCI
// address, which tell the devices of one server apart.
func simSerial(cfg sim.DeviceConfig) string {
	return "HLSIM" + strings.NewReplacer(":", "", ".", "").Replace(cfg.PCIAddress)
}

// simUUID is a served device's uuid.
func simUUID(cfg sim.DeviceConfig) string {
	return "hlsim-" + strings.ToLower(cfg.ASIC.String()) + "-" + cfg.PCIAddress
}
