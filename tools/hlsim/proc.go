package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// tgids caches the thread group of the thread ids requests came from.
var tgids sync.Map // int -> int

// tgid returns the thread group id (the process) of thread tid, from
// /proc/TID/status, or from a cache when cached is set. The kernel reuses
// a thread id only after its thread ended, so a cached answer is stale
// only for an id that went to another process since: callers that find it
// does not match look again without the cache.
func tgid(tid int, cached bool) (int, error) {
	if v, ok := tgids.Load(tid); ok && cached {
		return v.(int), nil
	}
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
			tgids.Store(tid, pid)
			return pid, nil
		}
	}
	return 0, fmt.Errorf("thread %d: no Tgid in /proc/%d/status", tid, tid)
}

// clientFD returns a duplicate, in the server, of the client's descriptor
// fd: pidfd_getfd on the process the file serves. A descriptor the client
// does not have is EBADF, as the driver's fdget answers.
func (s *server) clientFD(of *openFile, fd int) (int, error) {
	if fd < 0 {
		return -1, unix.EBADF
	}
	pidfd, err := unix.PidfdOpen(of.pid, 0)
	if err != nil {
		return -1, unix.EBADF
	}
	defer unix.Close(pidfd)
	mine, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		if errors.Is(err, unix.EBADF) {
			return -1, unix.EBADF
		}
		s.log.Printf("take descriptor %d of process %d: %v", fd, of.pid, err)
		return -1, err
	}
	return mine, nil
}
