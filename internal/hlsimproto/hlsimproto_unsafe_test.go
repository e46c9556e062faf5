package hlsimproto

import (
	"testing"
	"unsafe"
)

// TestRequests checks that the request numbers encode the structs' sizes
// and directions (_IOWR for Hello and DMABufRead, _IOW for Taken).
func TestRequests(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  uint32
		dir  uint32
		size uintptr
		nr   uint32
	}{
		{"Hello", HelloRequest, 3, unsafe.Sizeof(Hello{}), 1},
		{"Taken", TakenRequest, 1, unsafe.Sizeof(Taken{}), 2},
		{"DMABufRead", DMABufReadRequest, 3, unsafe.Sizeof(DMABufRead{}), 3},
	} {
		if got := tc.req >> 30; got != tc.dir {
			t.Errorf("%s: direction %d, want %d", tc.name, got, tc.dir)
		}
		if got := uintptr(tc.req >> 16 & 0x3fff); got != tc.size {
			t.Errorf("%s: size %d in the request, struct is %d", tc.name, got, tc.size)
		}
		if tc.req>>8&0xff != Type || tc.req&0xff != tc.nr {
			t.Errorf("%s: type/nr %#x", tc.name, tc.req&0xffff)
		}
	}
	if TSAliasBit != TSBit>>1 {
		t.Fatal("the alias is not the next bit down")
	}
}
