package leakcheck

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/gaudi-go/gaudi/internal/leak"
	"golang.org/x/sys/unix"
)

// snapshot is what the process holds at one moment.
type snapshot struct {
	fds        map[int]string // descriptor -> link target
	maps       []mapEntry
	lib        []leak.Mapping
	goroutines map[int64]goroutine
}

type fdEntry struct {
	fd     int
	target string
}

// mapKey identifies a mapping: the same range of the same file.
type mapKey struct {
	start, end uintptr
	offset     uint64
	inode      uint64
	path       string
}

// mapEntry is a line of /proc/self/maps.
type mapEntry struct {
	key  mapKey
	line string
}

// fileBacked reports whether the mapping is of a file (a memfd, a
// dma-buf, a device node, a shared object) rather than anonymous memory
// or a kernel pseudo-mapping ([stack], [vdso], [anon:...]).
func (m mapEntry) fileBacked() bool {
	return m.key.path != "" && !strings.HasPrefix(m.key.path, "[")
}

type goroutine struct {
	id    int64
	stack string
}

// take records the process's descriptors, mappings and goroutines.
// Descriptors come first, so that the ones reading the others opens are
// not among them.
func take() (*snapshot, error) {
	fds, err := openFDs()
	if err != nil {
		return nil, err
	}
	maps, err := readMaps()
	if err != nil {
		return nil, err
	}
	return &snapshot{fds: fds, maps: maps, lib: leak.Mappings(), goroutines: goroutines()}, nil
}

// openFDs lists the open descriptors with their link targets, less the
// one it reads the list through.
func openFDs() (map[int]string, error) {
	dir, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("list descriptors: %w", err)
	}
	defer unix.Close(dir)
	var names []string
	buf := make([]byte, 16<<10)
	for {
		n, err := unix.ReadDirent(dir, buf)
		if err != nil {
			return nil, fmt.Errorf("list descriptors: %w", err)
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	fds := make(map[int]string, len(names))
	for _, name := range names {
		fd, err := strconv.Atoi(name)
		if err != nil || fd == dir {
			continue
		}
		target, err := os.Readlink("/proc/self/fd/" + name)
		if err != nil {
			continue // closed since the listing
		}
		fds[fd] = target
	}
	return fds, nil
}

// readMaps parses /proc/self/maps.
func readMaps() ([]mapEntry, error) {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil, fmt.Errorf("read mappings: %w", err)
	}
	return parseMaps(b)
}

// parseMaps parses lines of the form
//
//	7f3c1e600000-7f3c1e800000 rw-s 00000000 00:01 1234    /memfd:gaudi-sim-cb (deleted)
//
// (proc_pid_maps(5)); the path may hold spaces.
func parseMaps(b []byte) ([]mapEntry, error) {
	var out []mapEntry
	for line := range bytes.Lines(b) {
		s := strings.TrimRight(string(line), "\n")
		if s == "" {
			continue
		}
		f := strings.Fields(s)
		if len(f) < 5 {
			return nil, fmt.Errorf("mapping line %q: too few fields", s)
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		off, err3 := strconv.ParseUint(f[2], 16, 64)
		inode, err4 := strconv.ParseUint(f[4], 10, 64)
		if !ok || err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			return nil, fmt.Errorf("mapping line %q: bad number", s)
		}
		path := ""
		if len(f) > 5 {
			// The path starts at the sixth field and runs to the end.
			rest := s
			for range 5 {
				rest = strings.TrimLeft(rest, " ")
				i := strings.IndexByte(rest, ' ')
				if i < 0 {
					rest = ""
					break
				}
				rest = rest[i:]
			}
			path = strings.TrimLeft(rest, " ")
		}
		out = append(out, mapEntry{
			key:  mapKey{start: uintptr(start), end: uintptr(end), offset: off, inode: inode, path: path},
			line: s,
		})
	}
	return out, nil
}

// goroutines returns every goroutine's stack by id.
func goroutines() map[int64]goroutine {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[int64]goroutine{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		rest, ok := strings.CutPrefix(g, "goroutine ")
		if !ok {
			continue
		}
		idText, _, _ := strings.Cut(rest, " ")
		id, err := strconv.ParseInt(idText, 10, 64)
		if err != nil {
			continue
		}
		out[id] = goroutine{id: id, stack: g}
	}
	return out
}
