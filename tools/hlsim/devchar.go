package main

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// sys/dev/char: from a device number to the device's directory, as the
// kernel's /sys/dev/char/MAJOR:MINOR links (Documentation/ABI/stable/
// sysfs-dev) lead C programs from fstat of a descriptor to its device.
//
// The tree has the links of the numbers the devices have on the driver:
// accelMajor:N (the compute node accelN) and controlMajor:N (its control
// node). A served node itself is a regular file of a FUSE mount, not a
// character device, so stat reports the st_rdev the kernel gives every
// such file, 0:0 (fs/fuse/inode.c fuse_init_inode sets i_rdev only for
// special files; fs/fuse/dir.c fuse_fillattr reports i_rdev), and serving
// character devices instead cannot keep the nodes' mmap: CUSE's file
// operations have no mmap (fs/fuse/cuse.c cuse_frontend_fops), for which
// mmap(2) answers ENODEV (mm/mmap.c do_mmap). The link of that number,
// sys/dev/char/0:0, therefore answers each process for itself: it leads to
// the node the reading process opened last among those it holds, so that
// a program that opens a node and then looks its number up finds that
// device. A process that holds no node finds the compute node of a server
// of one device, and nothing (ENOENT) on a server of several, where which
// device it means cannot be told.

// Device numbers of the nodes on the driver: ACCEL_MAJOR
// (include/drm/drm_accel.h) for the compute nodes, and the major the
// tree's control devices report.
const (
	accelMajor   = 261
	controlMajor = 508
)

// servedRdev is the st_rdev stat reports for every served node (see above).
const servedRdev = "0:0"

// devCharDir is where sys/dev/char is.
const devCharDir = "sys/dev/char"

// accelDir and controlDir are the sysfs directories of device num's
// compute node (below its PCI function pci) and control node.
func accelDir(pci, num string) string        { return sysPCI + "/" + pci + "/accel/accel" + num }
func controlDir(num string) string           { return sysPCI + "/virtual/accel/accel_controlD" + num }
func devCharTarget(dir string) string        { return "../../" + strings.TrimPrefix(dir, "sys/") }
func devNumber(major int, num string) string { return fmt.Sprintf("%d:%s", major, num) }

// addDevChar adds sys/dev/char to t: the links of the devices' numbers,
// and servedRdev's, which answers each reader (s.heldNodeLink).
func (s *server) addDevChar(t *tree) {
	longest := ""
	for i, d := range s.sys.Devices() {
		num := fmt.Sprint(i)
		for _, l := range []struct{ number, dir string }{
			{devNumber(accelMajor, num), accelDir(d.Config().PCIAddress, num)},
			{devNumber(controlMajor, num), controlDir(num)},
		} {
			target := devCharTarget(l.dir)
			t.link(devCharDir+"/"+l.number, target)
			if len(target) > len(longest) {
				longest = target
			}
		}
	}
	n := t.add(t.dir(devCharDir), servedRdev, kindLink, 0o777)
	n.target = longest // its size in stat: room for any answer
	n.resolve = s.heldNodeLink
}

// heldNodeLink answers a read of sys/dev/char/0:0 from thread tid: the
// directory of the node its process opened last among those it holds.
func (s *server) heldNodeLink(tid uint32) (string, error) {
	if pid, err := processOf(int(tid)); err == nil {
		s.mu.Lock()
		var last *openFile
		var lastFh uint64
		for fh, of := range s.files {
			if of.pid == pid && fh > lastFh { // handles grow with each open
				last, lastFh = of, fh
			}
		}
		s.mu.Unlock()
		if last != nil {
			return s.nodeLink(last.dev, last.ctl), nil
		}
	}
	if len(s.sys.Devices()) == 1 {
		return s.nodeLink(0, false), nil
	}
	return "", unix.ENOENT
}

// nodeLink is the sys/dev/char link target of device dev's compute or
// control node.
func (s *server) nodeLink(dev int, ctl bool) string {
	num := fmt.Sprint(dev)
	if ctl {
		return devCharTarget(controlDir(num))
	}
	return devCharTarget(accelDir(s.sys.Device(dev).Config().PCIAddress, num))
}
