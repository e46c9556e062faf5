package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// tgid returns the thread group id (the process) of thread tid, read from
// /proc/TID/status each time: a cached answer could name a process that
// has since ended and whose ids went to another (there is no cache).
func tgid(tid int) (int, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("thread %d: %w", tid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Tgid:"); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				break
			}
			return pid, nil
		}
	}
	return 0, fmt.Errorf("thread %d: no Tgid in /proc/%d/status", tid, tid)
}

// kcmpVM is KCMP_VM (include/uapi/linux/kcmp.h): kcmp answers 0 when two
// tasks share one address space (kernel/kcmp.c, kcmp_ptr on task->mm).
const kcmpVM = 1

// inAddressSpace reports whether thread tid (a FUSE request's caller)
// runs in the address space of's file is bound to. Whose memory a request
// reads: the file reaches only the opener's address space (the
// /proc/PID/mem it holds, sim.remoteMem), so a request is served only
// from a thread of that address space: the opener's threads (FUSE names
// the calling thread, fs/fuse/dev.c fuse_new_request: current->pid).
// A process the descriptor was inherited by or passed to (a forked child
// has a copy of the memory, not the memory: its pointers would be read in
// the opener's), and the opener after exec (a new mm), are refused with
// EPERM. Serving such a caller from its own address space would need a
// /proc/TID/mem opened per request from a number, the race this binding
// removes. kcmp compares the opener's current mm with the caller's; the
// held pidfd then says the pid still named the opener during the compare
// (a pid is not reused before its process is reaped), and the held mem
// says the opener's mm is still the one the file was bound to.
func inAddressSpace(of *openFile, tid int) bool {
	if tid <= 0 || of.f.AddressSpaceGone() {
		return false
	}
	r, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(of.pid), uintptr(tid), kcmpVM, 0, 0, 0)
	if e != 0 || r != 0 {
		return false
	}
	return unix.PidfdSendSignal(of.pidfd, 0, nil, 0) == nil && !of.f.AddressSpaceGone()
}

// ownedBy reports whether process pid's credentials are uid's: the owner
// of /proc/PID is the process's effective uid (fs/proc/base.c,
// task_dump_owner), or root for a process that is not dumpable (a setuid
// program), which only root may then open the device for.
func ownedBy(pid int, uid uint32) bool {
	if uid == 0 {
		return true
	}
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/"+strconv.Itoa(pid), &st); err != nil {
		return false
	}
	return st.Uid == uid
}

// clientFD returns a duplicate, in the server, of the client's descriptor
// fd: pidfd_getfd through the pidfd taken when the file was opened, so it
// reaches the opener and never a process that took its pid. A descriptor
// the client does not have is EBADF, as the driver's fdget answers.
func (s *server) clientFD(of *openFile, fd int) (int, error) {
	if fd < 0 {
		return -1, unix.EBADF
	}
	mine, err := unix.PidfdGetfd(of.pidfd, fd, 0)
	if err != nil {
		if errors.Is(err, unix.EBADF) {
			return -1, unix.EBADF
		}
		s.log.Printf("take descriptor %d of process %d: %v", fd, of.pid, err)
		return -1, err
	}
	return mine, nil
}
