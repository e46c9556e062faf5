package devstat

import (
	"slices"
	"strings"

	"github.com/gaudi-go/gaudi/internal/holders"
)

// holder is what one file path means for the process scan: a device (by
// its position in Snapshot.Devices) and the kind of node.
type holder struct {
	dev  int
	node string
}

// scanProcesses finds the processes that hold one of files open and
// adds them to their devices. Holders are matched by the file's identity
// (package holders): a process of another mount namespace that holds
// another file of the same path does not hold the device.
func scanProcesses(root string, files map[string]holder, devs []Device) {
	paths := make([]string, 0, len(files))
	for path := range files {
		paths = append(paths, path)
	}
	for path, ps := range holders.Find(root, paths) {
		h := files[path]
		for _, p := range ps {
			devs[h.dev].Processes = append(devs[h.dev].Processes, Process{PID: p.PID, Name: p.Command, Node: h.node})
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
