// Package holders finds the processes that hold files open, as fuser and
// hl-smi do, by the file's identity: a process holds a file when one of
// its /proc/PID/fd/* is that file (the same device and inode, or, for a
// device node, the same device it opens). hlinfo and hlexporter list a
// device's holders with it, and every command names the holder of a
// device that refuses to open with EBUSY.
//
// The functions are safe for concurrent use.
package holders

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Process is a process that holds a file open.
type Process struct {
	PID int
	// Command is the process's comm (/proc/PID/comm), such as "hlperf";
	// "" when it exited while being read.
	Command string
}

// String is "pid 1234 (hlperf)".
func (p Process) String() string {
	if p.Command == "" {
		return "pid " + strconv.Itoa(p.PID)
	}
	return "pid " + strconv.Itoa(p.PID) + " (" + p.Command + ")"
}

// Text is how a refusal names the holders of a file: "held by pid 1234
// (hlperf)", "held by pid 1 (a), pid 2 (b)"; "" for none.
func Text(ps []Process) string {
	if len(ps) == 0 {
		return ""
	}
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.String()
	}
	return "held by " + strings.Join(parts, ", ")
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

// Find returns, by path, the processes that hold each of paths open,
// each process once per path, sorted by pid. The processes are those of
// root's proc/ ("" or "/" for this machine's). A process holds a path
// when one of its fds is the same file (stat through the fd link, which
// reaches the open file whatever mount namespace the process is in):
// matching the path the link shows would count a process of another
// mount namespace that holds another file of the same name. Only where
// a path does not exist here (a copy of another machine's tree below
// root) is the path compared. Processes this one may not inspect (other
// users', without privilege) are not seen, and neither are those that
// exit while being read.
func Find(root string, paths []string) map[string][]Process {
	out := map[string][]Process{}
	if len(paths) == 0 {
		return out
	}
	if root == "" {
		root = "/"
	}
	byID := map[fileID][]string{}
	byPath := map[string]bool{}
	// Only fds whose file has the name of one of paths are stat'ed: stat
	// of every fd of every process would be slow, and a stat can wait on
	// a FUSE server.
	names := map[string]bool{}
	for _, path := range paths {
		names[filepath.Base(path)] = true
		var st unix.Stat_t
		if err := unix.Stat(path, &st); err == nil {
			id := idOf(&st)
			byID[id] = append(byID[id], path)
		} else if root != "/" {
			byPath[path] = true
		}
	}
	proc := filepath.Join(root, "proc")
	ents, err := os.ReadDir(proc)
	if err != nil {
		return out
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		fdDir := filepath.Join(proc, e.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		seen := map[string]bool{}
		for _, fd := range fds {
			link := filepath.Join(fdDir, fd.Name())
			target, err := os.Readlink(link)
			if err != nil || !names[filepath.Base(target)] {
				continue
			}
			var held []string
			if byPath[target] {
				held = []string{target}
			} else if st := (unix.Stat_t{}); unix.Stat(link, &st) == nil {
				held = byID[idOf(&st)]
			}
			for _, path := range held {
				if seen[path] {
					continue
				}
				seen[path] = true
				comm, _ := os.ReadFile(filepath.Join(proc, e.Name(), "comm"))
				out[path] = append(out[path], Process{PID: pid, Command: strings.TrimSpace(string(comm))})
			}
		}
	}
	for _, ps := range out {
		slices.SortFunc(ps, func(a, b Process) int { return a.PID - b.PID })
	}
	return out
}
