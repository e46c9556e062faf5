package strict

import (
	"runtime"
	"sync"
	"unsafe"
)

// maxFrames bounds the frame pointer walk of StackBounds.
const maxFrames = 1 << 16

// StackBounds returns the part of the calling goroutine's stack that is in
// use, [lo, hi): from StackBounds' own frame to the saved frame pointer
// and return address of the goroutine's outermost frame. It walks the
// frame pointer chain, which the Go toolchain keeps on amd64 and arm64
// (and which ends with a zero where the goroutine started); ok is false
// elsewhere, and when the chain does not look like one.
//
// The bounds hold until the goroutine next calls a function that may grow
// its stack: the caller compares addresses with them at once.
//
//go:noinline
func StackBounds() (lo, hi uintptr, ok bool) {
	fp := framePointer()
	if fp == 0 {
		return 0, 0, false
	}
	var here byte
	lo = min(fp, uintptr(unsafe.Pointer(&here)))
	top := fp
	for range maxFrames {
		next := loadWord(fp)
		if next == 0 {
			// The outermost frame: its saved frame pointer (zero) and its
			// return address are the last words of the stack in use.
			return lo, top + 2*unsafe.Sizeof(uintptr(0)), true
		}
		if next <= fp {
			return 0, 0, false // frames lie at rising addresses
		}
		top, fp = next, next
	}
	return 0, 0, false
}

// loadWord reads the word at address a, a frame pointer of the calling
// goroutine's stack.
func loadWord(a uintptr) uintptr {
	return **(**uintptr)(unsafe.Pointer(&a))
}

// OnStack reports whether [addr, addr+n) overlaps [lo, hi).
func OnStack(addr, n uint64, lo, hi uintptr) bool {
	return n != 0 && addr < uint64(hi) && addr+n > uint64(lo)
}

// MoveStack makes the runtime copy the calling goroutine's stack elsewhere:
// it calls deeper than the stack has room for, doubling the depth until the
// stack moved, and reports whether it did (it gives up past 4 MiB of
// frames) and how deep it went. The stack keeps its new, larger size
// until a garbage collection shrinks it (the caller may run one when the
// depth was large); memory the old stack held is free for other
// goroutines' stacks.
func MoveStack() (moved bool, depth uintptr) {
	var here byte
	before := uintptr(unsafe.Pointer(&here))
	n := 8
	for ; uintptr(unsafe.Pointer(&here)) == before; n *= 2 {
		if n > 1<<13 {
			return false, uintptr(n) * 512
		}
		grow(n)
	}
	return true, uintptr(n/2) * 512
}

//go:noinline
func grow(n int) byte {
	var pad [512]byte
	pad[n%512] = byte(n)
	if n == 0 {
		return pad[0]
	}
	return grow(n-1) + pad[n%512]
}

// PoisonByte is what Poison fills stack memory with.
const PoisonByte = 0xa5

// Poison starts n goroutines that each grow their stacks to about size
// bytes, through every smaller size, writing PoisonByte over each frame,
// and stay parked until release is called. Stack memory the runtime freed
// (the old stack after MoveStack) is handed to new and growing stacks, so
// a stale address into it most likely reads PoisonByte afterwards; the
// runtime gives no guarantee, more so when other processors run
// goroutines meanwhile.
func Poison(n int, size uintptr) (release func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	frames := int(size/512) + 1
	for range n {
		wg.Add(1)
		go fill(frames, &wg, done)
	}
	wg.Wait()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}

//go:noinline
func fill(n int, wg *sync.WaitGroup, done chan struct{}) {
	var pad [512]byte
	for i := range pad {
		pad[i] = PoisonByte
	}
	if n > 0 {
		fill(n-1, wg, done)
		runtime.KeepAlive(&pad)
		return
	}
	wg.Done()
	<-done
	runtime.KeepAlive(&pad)
}
