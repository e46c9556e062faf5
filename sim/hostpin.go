package sim

import (
	"bytes"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// Pinning host memory (hl_pin_host_memory, get_user_memory).
//
// The driver pins the pages of a host mapping with
// pin_user_pages_fast(FOLL_WRITE | FOLL_LONGTERM). The simulator does not
// pin or touch them (a 5 GB mapping stays unallocated); it checks, from
// /proc/self/maps, that the pin would succeed, and fails as the pin would:
//
//   - access_ok fails (the range runs past the user address space): EFAULT;
//   - the first page cannot be pinned: the error of the pin, EFAULT
//     (no mapping, a mapping without write permission, or a shared mapping
//     of a file on a disk filesystem, which needs dirty tracking and is
//     refused to FOLL_LONGTERM writers);
//   - a later page cannot be pinned: pin_user_pages_fast returns fewer
//     pages than asked and the driver answers ENOMEM.
//
// Mappings of device memory (VM_IO or VM_PFNMAP) are refused too
// (check_vma_flags in mm/gup.c: EFAULT). The simulator's own device
// mappings are such mappings on hardware: a CB's mmap (gaudi2_mmap maps
// the CB's coherent memory VM_IO|VM_PFNMAP) and a hardware block's
// (gaudi2_block_mmap, and Gaudi3's channel and sync manager blocks:
// io_remap_pfn_range), so pinning them fails with EFAULT; the simulator
// knows them by the names of their memfds in /proc/self/maps
// (simDeviceMemfds). Other device memory: /proc/self/maps does not show
// those flags, so when the range reaches a file mapping (device memory is
// always mapped through a file) the simulator reads them from the
// VmFlags of /proc/self/smaps ("io", "pf"). A shared file mapping counts as disk-backed when
// its device has a non-zero major number, which is true of disk
// filesystems and false of tmpfs, hugetlbfs and memfds (and of overlayfs,
// whose files are therefore accepted).

// userAddrLimit is the last byte access_ok accepts: USER_PTR_MAX on x86-64
// with 4-level paging (TASK_SIZE_MAX - 1), TASK_SIZE_MAX on arm64 with
// 48-bit addresses.
var userAddrLimit = func() uint64 {
	if runtime.GOARCH == "arm64" {
		return 1 << 48
	}
	return 1<<47 - hostPageSize - 1
}()

// vma is a line of /proc/self/maps.
type vma struct {
	start, end    uint64
	write, shared bool
	offset        uint64 // file offset of start (0 for anonymous memory)
	dev, inode    uint64
	device        bool // VM_IO or VM_PFNMAP, known after deviceFlags, or a simulated device mapping
}

// simDeviceMemfds are the memfd names (as /proc/self/maps shows them) of
// the mappings the simulator hands out for what the driver maps
// VM_IO|VM_PFNMAP: CBs (cb.go), Gaudi2's hardware blocks (blocks.go),
// Gaudi3's PDMA channel registers (pqm.go) and sync managers (sm3.go).
// Timestamp buffers are not among them: hl_ts_mmap maps vmalloc pages,
// which pin.
var simDeviceMemfds = [...]string{"/memfd:gaudi-sim-cb ", "/memfd:" + simBlockMemfd + " ", "/memfd:gaudi-sim-pdma-regs ", "/memfd:gaudi-sim-sync-mngr "}

// The process's memory maps; tests point them elsewhere.
var (
	procMaps  = "/proc/self/maps"
	procSmaps = "/proc/self/smaps"
)

// readMaps parses a process's maps file (/proc/self/maps).
func readMaps(path string) ([]vma, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := make([]vma, 0, bytes.Count(b, []byte{'\n'})+1)
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if v, ok := parseMapsLine(line); ok {
			out = append(out, v)
		}
	}
	return out, nil
}

// parseMapsLine reads "start-end perms offset major:minor inode [path]".
func parseMapsLine(line []byte) (vma, bool) {
	next := func() []byte {
		line = bytes.TrimLeft(line, " ")
		i := bytes.IndexByte(line, ' ')
		if i < 0 {
			i = len(line)
		}
		f := line[:i]
		line = line[i:]
		return f
	}
	addr, perms, offset, dev, inode := next(), next(), next(), next(), next()
	path := bytes.TrimLeft(line, " ")
	lo, hi, ok1 := bytes.Cut(addr, []byte("-"))
	major, minor, ok2 := bytes.Cut(dev, []byte(":"))
	if !ok1 || !ok2 || len(perms) < 4 {
		return vma{}, false
	}
	start, ok3 := parseUint(lo, 16)
	end, ok4 := parseUint(hi, 16)
	maj, ok5 := parseUint(major, 16)
	mnr, ok6 := parseUint(minor, 16)
	ino, ok7 := parseUint(inode, 10)
	off, ok8 := parseUint(offset, 16)
	if !ok3 || !ok4 || !ok5 || !ok6 || !ok7 || !ok8 || maj > 1<<32-1 || mnr > 1<<32-1 {
		return vma{}, false
	}
	simDevice := false
	for _, name := range simDeviceMemfds {
		// "/memfd:NAME (deleted)": the name and the space after it.
		if bytes.HasPrefix(path, []byte(name)) {
			simDevice = true
		}
	}
	return vma{
		start:  start,
		end:    end,
		write:  perms[1] == 'w',
		shared: perms[3] == 's',
		offset: off,
		dev:    unix.Mkdev(uint32(maj), uint32(mnr)),
		inode:  ino,
		device: simDevice,
	}, true
}

// parseUint parses a non-empty unsigned number in base 10 or 16 without
// allocating; ok is false for anything else, overflow included.
func parseUint(b []byte, base uint64) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case base == 16 && c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case base == 16 && c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if n > (1<<64-1-d)/base {
			return 0, false
		}
		n = n*base + d
	}
	return n, true
}

// deviceFlags sets the device field of the vmas from the VmFlags lines
// of the process's smaps file (/proc/self/smaps; VM_IO is "io", VM_PFNMAP
// "pf"). Without smaps nothing is known.
func deviceFlags(path string, vmas []vma) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	byStart := make(map[uint64]*vma, len(vmas))
	for i := range vmas {
		byStart[vmas[i].start] = &vmas[i]
	}
	var cur *vma
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if rest, ok := bytes.CutPrefix(line, []byte("VmFlags:")); ok {
			if cur != nil {
				for _, fl := range bytes.Fields(rest) {
					if string(fl) == "io" || string(fl) == "pf" {
						cur.device = true
					}
				}
			}
			continue
		}
		// A mapping's first line: "start-end perms ...".
		if dash := bytes.IndexByte(line, '-'); dash > 0 && bytes.IndexByte(line[:dash], ':') < 0 {
			if start, err := strconv.ParseUint(string(line[:dash]), 16, 64); err == nil {
				cur = byStart[start]
			}
		}
	}
}

// pinnable reports whether pin_user_pages(FOLL_WRITE|FOLL_LONGTERM) takes
// the pages of v.
func (v *vma) pinnable() bool {
	if !v.write || v.device {
		return false
	}
	if v.shared && v.inode != 0 && unix.Major(v.dev) != 0 {
		return false
	}
	return true
}

// pinCheck answers what pinning [addr, addr+size) of the process whose
// maps and smaps files are named would; the caller has rejected a zero
// size and overflow (EINVAL) as hl_pin_host_memory does. It also returns
// the process's mappings it read (nil without /proc).
func pinCheck(maps, smaps string, addr, size uint64) ([]vma, error) {
	if addr+size > userAddrLimit {
		return nil, unix.EFAULT
	}
	vmas, err := readMaps(maps)
	if err != nil {
		// Without /proc nothing can be checked; the copies will fault.
		return nil, nil
	}
	start := addr &^ (hostPageSize - 1)
	end := (addr + size + hostPageSize - 1) &^ (hostPageSize - 1)
	// Only a file mapping can be device memory: read the flags of the
	// process's mappings when the range reaches one.
	for _, v := range vmas {
		if v.start < end && v.end > start && v.inode != 0 {
			deviceFlags(smaps, vmas)
			break
		}
	}
	pos := start
	i := 0
	for pos < end {
		for i < len(vmas) && vmas[i].end <= pos {
			i++
		}
		if i == len(vmas) || vmas[i].start > pos || !vmas[i].pinnable() {
			if pos == start {
				return nil, unix.EFAULT
			}
			return nil, unix.ENOMEM
		}
		pos = vmas[i].end
	}
	return vmas, nil
}
