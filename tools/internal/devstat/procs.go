package devstat

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// holder is what one file path means for the process scan: a device (by
// its position in Snapshot.Devices) and the kind of node.
type holder struct {
	dev  int
	node string
}

// fileID is a file's identity: its device number and inode, or for a
// device node the device it opens (rdev), which is the same through every
// path and mount that reaches it.
type fileID struct {
	char     bool
	dev, ino uint64
}

// idOf returns the identity of the file stat describes.
func idOf(st *unix.Stat_t) fileID {
	if st.Mode&unix.S_IFMT == unix.S_IFCHR {
		return fileID{char: true, dev: st.Rdev}
	}
	return fileID{dev: st.Dev, ino: st.Ino}
}

// scanProcesses finds the processes that hold one of files open, as fuser
// and hl-smi do, and adds them to their devices. A process holds a file
// when one of its <root>/proc/<pid>/fd/* is that file: the same device and
// inode (stat through the fd link, which reaches the open file whatever
// mount namespace the process is in), or the same rdev for a device node.
// Matching the path the link shows would list a process of another mount
// namespace that holds another file of the same name. Only where a node
// does not exist here (a copy of another machine's tree named by root)
// is the path compared. Processes this one may not inspect (other
// users', without privilege) are not seen, and neither are those that
// exit while being read.
func scanProcesses(root string, files map[string]holder, devs []Device) {
	if len(files) == 0 {
		return
	}
	byID := map[fileID]holder{}
	byPath := map[string]holder{}
	// Only fds whose file has the name of one of files are stat'ed:
	// stat of every fd of every process would be slow, and a stat can
	// wait on a FUSE server.
	names := map[string]bool{}
	for path, h := range files {
		names[filepath.Base(path)] = true
		var st unix.Stat_t
		if err := unix.Stat(path, &st); err == nil {
			byID[idOf(&st)] = h
		} else if root != "" && root != "/" {
			byPath[path] = h
		}
	}
	proc := filepath.Join(rootOr(root), "proc")
	ents, err := os.ReadDir(proc)
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		fds, err := os.ReadDir(filepath.Join(proc, e.Name(), "fd"))
		if err != nil {
			continue
		}
		seen := map[holder]bool{}
		for _, fd := range fds {
			link := filepath.Join(proc, e.Name(), "fd", fd.Name())
			target, err := os.Readlink(link)
			if err != nil || !names[filepath.Base(target)] {
				continue
			}
			h, ok := byPath[target]
			var st unix.Stat_t
			if !ok && unix.Stat(link, &st) == nil {
				h, ok = byID[idOf(&st)]
			}
			if !ok || seen[h] {
				continue
			}
			seen[h] = true
			name, _ := readText(filepath.Join(proc, e.Name(), "comm"))
			devs[h.dev].Processes = append(devs[h.dev].Processes, Process{PID: pid, Name: name, Node: h.node})
		}
	}
	for i := range devs {
		slices.SortFunc(devs[i].Processes, func(a, b Process) int {
			if a.PID != b.PID {
				return a.PID - b.PID
			}
			return strings.Compare(a.Node, b.Node)
		})
	}
}
