package memory

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strconv"
	"sync"
)

// Go-heap detection.
//
// Since Go 1.26 the runtime places its heap at a random address, so no fixed
// address range identifies it. What stays true is that heap objects, large
// and small, and goroutine stacks live in the anonymous memory mappings the
// runtime reserved for its arenas. onGoHeap therefore looks up, in
// /proc/self/maps, the mapping that holds the caller's memory and the
// mappings that hold known heap objects (a small one allocated for the
// check and a large one kept for the program's life): memory in the same
// mapping as a heap object is Go heap. Heap arenas the runtime reserved far
// from the others, in a separate mapping, are not recognised; mapping
// memory that the kernel merged with the heap's (an mmap placed right
// next to it) is refused although it would be safe.

var (
	largeProbeOnce sync.Once
	largeProbe     []byte
)

// onGoHeap reports whether b lies in a mapping that holds Go heap objects.
func onGoHeap(b []byte) bool {
	largeProbeOnce.Do(func() { largeProbe = make([]byte, 1<<20) })
	small := new([64]byte)
	probes := []uint64{addrOf(small[:]), addrOf(largeProbe)}
	maps, err := os.ReadFile("/proc/self/maps")
	runtime.KeepAlive(small)
	if err != nil {
		return false
	}
	start := addrOf(b)
	target, ok := mappingOf(maps, start)
	if !ok {
		return false
	}
	for _, p := range probes {
		if m, ok := mappingOf(maps, p); ok && m == target {
			return true
		}
	}
	return false
}

// mappingOf returns the start of the /proc/self/maps line that covers addr.
func mappingOf(maps []byte, addr uint64) (uint64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		line := sc.Bytes()
		dash := bytes.IndexByte(line, '-')
		sp := bytes.IndexByte(line, ' ')
		if dash < 0 || sp < dash {
			continue
		}
		lo, err1 := strconv.ParseUint(string(line[:dash]), 16, 64)
		hi, err2 := strconv.ParseUint(string(line[dash+1:sp]), 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if lo <= addr && addr < hi {
			return lo, true
		}
	}
	return 0, false
}
