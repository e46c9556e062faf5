package sim

import (
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The first write to a page of simulated DRAM allocates and zeroes it in
// the DRAM memfd (tmpfs). With 4 KiB pages that is a page fault per
// 4 KiB, which for a first copy into fresh device memory costs more than
// the copy. Where the host allows, adviseDRAM asks for 2 MiB pages
// instead: shmem transparent huge pages, which the kernel gives a
// MADV_HUGEPAGE mapping when /sys/kernel/mm/transparent_hugepage/
// shmem_enabled is "advise", and any mapping when it is "always" or
// "within_size" (Documentation/admin-guide/mm/transhuge.rst). Holes still
// work: punching part of a huge page splits it, and SEEK_DATA/SEEK_HOLE
// see the pages that were written, a 2 MiB page at a time.
//
// hugetlbfs (MFD_HUGETLB) is not used: its files have no holes for
// SEEK_HOLE (every offset reads as data, so sparse reads and copies would
// touch all of DRAM), a hugetlb mapping cannot be split below 2 MiB (the
// exports' memfd pieces are mapped over DRAM at 4 KiB offsets), and a
// MAP_NORESERVE hugetlb mapping raises SIGBUS when the pool runs out.

// adviseDRAM asks for transparent huge pages on the DRAM mapping of size
// bytes at base. It is advice: a host that does not allow shmem huge pages
// keeps 4 KiB pages, and an error changes nothing.
func adviseDRAM(base unsafe.Pointer, size uint64) {
	unix.Madvise(unsafe.Slice((*byte)(base), size), unix.MADV_HUGEPAGE)
}

// shmemTHPPath is the host's policy for shmem huge pages; tests replace it.
var shmemTHPPath = "/sys/kernel/mm/transparent_hugepage/shmem_enabled"

// DRAMPages says which pages back simulated DRAM on this host, and so
// what the first touch of a page of device memory costs: "2 MiB
// transparent huge pages (shmem_enabled advise)" when the host allows
// them, "4 KiB pages (shmem_enabled never)" otherwise. Programs that time
// copies into fresh device memory say it next to their figures.
func DRAMPages() string {
	b, err := os.ReadFile(shmemTHPPath)
	if err != nil {
		return "4 KiB pages (no shmem transparent huge pages on this host)"
	}
	mode := ""
	for _, f := range strings.Fields(string(b)) {
		if strings.HasPrefix(f, "[") && strings.HasSuffix(f, "]") {
			mode = strings.Trim(f, "[]")
		}
	}
	switch mode {
	case "always", "within_size", "advise", "force":
		return "2 MiB transparent huge pages (shmem_enabled " + mode + ")"
	case "":
		return "4 KiB pages (shmem_enabled unreadable)"
	}
	return "4 KiB pages (shmem_enabled " + mode + ")"
}
