package sim

import "golang.org/x/sys/unix"

// The pin check of a served process by lookup (hostpin.go).
//
// Reading a process's whole maps file costs time in proportion to its
// mappings, and a client with thousands of threads has two mappings per
// thread stack (8,000 lines for 4,000 threads): every MEMORY MAP of host
// memory then took milliseconds of the server's time, where the driver's
// pin_user_pages_fast finds the VMAs of the range through the maple tree.
// PROCMAP_QUERY (vmaQuery; Linux 6.11, fs/proc/task_mmu.c
// do_procmap_query) answers the VMA that covers an address the same way.
// It tells permissions, sharing and the backing file's inode, not the
// VM_IO/VM_PFNMAP flags or the name the check of a file mapping needs: a
// range that reaches a file mapping, a kernel without the query or no
// /proc leave the answer to pinCheck, which reads the maps file. A range
// of anonymous memory only is answered here as pinCheck answers it, which
// for anonymous memory is: pinnable when writable.

// queryPinCheck answers what pinning [addr, addr+size) of the process
// whose maps file is named would, when the range holds anonymous memory
// only or fails before it reaches anything else (ok); otherwise ok is
// false and pinCheck answers.
func queryPinCheck(maps string, addr, size uint64) (ok bool, err error) {
	if addr+size > userAddrLimit {
		return false, nil
	}
	q, err := openVMAQueryAt(maps)
	if err != nil {
		return false, nil
	}
	defer q.close()
	start := addr &^ (hostPageSize - 1)
	end := (addr + size + hostPageSize - 1) &^ (hostPageSize - 1)
	for pos := start; pos < end; {
		v, found, err := q.query(pos)
		switch {
		case err != nil:
			return false, nil
		case found && v.inode != 0:
			return false, nil // a file mapping: pinCheck reads names and flags
		case !found || !v.write:
			// Nothing pinned yet, or a short pin (hostpin.go).
			if pos == start {
				return true, unix.EFAULT
			}
			return true, unix.ENOMEM
		}
		pos = v.end
	}
	return true, nil
}
