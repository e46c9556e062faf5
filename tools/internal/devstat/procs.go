package devstat

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// holder is what one file path means for the process scan: a device (by
// its position in Snapshot.Devices) and the kind of node.
type holder struct {
	dev  int
	node string
}

// scanProcesses finds the processes that hold one of files open by reading
// the links of <root>/proc/<pid>/fd/*, as fuser and hl-smi do, and adds
// them to their devices. Processes this one may not inspect (other users',
// without privilege) are not seen, and neither are those that exit while
// being read.
func scanProcesses(root string, files map[string]holder, devs []Device) {
	if len(files) == 0 {
		return
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
			target, err := os.Readlink(filepath.Join(proc, e.Name(), "fd", fd.Name()))
			if err != nil {
				continue
			}
			h, ok := files[target]
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
