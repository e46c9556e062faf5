package strict

import (
	"bytes"
	"runtime"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
)

func needFramePointers(t *testing.T) {
	t.Helper()
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("no frame pointers on %s", runtime.GOARCH)
	}
}

//go:noinline
func boundsFrom(depth int, addrs *[]uintptr) (lo, hi uintptr, ok bool) {
	var local [64]byte
	local[depth%64] = 1
	*addrs = append(*addrs, uintptr(unsafe.Pointer(&local[0])))
	if depth > 0 {
		lo, hi, ok = boundsFrom(depth-1, addrs)
	} else {
		lo, hi, ok = StackBounds()
	}
	runtime.KeepAlive(&local)
	return
}

// TestStackBounds: the bounds hold the locals of every frame of the
// goroutine, in new goroutines and the test's own, and no heap object.
func TestStackBounds(t *testing.T) {
	needFramePointers(t)
	check := func(t *testing.T) {
		// Grow the stack first, so that it does not move while the
		// frames below record their addresses as integers.
		grow(64)
		var addrs []uintptr
		lo, hi, ok := boundsFrom(20, &addrs)
		if !ok {
			t.Fatal("StackBounds found no frame pointer chain")
		}
		for i, a := range addrs {
			if a < lo || a >= hi {
				t.Errorf("frame %d: local at %#x outside [%#x, %#x)", i, a, lo, hi)
			}
		}
		heap := new([64]byte)
		if OnStack(uint64(uintptr(unsafe.Pointer(heap))), 64, lo, hi) {
			t.Errorf("heap object at %p inside [%#x, %#x)", heap, lo, hi)
		}
		if hi-lo > 1<<20 {
			t.Errorf("stack in use [%#x, %#x) is %d bytes", lo, hi, hi-lo)
		}
	}
	t.Run("test goroutine", check)
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(t)
	}()
	<-done
}

// TestMoveStack: MoveStack moves the stack, and an address kept as an
// integer then names memory that no longer holds what it held once Poison
// ran (on one processor, where the freed stack goes to the poisoners).
// Poison gives no guarantee (the race detector's and the test binary's own
// goroutines may take the freed stack first), so the test tries up to 20
// fresh goroutines and fails only when none of them saw its bytes change;
// a failure to move the stack fails at once.
func TestMoveStack(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for try := 1; ; try++ {
		moved, changed := moveAndPoison()
		if !moved {
			t.Fatal("MoveStack did not move the stack")
		}
		if changed {
			return
		}
		if try == 20 {
			t.Fatalf("the old stack address still holds the bytes after MoveStack and Poison, %d times", try)
		}
	}
}

// moveAndPoison is one try of TestMoveStack, on a goroutine of its own.
func moveAndPoison() (moved, changed bool) {
	done := make(chan struct{})
	var release func()
	go func() {
		defer close(done)
		var arr [64]byte
		for i := range arr {
			arr[i] = byte(i)
		}
		addr := uintptr(unsafe.Pointer(&arr[0]))
		before := arr
		moved, _ = MoveStack()
		runtime.GC()
		release = Poison(8, 64<<10)
		var now [64]byte
		copy(now[:], unsafe.Slice(*(**byte)(unsafe.Pointer(&addr)), 64))
		changed = !bytes.Equal(now[:], before[:])
		runtime.KeepAlive(&arr)
	}()
	<-done
	release()
	return moved, changed
}

// onHeap keeps what the tests below hand to Regions as integers on the
// heap: a slice only an integer refers to may stay on the goroutine's
// stack, and a stack that grows moves it (TestRegions failed so under
// -race -count=4: "wait CS: [... signal_seq_arr Addr:824634510568 ...]").
var onHeap []any

// TestRegions decodes each kind of argument the driver reads addresses
// from.
func TestRegions(t *testing.T) {
	chunks := make([]hl.CSChunk, 2)
	seqs := make([]uint64, 3)
	onHeap = append(onHeap, chunks, seqs)
	var sc hl.CSSignalChunk
	sc.SignalSeqArr = hl.SlicePointer(seqs)
	sc.NumSignalSeqArr = 3
	wait := []hl.CSSignalChunk{sc}
	onHeap = append(onHeap, wait)
	read := func(addr uint64, b []byte) bool {
		copy(b, unsafe.Slice(*(**byte)(unsafe.Pointer(&addr)), len(b)))
		return true
	}
	var cs hl.CSChunksArgs
	cs.ChunksExecute = hl.SlicePointer(chunks)
	cs.NumChunksExecute = 2
	rs := Regions(hl.HL_IOCTL_CS, unsafe.Pointer(&cs), read)
	if len(rs) != 1 || rs[0].What != "CS chunks_execute" || rs[0].Len != 2*uint64(unsafe.Sizeof(hl.CSChunk{})) || rs[0].Use != In {
		t.Errorf("CS: %+v", rs)
	}
	var w hl.CSChunksArgs
	w.ChunksExecute = hl.SlicePointer(wait)
	w.NumChunksExecute = 1
	w.CSFlags = hl.HL_CS_FLAGS_WAIT
	rs = Regions(hl.HL_IOCTL_CS, unsafe.Pointer(&w), read)
	if len(rs) != 2 || rs[1].What != "CS chunk signal_seq_arr" || rs[1].Len != 24 ||
		rs[1].Addr != uint64(uintptr(unsafe.Pointer(&seqs[0]))) {
		t.Errorf("wait CS: %+v", rs)
	}
	buf := make([]byte, 16)
	onHeap = append(onHeap, buf)
	info := hl.InfoArgs{ReturnPointer: hl.SlicePointer(buf), ReturnSize: 16}
	rs = Regions(hl.HL_IOCTL_INFO, unsafe.Pointer(&info), read)
	if len(rs) != 1 || rs[0].Use != Out || rs[0].Len != 16 {
		t.Errorf("INFO: %+v", rs)
	}
	runtime.KeepAlive(chunks)
	runtime.KeepAlive(wait)
}

// TestRegionsInfoAnswer: an INFO region is what the driver writes, at most
// the answer's size however large return_size is (a buffer with an
// oversized return_size was checked past its end: a heap buffer below the
// goroutine's stack was then reported as a stack address).
func TestRegionsInfoAnswer(t *testing.T) {
	buf := make([]byte, 1<<20)
	for _, c := range []struct {
		op         uint32
		size, want uint64
	}{
		{hl.HL_INFO_HW_IP_INFO, 1 << 20, uint64(unsafe.Sizeof(hl.InfoHWIPInfo{}))},
		{hl.HL_INFO_HW_IP_INFO, 16, 16},
		{hl.HL_INFO_DEVICE_STATUS, 1 << 20, uint64(unsafe.Sizeof(hl.InfoDeviceStatus{}))},
		{hl.HL_INFO_DRAM_USAGE, 1 << 20, uint64(unsafe.Sizeof(hl.InfoDRAMUsage{}))},
		{hl.HL_INFO_HW_IDLE, 1 << 20, uint64(unsafe.Sizeof(hl.InfoHWIdle{}))},
		{hl.HL_INFO_DEVICE_UTILIZATION, 1 << 20, uint64(unsafe.Sizeof(hl.InfoDeviceUtilization{}))},
		{hl.HL_INFO_CLK_RATE, 1 << 20, uint64(unsafe.Sizeof(hl.InfoClkRate{}))},
		{hl.HL_INFO_RESET_COUNT, 1 << 20, uint64(unsafe.Sizeof(hl.InfoResetCount{}))},
		{hl.HL_INFO_TIME_SYNC, 1 << 20, uint64(unsafe.Sizeof(hl.InfoTimeSync{}))},
		{hl.HL_INFO_CS_COUNTERS, 1 << 20, uint64(unsafe.Sizeof(hl.InfoCSCounters{}))},
		{hl.HL_INFO_PCI_COUNTERS, 1 << 20, uint64(unsafe.Sizeof(hl.InfoPCICounters{}))},
		{hl.HL_INFO_CLK_THROTTLE_REASON, 1 << 20, uint64(unsafe.Sizeof(hl.InfoClkThrottle{}))},
		{hl.HL_INFO_SYNC_MANAGER, 1 << 20, uint64(unsafe.Sizeof(hl.InfoSyncManager{}))},
		{hl.HL_INFO_TOTAL_ENERGY, 1 << 20, uint64(unsafe.Sizeof(hl.InfoEnergy{}))},
		{hl.HL_INFO_PLL_FREQUENCY, 1 << 20, uint64(unsafe.Sizeof(hl.PLLFrequencyInfo{}))},
		{hl.HL_INFO_POWER, 1 << 20, uint64(unsafe.Sizeof(hl.PowerInfo{}))},
		{hl.HL_INFO_OPEN_STATS, 1 << 20, uint64(unsafe.Sizeof(hl.OpenStatsInfo{}))},
		{hl.HL_INFO_DRAM_PENDING_ROWS, 1 << 20, 4},
		{hl.HL_INFO_LAST_ERR_OPEN_DEV_TIME, 1 << 20, uint64(unsafe.Sizeof(hl.InfoLastErrOpenDevTime{}))},
		{hl.HL_INFO_CS_TIMEOUT_EVENT, 1 << 20, uint64(unsafe.Sizeof(hl.InfoCSTimeoutEvent{}))},
		{hl.HL_INFO_RAZWI_EVENT, 1 << 20, uint64(unsafe.Sizeof(hl.InfoRazwiEvent{}))},
		{hl.HL_INFO_DEV_MEM_ALLOC_PAGE_SIZES, 1 << 20, uint64(unsafe.Sizeof(hl.InfoDevMemallocPageSizes{}))},
		{hl.HL_INFO_SECURED_ATTESTATION, 1 << 20, uint64(unsafe.Sizeof(hl.InfoSecAttest{}))},
		{hl.HL_INFO_REGISTER_EVENTFD, 1 << 20, 0},
		{hl.HL_INFO_UNREGISTER_EVENTFD, 1 << 20, 0},
		{hl.HL_INFO_GET_EVENTS, 1 << 20, 8},
		{hl.HL_INFO_GET_EVENTS, 4, 0},
		{hl.HL_INFO_UNDEFINED_OPCODE_EVENT, 1 << 20, uint64(unsafe.Sizeof(hl.InfoUndefinedOpcodeEvent{}))},
		{hl.HL_INFO_PAGE_FAULT_EVENT, 1 << 20, uint64(unsafe.Sizeof(hl.PageFaultInfo{}))},
		{hl.HL_INFO_HW_ERR_EVENT, 1 << 20, uint64(unsafe.Sizeof(hl.InfoHWErrEvent{}))},
		{hl.HL_INFO_HW_ERR_EVENT, 4, 0},
		{hl.HL_INFO_FW_ERR_EVENT, 1 << 20, uint64(unsafe.Sizeof(hl.InfoFWErrEvent{}))},
		{hl.HL_INFO_USER_ENGINE_ERR_EVENT, 1 << 20, uint64(unsafe.Sizeof(hl.InfoEngineErrEvent{}))},
		{hl.HL_INFO_DEV_SIGNED, 1 << 20, uint64(unsafe.Sizeof(hl.InfoSigned{}))},
		// Answers whose size the driver or the firmware decides: all of
		// return_size may be written.
		{hl.HL_INFO_HW_EVENTS, 1 << 20, 1 << 20},
		{hl.HL_INFO_ENGINE_STATUS, 1 << 20, 1 << 20},
		{hl.HL_INFO_USER_MAPPINGS, 1 << 20, 1 << 20},
		{hl.HL_INFO_FW_GENERIC_REQ, 1 << 20, 1 << 20},
	} {
		info := hl.InfoArgs{ReturnPointer: hl.SlicePointer(buf), ReturnSize: uint32(c.size), Op: c.op}
		rs := Regions(hl.HL_IOCTL_INFO, unsafe.Pointer(&info), nil)
		var got uint64
		if len(rs) == 1 {
			got = rs[0].Len
		}
		if len(rs) > 1 || got != c.want {
			t.Errorf("INFO op %d with return_size %d: regions %+v, want %d bytes", c.op, c.size, rs, c.want)
		}
	}
	runtime.KeepAlive(buf)
}
