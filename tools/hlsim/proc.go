package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
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
