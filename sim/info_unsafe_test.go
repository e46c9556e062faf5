package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// infoReq is one INFO call: what goes into struct hl_info_args.
type infoReq struct {
	op     uint32
	size   uint32 // return_size
	nilPtr bool   // return_pointer 0 instead of the test buffer
	union  uint32 // the anonymous union (dcore_id, pll_index, eventfd, ...)
	pad    uint32
}

// callInfo runs r on f with return_pointer at buf and returns the argument
// struct as the call left it.
func callInfo(f *File, r infoReq, buf []byte) (hl.InfoArgs, error) {
	var a hl.InfoArgs
	a.Op, a.ReturnSize, a.Pad = r.op, r.size, r.pad
	a.SetDcoreID(r.union)
	if !r.nilPtr && len(buf) > 0 {
		a.ReturnPointer = hl.SlicePointer(buf)
	}
	err := f.Ioctl(hl.DRM_IOCTL_HL_INFO, unsafe.Pointer(&a))
	runtime.KeepAlive(buf)
	return a, err
}

// poisoned returns n bytes of 0xAA.
func poisoned(n int) []byte { return bytes.Repeat([]byte{0xAA}, n) }

// untouched reports whether b is all 0xAA.
func untouched(b []byte) bool { return len(bytes.Trim(b, "\xaa")) == 0 }

// readStruct fills v with the result of op on f.
func readStruct[T any](t *testing.T, f *File, r infoReq, v *T) {
	t.Helper()
	b := structBytes(v)
	if r.size == 0 {
		r.size = uint32(len(b))
	}
	if _, err := callInfo(f, r, b); err != nil {
		t.Fatalf("INFO op %d: %v", r.op, err)
	}
}

// openBoth opens device i of s on its compute and control nodes.
func openBoth(t *testing.T, s *System, i int) (compute, control *File) {
	t.Helper()
	d := s.Device(i)
	f, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.OpenControl()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(); c.Close() })
	return f, c
}

// Ops of the driver's first switch (served in any state) and second switch
// (operational only), written out from _hl_info_ioctl.
var (
	anyStateOps = []uint32{
		hl.HL_INFO_HW_IP_INFO, hl.HL_INFO_DEVICE_STATUS, hl.HL_INFO_RESET_COUNT,
		hl.HL_INFO_HW_EVENTS, hl.HL_INFO_HW_EVENTS_AGGREGATE, hl.HL_INFO_CS_COUNTERS,
		hl.HL_INFO_CLK_THROTTLE_REASON, hl.HL_INFO_SYNC_MANAGER, hl.HL_INFO_OPEN_STATS,
		hl.HL_INFO_LAST_ERR_OPEN_DEV_TIME, hl.HL_INFO_CS_TIMEOUT_EVENT, hl.HL_INFO_RAZWI_EVENT,
		hl.HL_INFO_UNDEFINED_OPCODE_EVENT, hl.HL_INFO_DEV_MEM_ALLOC_PAGE_SIZES, hl.HL_INFO_GET_EVENTS,
		hl.HL_INFO_PAGE_FAULT_EVENT, hl.HL_INFO_USER_MAPPINGS, hl.HL_INFO_UNREGISTER_EVENTFD,
		hl.HL_INFO_HW_ERR_EVENT, hl.HL_INFO_FW_ERR_EVENT, hl.HL_INFO_USER_ENGINE_ERR_EVENT,
		hl.HL_INFO_DRAM_USAGE,
	}
	operationalOps = []uint32{
		hl.HL_INFO_HW_IDLE, hl.HL_INFO_DEVICE_UTILIZATION, hl.HL_INFO_CLK_RATE,
		hl.HL_INFO_TIME_SYNC, hl.HL_INFO_PCI_COUNTERS, hl.HL_INFO_TOTAL_ENERGY,
		hl.HL_INFO_PLL_FREQUENCY, hl.HL_INFO_POWER, hl.HL_INFO_DRAM_REPLACED_ROWS,
		hl.HL_INFO_DRAM_PENDING_ROWS, hl.HL_INFO_SECURED_ATTESTATION, hl.HL_INFO_REGISTER_EVENTFD,
		hl.HL_INFO_ENGINE_STATUS, hl.HL_INFO_FW_GENERIC_REQ, hl.HL_INFO_DEV_SIGNED,
	}
	unknownOps = []uint32{5, 19, 20, 39, 41, 0xFFFFFFFF}
)

func TestInfoTableMatchesDriver(t *testing.T) {
	if got, want := len(infoOps), len(anyStateOps)+len(operationalOps); got != want {
		t.Errorf("infoOps has %d ops, the driver serves %d", got, want)
	}
	for _, op := range anyStateOps {
		if o, ok := infoOps[op]; !ok || !o.anyState {
			t.Errorf("op %d: registered %v, anyState %v; want an any-state op", op, ok, o.anyState)
		}
	}
	for _, op := range operationalOps {
		if o, ok := infoOps[op]; !ok || o.anyState {
			t.Errorf("op %d: registered %v, anyState %v; want an operational-only op", op, ok, o.anyState)
		}
	}
}

// TestInfoStateSplit runs every op, known or not, with valid arguments in
// every state: operational-only and unknown ops get EBUSY unless the device
// is operational (a device still being created counts as operational).
func TestInfoStateSplit(t *testing.T) {
	// What each op returns with a 4 KB buffer, union 0 and nothing recorded.
	normal := map[uint32]error{
		hl.HL_INFO_UNREGISTER_EVENTFD:  unix.EINVAL, // none registered
		hl.HL_INFO_REGISTER_EVENTFD:    unix.EBADF,  // fd -1
		hl.HL_INFO_SECURED_ATTESTATION: unix.EIO,
		hl.HL_INFO_DEV_SIGNED:          unix.EIO,
		hl.HL_INFO_FW_GENERIC_REQ:      unix.EIO,
	}
	for _, op := range unknownOps {
		normal[op] = unix.EINVAL
	}
	all := slices.Concat(anyStateOps, operationalOps, unknownOps)
	for _, st := range []State{Operational, InDeviceCreation, InReset, InResetAfterDeviceRelease, NeedsReset, Malfunction} {
		s := newTestSystem(t, Default(Gaudi2, 1))
		f, _ := openBoth(t, s, 0)
		s.Device(0).SetState(st)
		for _, op := range all {
			want := normal[op]
			if !st.operational() && !slices.Contains(anyStateOps, op) {
				want = unix.EBUSY
			}
			r := infoReq{op: op, size: 4096}
			if op == hl.HL_INFO_REGISTER_EVENTFD {
				r.union = 0xFFFFFFFF
			}
			_, err := callInfo(f, r, make([]byte, 4096))
			if !errors.Is(err, want) && !(want == nil && err == nil) {
				t.Errorf("state %v, op %d: %v, want %v", st, op, err, want)
			}
		}
		s.Device(0).SetState(Operational)
	}
}

// TestInfoErrno is the validation of each op, from the driver's helpers.
func TestInfoErrno(t *testing.T) {
	const big = 4096
	type tc struct {
		name    string
		asic    ASIC
		state   State
		control bool
		req     infoReq
		want    error
		check   func(t *testing.T, a hl.InfoArgs, buf []byte)
	}
	var cases []tc
	// Every op that starts with "if ((!size) || (!out)) return -EINVAL".
	sizePtrOps := []uint32{
		hl.HL_INFO_HW_IP_INFO, hl.HL_INFO_DEVICE_STATUS, hl.HL_INFO_RESET_COUNT,
		hl.HL_INFO_HW_EVENTS, hl.HL_INFO_HW_EVENTS_AGGREGATE, hl.HL_INFO_CS_COUNTERS,
		hl.HL_INFO_CLK_THROTTLE_REASON, hl.HL_INFO_SYNC_MANAGER, hl.HL_INFO_OPEN_STATS,
		hl.HL_INFO_LAST_ERR_OPEN_DEV_TIME, hl.HL_INFO_CS_TIMEOUT_EVENT, hl.HL_INFO_RAZWI_EVENT,
		hl.HL_INFO_UNDEFINED_OPCODE_EVENT, hl.HL_INFO_DEV_MEM_ALLOC_PAGE_SIZES,
		hl.HL_INFO_PAGE_FAULT_EVENT, hl.HL_INFO_DRAM_USAGE, hl.HL_INFO_HW_IDLE,
		hl.HL_INFO_DEVICE_UTILIZATION, hl.HL_INFO_CLK_RATE, hl.HL_INFO_TIME_SYNC,
		hl.HL_INFO_PCI_COUNTERS, hl.HL_INFO_TOTAL_ENERGY, hl.HL_INFO_PLL_FREQUENCY,
		hl.HL_INFO_POWER, hl.HL_INFO_DRAM_REPLACED_ROWS, hl.HL_INFO_DRAM_PENDING_ROWS,
		hl.HL_INFO_SECURED_ATTESTATION, hl.HL_INFO_DEV_SIGNED,
	}
	for _, op := range sizePtrOps {
		cases = append(cases,
			tc{name: "size0", req: infoReq{op: op, size: 0}, want: unix.EINVAL},
			tc{name: "nilptr", req: infoReq{op: op, size: big, nilPtr: true}, want: unix.EINVAL})
	}
	// The three *_ERR ops and USER_MAPPINGS check only the pointer.
	for _, op := range []uint32{hl.HL_INFO_HW_ERR_EVENT, hl.HL_INFO_FW_ERR_EVENT, hl.HL_INFO_USER_ENGINE_ERR_EVENT, hl.HL_INFO_USER_MAPPINGS} {
		cases = append(cases,
			tc{name: "nilptr", req: infoReq{op: op, size: big, nilPtr: true}, want: unix.EINVAL},
			tc{name: "size0-nothing-recorded", req: infoReq{op: op, size: 0}, want: nil})
	}
	// The pad word, before anything else on the compute node.
	for _, op := range slices.Concat(anyStateOps, operationalOps, unknownOps) {
		cases = append(cases, tc{name: "pad", req: infoReq{op: op, size: big, pad: 1}, want: unix.EINVAL})
		cases = append(cases, tc{name: "pad-in-reset", state: InReset, req: infoReq{op: op, size: big, pad: 1}, want: unix.EINVAL})
	}
	cases = append(cases,
		// The control node refuses the notifier ops before the pad check.
		tc{name: "control GET_EVENTS", control: true, req: infoReq{op: hl.HL_INFO_GET_EVENTS, size: 8}, want: unix.EOPNOTSUPP},
		tc{name: "control GET_EVENTS pad", control: true, req: infoReq{op: hl.HL_INFO_GET_EVENTS, size: 8, pad: 1}, want: unix.EOPNOTSUPP},
		tc{name: "control REGISTER pad", control: true, req: infoReq{op: hl.HL_INFO_REGISTER_EVENTFD, pad: 1}, want: unix.EOPNOTSUPP},
		tc{name: "control UNREGISTER in reset", control: true, state: InReset, req: infoReq{op: hl.HL_INFO_UNREGISTER_EVENTFD}, want: unix.EOPNOTSUPP},
		tc{name: "control HW_IP_INFO pad", control: true, req: infoReq{op: hl.HL_INFO_HW_IP_INFO, size: big, pad: 1}, want: unix.EINVAL},
		tc{name: "control SYNC_MANAGER", control: true, req: infoReq{op: hl.HL_INFO_SYNC_MANAGER, size: big}, want: nil},
		// GET_EVENTS needs 8 bytes and writes exactly 8.
		tc{name: "GET_EVENTS 7", req: infoReq{op: hl.HL_INFO_GET_EVENTS, size: 7}, want: unix.EINVAL},
		tc{name: "GET_EVENTS nil", req: infoReq{op: hl.HL_INFO_GET_EVENTS, size: 8, nilPtr: true}, want: unix.EINVAL},
		tc{name: "GET_EVENTS 64", req: infoReq{op: hl.HL_INFO_GET_EVENTS, size: 64}, want: nil,
			check: func(t *testing.T, a hl.InfoArgs, buf []byte) {
				if !bytes.Equal(buf[:8], make([]byte, 8)) || !untouched(buf[8:]) {
					t.Errorf("buffer % x..., want 8 zero bytes then untouched", buf[:16])
				}
			}},
		// SYNC_MANAGER: dcore_id < HL_MAX_DCORES.
		tc{name: "SYNC_MANAGER dcore 7", req: infoReq{op: hl.HL_INFO_SYNC_MANAGER, size: big, union: 7}, want: nil},
		tc{name: "SYNC_MANAGER dcore 8", req: infoReq{op: hl.HL_INFO_SYNC_MANAGER, size: big, union: 8}, want: unix.EINVAL},
		tc{name: "SYNC_MANAGER dcore 8 in reset", state: NeedsReset, req: infoReq{op: hl.HL_INFO_SYNC_MANAGER, size: big, union: 8}, want: unix.EINVAL},
		// PLL_FREQUENCY: pll_index inside the ASIC's enum.
		tc{name: "PLL Gaudi2 MSS", req: infoReq{op: hl.HL_INFO_PLL_FREQUENCY, size: big, union: uint32(hl.HL_GAUDI2_MSS_PLL)}, want: nil},
		tc{name: "PLL Gaudi2 max", req: infoReq{op: hl.HL_INFO_PLL_FREQUENCY, size: big, union: uint32(hl.HL_GAUDI2_PLL_MAX)}, want: unix.EINVAL},
		tc{name: "PLL Gaudi IF", asic: Gaudi, req: infoReq{op: hl.HL_INFO_PLL_FREQUENCY, size: big, union: uint32(hl.HL_GAUDI_IF_PLL)}, want: nil},
		tc{name: "PLL Gaudi max", asic: Gaudi, req: infoReq{op: hl.HL_INFO_PLL_FREQUENCY, size: big, union: uint32(hl.HL_GAUDI_PLL_MAX)}, want: unix.EINVAL},
		tc{name: "PLL in reset", state: InReset, req: infoReq{op: hl.HL_INFO_PLL_FREQUENCY, size: big, union: 99}, want: unix.EBUSY},
		// DEVICE_UTILIZATION: 6.12 does not read period_ms.
		tc{name: "UTILIZATION period 0", req: infoReq{op: hl.HL_INFO_DEVICE_UTILIZATION, size: big, union: 0}, want: nil},
		tc{name: "UTILIZATION period 5000", req: infoReq{op: hl.HL_INFO_DEVICE_UTILIZATION, size: big, union: 5000}, want: nil},
		// ENGINE_STATUS: 1 KB..1 MB and a pointer; a table larger than the
		// buffer is ENOMEM with nothing written.
		tc{name: "ENGINE_STATUS 1023", req: infoReq{op: hl.HL_INFO_ENGINE_STATUS, size: 1023, union: 77}, want: unix.EINVAL},
		tc{name: "ENGINE_STATUS 1M+1", req: infoReq{op: hl.HL_INFO_ENGINE_STATUS, size: hl.HL_ENGINES_DATA_MAX_SIZE + 1}, want: unix.EINVAL},
		tc{name: "ENGINE_STATUS nil", req: infoReq{op: hl.HL_INFO_ENGINE_STATUS, size: 2048, nilPtr: true}, want: unix.EINVAL},
		tc{name: "ENGINE_STATUS 1K Gaudi2", req: infoReq{op: hl.HL_INFO_ENGINE_STATUS, size: 1024, union: 77}, want: unix.ENOMEM,
			check: func(t *testing.T, a hl.InfoArgs, buf []byte) {
				if a.UserBufferActualSize() != 77 || !untouched(buf) {
					t.Errorf("ENOMEM wrote user_buffer_actual_size %d or the buffer", a.UserBufferActualSize())
				}
			}},
		tc{name: "ENGINE_STATUS 4K Gaudi2", req: infoReq{op: hl.HL_INFO_ENGINE_STATUS, size: big}, want: nil,
			check: func(t *testing.T, a hl.InfoArgs, buf []byte) {
				n := int(a.UserBufferActualSize())
				if n != 3064 || buf[n-1] != 0 || !untouched(buf[n:]) {
					t.Errorf("user_buffer_actual_size %d, want 3064 bytes ending in NUL", n)
				}
			}},
		tc{name: "ENGINE_STATUS 1K Gaudi", asic: Gaudi, req: infoReq{op: hl.HL_INFO_ENGINE_STATUS, size: 1024}, want: unix.ENOMEM},
		tc{name: "ENGINE_STATUS 2K Gaudi", asic: Gaudi, req: infoReq{op: hl.HL_INFO_ENGINE_STATUS, size: 2048}, want: nil,
			check: func(t *testing.T, a hl.InfoArgs, buf []byte) {
				if n := a.UserBufferActualSize(); n != 1306 {
					t.Errorf("user_buffer_actual_size %d, want 1306", n)
				}
			}},
		tc{name: "ENGINE_STATUS 1M", req: infoReq{op: hl.HL_INFO_ENGINE_STATUS, size: hl.HL_ENGINES_DATA_MAX_SIZE}, want: nil},
		// FW_GENERIC_REQ: sub-opcode, then size, then the pool allocation;
		// the pointer is not checked; the simulated firmware answers EIO.
		tc{name: "FW_GENERIC sub 1", req: infoReq{op: hl.HL_INFO_FW_GENERIC_REQ, size: big, union: 1}, want: unix.EINVAL},
		tc{name: "FW_GENERIC 1M+1", req: infoReq{op: hl.HL_INFO_FW_GENERIC_REQ, size: sz1M + 1}, want: unix.EINVAL},
		tc{name: "FW_GENERIC size 0", req: infoReq{op: hl.HL_INFO_FW_GENERIC_REQ, size: 0}, want: unix.ENOMEM},
		tc{name: "FW_GENERIC nil", req: infoReq{op: hl.HL_INFO_FW_GENERIC_REQ, size: big, nilPtr: true}, want: unix.EIO},
		tc{name: "FW_GENERIC 1M", req: infoReq{op: hl.HL_INFO_FW_GENERIC_REQ, size: sz1M}, want: unix.EIO},
		tc{name: "SECURED_ATTESTATION", req: infoReq{op: hl.HL_INFO_SECURED_ATTESTATION, size: big, union: 0x1234}, want: unix.EIO},
		tc{name: "DEV_SIGNED", req: infoReq{op: hl.HL_INFO_DEV_SIGNED, size: big, union: 0x1234}, want: unix.EIO},
		// Eventfd ops.
		tc{name: "UNREGISTER none", req: infoReq{op: hl.HL_INFO_UNREGISTER_EVENTFD}, want: unix.EINVAL},
		tc{name: "REGISTER fd -1", req: infoReq{op: hl.HL_INFO_REGISTER_EVENTFD, union: 0xFFFFFFFF}, want: unix.EBADF},
		tc{name: "REGISTER in reset", state: InReset, req: infoReq{op: hl.HL_INFO_REGISTER_EVENTFD, union: 0xFFFFFFFF}, want: unix.EBUSY},
		// Unknown ops.
		tc{name: "op 5", req: infoReq{op: 5, size: big}, want: unix.EINVAL},
		tc{name: "op 5 in reset", state: InReset, req: infoReq{op: 5, size: big}, want: unix.EBUSY},
		// Any-state ops in reset.
		tc{name: "HW_IP_INFO disabled", state: Malfunction, req: infoReq{op: hl.HL_INFO_HW_IP_INFO, size: big}, want: nil},
		tc{name: "DEVICE_STATUS in reset", state: InReset, req: infoReq{op: hl.HL_INFO_DEVICE_STATUS, size: big}, want: nil,
			check: func(t *testing.T, a hl.InfoArgs, buf []byte) {
				if got := binary.NativeEndian.Uint64(buf); got != uint64(InReset) || !untouched(buf[8:]) {
					t.Errorf("status %#x, want %d and 8 bytes written", got, InReset)
				}
			}},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newTestSystem(t, Default(c.asic, 1))
			f, ctl := openBoth(t, s, 0)
			if c.control {
				f = ctl
			}
			s.Device(0).SetState(c.state)
			buf := poisoned(int(max(c.req.size, big)))
			a, err := callInfo(f, c.req, buf)
			if !errors.Is(err, c.want) && !(c.want == nil && err == nil) {
				t.Fatalf("op %d %+v: %v, want %v", c.req.op, c.req, err, c.want)
			}
			if err != nil && c.check == nil && !untouched(buf) {
				t.Errorf("failed call wrote the buffer")
			}
			if c.check != nil {
				c.check(t, a, buf)
			}
		})
	}
}

// TestInfoShortCopy checks min(return_size, struct) copying: a short buffer
// gets exactly the first bytes and nothing after them, a long one exactly
// the struct.
func TestInfoShortCopy(t *testing.T) {
	s := newTestSystem(t, Default(Gaudi2, 1))
	f, _ := openBoth(t, s, 0)
	d := s.Device(0)
	d.RecordRazwi(0x1000, []uint16{3, 4}, hl.HL_RAZWI_WRITE)
	d.RecordPageFault(0x2000)
	d.RecordCSTimeout(9)
	d.RecordUndefinedOpcode(5, 0x3000, 64)
	ops := []struct {
		op     uint32
		size   int
		stable bool // the same bytes on every call
	}{
		{hl.HL_INFO_HW_IP_INFO, 304, true},
		{hl.HL_INFO_DEVICE_STATUS, 8, true},
		{hl.HL_INFO_RESET_COUNT, 8, true},
		{hl.HL_INFO_HW_EVENTS, gaudi2EventSize * 4, true},
		{hl.HL_INFO_HW_EVENTS_AGGREGATE, gaudi2EventSize * 4, true},
		{hl.HL_INFO_CS_COUNTERS, 96, true},
		{hl.HL_INFO_CLK_THROTTLE_REASON, 40, true},
		{hl.HL_INFO_SYNC_MANAGER, 16, true},
		{hl.HL_INFO_OPEN_STATS, 24, true},
		{hl.HL_INFO_LAST_ERR_OPEN_DEV_TIME, 8, true},
		{hl.HL_INFO_CS_TIMEOUT_EVENT, 16, true},
		{hl.HL_INFO_RAZWI_EVENT, 280, true},
		{hl.HL_INFO_UNDEFINED_OPCODE_EVENT, 288, true},
		{hl.HL_INFO_DEV_MEM_ALLOC_PAGE_SIZES, 8, true},
		{hl.HL_INFO_PAGE_FAULT_EVENT, 24, true},
		{hl.HL_INFO_DRAM_USAGE, 16, true},
		{hl.HL_INFO_HW_IDLE, 40, true},
		{hl.HL_INFO_DEVICE_UTILIZATION, 8, true},
		{hl.HL_INFO_CLK_RATE, 8, true},
		{hl.HL_INFO_TIME_SYNC, 24, false},
		{hl.HL_INFO_PCI_COUNTERS, 24, true},
		{hl.HL_INFO_TOTAL_ENERGY, 8, false},
		{hl.HL_INFO_PLL_FREQUENCY, 8, true},
		{hl.HL_INFO_POWER, 8, true},
		{hl.HL_INFO_DRAM_REPLACED_ROWS, 8, true},
		{hl.HL_INFO_DRAM_PENDING_ROWS, 4, true},
	}
	for _, o := range ops {
		full := poisoned(o.size + 64)
		if _, err := callInfo(f, infoReq{op: o.op, size: uint32(len(full))}, full); err != nil {
			t.Fatalf("op %d: %v", o.op, err)
		}
		if !untouched(full[o.size:]) {
			t.Errorf("op %d wrote past its %d-byte struct", o.op, o.size)
		}
		if untouched(full[:o.size]) {
			t.Errorf("op %d wrote nothing", o.op)
		}
		for _, n := range []int{1, 3, o.size - 1} {
			if n <= 0 {
				continue
			}
			short := poisoned(o.size + 64)
			if _, err := callInfo(f, infoReq{op: o.op, size: uint32(n)}, short); err != nil {
				t.Fatalf("op %d size %d: %v", o.op, n, err)
			}
			if !untouched(short[n:]) {
				t.Errorf("op %d size %d wrote past %d bytes", o.op, n, n)
			}
			if o.stable && !bytes.Equal(short[:n], full[:n]) {
				t.Errorf("op %d size %d: % x, want % x", o.op, n, short[:n], full[:n])
			}
		}
	}
}

// TestInfoEventsNothingRecorded: the event ops with nothing captured.
func TestInfoEventsNothingRecorded(t *testing.T) {
	s := newTestSystem(t, Default(Gaudi2, 1))
	f, ctl := openBoth(t, s, 0)
	for _, file := range []*File{f, ctl} {
		for _, op := range []uint32{hl.HL_INFO_RAZWI_EVENT, hl.HL_INFO_PAGE_FAULT_EVENT, hl.HL_INFO_HW_ERR_EVENT,
			hl.HL_INFO_FW_ERR_EVENT, hl.HL_INFO_USER_ENGINE_ERR_EVENT, hl.HL_INFO_USER_MAPPINGS} {
			buf := poisoned(512)
			a, err := callInfo(file, infoReq{op: op, size: 512, union: 0x55}, buf)
			if err != nil || !untouched(buf) {
				t.Errorf("op %d: %v, buffer written %v; want 0 and nothing copied", op, err, !untouched(buf))
			}
			if a.ArraySize() != 0x55 {
				t.Errorf("op %d changed the union to %#x", op, a.ArraySize())
			}
		}
		// CS_TIMEOUT_EVENT and UNDEFINED_OPCODE_EVENT copy their zeroed
		// struct all the same.
		for _, o := range []struct {
			op   uint32
			size int
		}{{hl.HL_INFO_CS_TIMEOUT_EVENT, 16}, {hl.HL_INFO_UNDEFINED_OPCODE_EVENT, 288}} {
			buf := poisoned(512)
			if _, err := callInfo(file, infoReq{op: o.op, size: 512}, buf); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf[:o.size], make([]byte, o.size)) || !untouched(buf[o.size:]) {
				t.Errorf("op %d: want %d zero bytes, then nothing", o.op, o.size)
			}
		}
	}
}

func getEvents(t *testing.T, f *File) uint64 {
	t.Helper()
	var ev uint64
	readStruct(t, f, infoReq{op: hl.HL_INFO_GET_EVENTS}, &ev)
	return ev
}

// TestInfoEventsRecorded: what the Record methods capture, which INFO
// returns, and the first-event, reset and reopen rules.
func TestInfoEventsRecorded(t *testing.T) {
	s := newTestSystem(t, Default(Gaudi2, 1))
	d := s.Device(0)
	ctl, err := d.OpenControl()
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()

	// Before the first compute open, CS timeouts and undefined opcodes
	// are not captured; the others are.
	d.RecordCSTimeout(1)
	d.RecordUndefinedOpcode(1, 1, 1)
	d.RecordHWError(7)
	var cst hl.InfoCSTimeoutEvent
	readStruct(t, ctl, infoReq{op: hl.HL_INFO_CS_TIMEOUT_EVENT}, &cst)
	var undef hl.InfoUndefinedOpcodeEvent
	readStruct(t, ctl, infoReq{op: hl.HL_INFO_UNDEFINED_OPCODE_EVENT}, &undef)
	var hw hl.InfoHWErrEvent
	readStruct(t, ctl, infoReq{op: hl.HL_INFO_HW_ERR_EVENT}, &hw)
	if cst != (hl.InfoCSTimeoutEvent{}) || undef != (hl.InfoUndefinedOpcodeEvent{}) || hw.EventID != 7 {
		t.Errorf("before open: cs timeout %+v, undefined opcode %+v, hw err %+v", cst, undef, hw)
	}

	// A compute open clears everything and arms the captures.
	f, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { f.Close() }()
	buf := poisoned(64)
	if _, err := callInfo(ctl, infoReq{op: hl.HL_INFO_HW_ERR_EVENT, size: 64}, buf); err != nil || !untouched(buf) {
		t.Errorf("HW_ERR after open: %v, want nothing recorded", err)
	}

	before := monotonicNow()
	d.RecordRazwi(0xdead000, []uint16{10, 11, 12}, hl.HL_RAZWI_READ|hl.HL_RAZWI_HBW)
	d.RecordPageFault(0xbeef000, hl.UserMapping{DevVA: 0x1000, Size: 0x2000}, hl.UserMapping{DevVA: 0x9000, Size: 0x1000})
	d.RecordHWError(42)
	d.RecordFWError(hl.HL_INFO_FW_REPORTED_ERR, 43)
	d.RecordEngineError(uint16(hl.GAUDI2_DCORE1_ENGINE_ID_TPC_2), 3)
	d.RecordUndefinedOpcode(uint32(hl.GAUDI2_DCORE0_ENGINE_ID_EDMA_1), 0xcafe000, 128)
	d.RecordCSTimeout(17)
	after := monotonicNow()
	// Second events of each kind are not kept.
	d.RecordRazwi(1, nil, 0)
	d.RecordPageFault(1)
	d.RecordHWError(44)
	d.RecordFWError(hl.HL_INFO_FW_HEARTBEAT_ERR, 0)
	d.RecordEngineError(1, 1)
	d.RecordUndefinedOpcode(1, 1, 1)
	d.RecordCSTimeout(18)

	wantBits := uint64(hl.HL_NOTIFIER_EVENT_RAZWI | hl.HL_NOTIFIER_EVENT_PAGE_FAULT | hl.HL_NOTIFIER_EVENT_CRITICL_HW_ERR |
		hl.HL_NOTIFIER_EVENT_CRITICL_FW_ERR | hl.HL_NOTIFIER_EVENT_USER_ENGINE_ERR |
		hl.HL_NOTIFIER_EVENT_UNDEFINED_OPCODE | hl.HL_NOTIFIER_EVENT_CS_TIMEOUT)
	if got := getEvents(t, f); got != wantBits {
		t.Errorf("GET_EVENTS %#x, want %#x", got, wantBits)
	}
	// The second CS timeout raised nothing, the other seconds did.
	d.RecordCSTimeout(19)
	if got := getEvents(t, f); got != 0 {
		t.Errorf("GET_EVENTS after a second CS timeout %#x, want 0", got)
	}

	stamp := func(ts int64) bool { return ts >= before && ts <= after }
	var razwi hl.InfoRazwiEvent
	readStruct(t, f, infoReq{op: hl.HL_INFO_RAZWI_EVENT}, &razwi)
	wantRazwi := hl.InfoRazwiEvent{Timestamp: razwi.Timestamp, Addr: 0xdead000, NumOfPossibleEngines: 3, Flags: hl.HL_RAZWI_READ | hl.HL_RAZWI_HBW}
	wantRazwi.EngineID[0], wantRazwi.EngineID[1], wantRazwi.EngineID[2] = 10, 11, 12
	if diff := cmp.Diff(wantRazwi, razwi); diff != "" || !stamp(razwi.Timestamp) {
		t.Errorf("RAZWI_EVENT (-want +got):\n%s timestamp %d", diff, razwi.Timestamp)
	}
	var pf hl.PageFaultInfo
	readStruct(t, f, infoReq{op: hl.HL_INFO_PAGE_FAULT_EVENT}, &pf)
	if diff := cmp.Diff(hl.PageFaultInfo{Timestamp: pf.Timestamp, Addr: 0xbeef000}, pf); diff != "" || !stamp(pf.Timestamp) {
		t.Errorf("PAGE_FAULT_EVENT (-want +got):\n%s", diff)
	}
	readStruct(t, f, infoReq{op: hl.HL_INFO_HW_ERR_EVENT}, &hw)
	if diff := cmp.Diff(hl.InfoHWErrEvent{Timestamp: hw.Timestamp, EventID: 42}, hw); diff != "" || !stamp(hw.Timestamp) {
		t.Errorf("HW_ERR_EVENT (-want +got):\n%s", diff)
	}
	var fw hl.InfoFWErrEvent
	readStruct(t, f, infoReq{op: hl.HL_INFO_FW_ERR_EVENT}, &fw)
	if diff := cmp.Diff(hl.InfoFWErrEvent{Timestamp: fw.Timestamp, ErrType: uint16(hl.HL_INFO_FW_REPORTED_ERR), EventID: 43}, fw); diff != "" || !stamp(fw.Timestamp) {
		t.Errorf("FW_ERR_EVENT (-want +got):\n%s", diff)
	}
	var eng hl.InfoEngineErrEvent
	readStruct(t, f, infoReq{op: hl.HL_INFO_USER_ENGINE_ERR_EVENT}, &eng)
	if diff := cmp.Diff(hl.InfoEngineErrEvent{Timestamp: eng.Timestamp, EngineID: uint16(hl.GAUDI2_DCORE1_ENGINE_ID_TPC_2), ErrorCount: 3}, eng); diff != "" || !stamp(eng.Timestamp) {
		t.Errorf("USER_ENGINE_ERR_EVENT (-want +got):\n%s", diff)
	}
	readStruct(t, f, infoReq{op: hl.HL_INFO_UNDEFINED_OPCODE_EVENT}, &undef)
	wantUndef := hl.InfoUndefinedOpcodeEvent{Timestamp: undef.Timestamp, CQAddr: 0xcafe000, CQSize: 128, EngineID: uint32(hl.GAUDI2_DCORE0_ENGINE_ID_EDMA_1), StreamID: 4}
	if diff := cmp.Diff(wantUndef, undef); diff != "" || !stamp(undef.Timestamp) {
		t.Errorf("UNDEFINED_OPCODE_EVENT (-want +got):\n%s", diff)
	}
	readStruct(t, f, infoReq{op: hl.HL_INFO_CS_TIMEOUT_EVENT}, &cst)
	if diff := cmp.Diff(hl.InfoCSTimeoutEvent{Timestamp: cst.Timestamp, Seq: 17}, cst); diff != "" || !stamp(cst.Timestamp) {
		t.Errorf("CS_TIMEOUT_EVENT (-want +got):\n%s", diff)
	}

	// The *_ERR ops need the whole 16 bytes and copy exactly 16.
	for _, op := range []uint32{hl.HL_INFO_HW_ERR_EVENT, hl.HL_INFO_FW_ERR_EVENT, hl.HL_INFO_USER_ENGINE_ERR_EVENT} {
		buf := poisoned(64)
		if _, err := callInfo(f, infoReq{op: op, size: 15}, buf); !errors.Is(err, unix.ENOMEM) || !untouched(buf) {
			t.Errorf("op %d size 15: %v, want ENOMEM and nothing copied", op, err)
		}
		if _, err := callInfo(f, infoReq{op: op, size: 0}, buf); !errors.Is(err, unix.ENOMEM) {
			t.Errorf("op %d size 0: %v, want ENOMEM", op, err)
		}
		if _, err := callInfo(f, infoReq{op: op, size: 64}, buf); err != nil || untouched(buf[:16]) || !untouched(buf[16:]) {
			t.Errorf("op %d size 64: %v, want exactly 16 bytes", op, err)
		}
	}

	// USER_MAPPINGS: array_size is set even when the buffer is too small.
	ubuf := poisoned(64)
	a, err := callInfo(f, infoReq{op: hl.HL_INFO_USER_MAPPINGS, size: 31}, ubuf)
	if !errors.Is(err, unix.ENOMEM) || a.ArraySize() != 2 || !untouched(ubuf) {
		t.Errorf("USER_MAPPINGS size 31: %v, array_size %d; want ENOMEM, 2, nothing copied", err, a.ArraySize())
	}
	a, err = callInfo(f, infoReq{op: hl.HL_INFO_USER_MAPPINGS, size: 64}, ubuf)
	var maps [2]hl.UserMapping
	copy(structBytes(&maps), ubuf)
	want := [2]hl.UserMapping{{DevVA: 0x1000, Size: 0x2000}, {DevVA: 0x9000, Size: 0x1000}}
	if err != nil || a.ArraySize() != 2 || !untouched(ubuf[32:]) {
		t.Errorf("USER_MAPPINGS size 64: %v, array_size %d", err, a.ArraySize())
	}
	if diff := cmp.Diff(want, maps); diff != "" {
		t.Errorf("USER_MAPPINGS (-want +got):\n%s", diff)
	}

	// HW events: RecordHWError(42) and (44) and the reported FW error (43)
	// count; a hard reset clears HW_EVENTS, not the aggregate, and keeps
	// the captured errors.
	counts := func(op uint32) []uint32 {
		c := make([]uint32, gaudi2EventSize)
		if _, err := callInfo(f, infoReq{op: op, size: gaudi2EventSize * 4}, sliceBytes(c)); err != nil {
			t.Fatal(err)
		}
		return c
	}
	wantCounts := make([]uint32, gaudi2EventSize)
	wantCounts[7], wantCounts[42], wantCounts[43], wantCounts[44] = 1, 1, 1, 1 // an open does not clear counters
	if diff := cmp.Diff(wantCounts, counts(hl.HL_INFO_HW_EVENTS)); diff != "" {
		t.Errorf("HW_EVENTS (-want +got):\n%s", diff)
	}
	d.Reset()
	if diff := cmp.Diff(make([]uint32, gaudi2EventSize), counts(hl.HL_INFO_HW_EVENTS)); diff != "" {
		t.Errorf("HW_EVENTS after reset (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantCounts, counts(hl.HL_INFO_HW_EVENTS_AGGREGATE)); diff != "" {
		t.Errorf("HW_EVENTS_AGGREGATE after reset (-want +got):\n%s", diff)
	}
	var hw2 hl.InfoHWErrEvent
	readStruct(t, f, infoReq{op: hl.HL_INFO_HW_ERR_EVENT}, &hw2)
	if hw2 != hw {
		t.Errorf("HW_ERR_EVENT after reset %+v, want %+v kept", hw2, hw)
	}

	// Reopening forgets every capture.
	f.Close()
	if f, err = d.Open(); err != nil {
		t.Fatal(err)
	}
	for _, op := range []uint32{hl.HL_INFO_RAZWI_EVENT, hl.HL_INFO_PAGE_FAULT_EVENT, hl.HL_INFO_HW_ERR_EVENT,
		hl.HL_INFO_FW_ERR_EVENT, hl.HL_INFO_USER_ENGINE_ERR_EVENT, hl.HL_INFO_USER_MAPPINGS} {
		buf := poisoned(512)
		if _, err := callInfo(f, infoReq{op: op, size: 512}, buf); err != nil || !untouched(buf) {
			t.Errorf("op %d after reopen: %v, want nothing recorded", op, err)
		}
	}
	readStruct(t, f, infoReq{op: hl.HL_INFO_CS_TIMEOUT_EVENT}, &cst)
	if cst != (hl.InfoCSTimeoutEvent{}) {
		t.Errorf("CS_TIMEOUT_EVENT after reopen %+v, want zero", cst)
	}
}

func TestRecordEdgeCases(t *testing.T) {
	s := newTestSystem(t, Default(Gaudi2, 1))
	d := s.Device(0)
	ctl, err := d.OpenControl()
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	// Too many possible initiators: not captured (the bit is still raised).
	d.RecordRazwi(0x10, make([]uint16, hl.HL_RAZWI_MAX_NUM_OF_ENGINES_PER_RTR+1), 0)
	buf := poisoned(512)
	if _, err := callInfo(ctl, infoReq{op: hl.HL_INFO_RAZWI_EVENT, size: 512}, buf); err != nil || !untouched(buf) {
		t.Errorf("RAZWI with 129 engines: %v, want nothing captured", err)
	}
	d.RecordRazwi(0x20, make([]uint16, hl.HL_RAZWI_MAX_NUM_OF_ENGINES_PER_RTR), 0)
	var r hl.InfoRazwiEvent
	readStruct(t, ctl, infoReq{op: hl.HL_INFO_RAZWI_EVENT}, &r)
	if r.Addr != 0x20 || r.NumOfPossibleEngines != 128 {
		t.Errorf("RAZWI with 128 engines: %+v", r)
	}
	// A page fault without a compute context captures no mappings.
	d.RecordPageFault(0x30, hl.UserMapping{DevVA: 1, Size: 2})
	a, err := callInfo(ctl, infoReq{op: hl.HL_INFO_USER_MAPPINGS, size: 0, union: 9}, poisoned(64))
	if err != nil || a.ArraySize() != 0 {
		t.Errorf("USER_MAPPINGS without a context: %v, array_size %d; want 0, 0", err, a.ArraySize())
	}
	// A heartbeat error has no event id and counts no event.
	d.RecordFWError(hl.HL_INFO_FW_HEARTBEAT_ERR, 12)
	var fw hl.InfoFWErrEvent
	readStruct(t, ctl, infoReq{op: hl.HL_INFO_FW_ERR_EVENT}, &fw)
	if fw.ErrType != uint16(hl.HL_INFO_FW_HEARTBEAT_ERR) || fw.EventID != 0 {
		t.Errorf("heartbeat FW_ERR_EVENT %+v", fw)
	}
	c := make([]uint32, gaudi2EventSize)
	if _, err := callInfo(ctl, infoReq{op: hl.HL_INFO_HW_EVENTS, size: uint32(len(c) * 4)}, sliceBytes(c)); err != nil || slices.Max(c) != 0 {
		t.Errorf("HW_EVENTS after a heartbeat error: %v, max %d", err, slices.Max(c))
	}
	// An event id past the ASIC's events is captured, not counted.
	d.RecordHWError(0xFFFF)
	var hw hl.InfoHWErrEvent
	readStruct(t, ctl, infoReq{op: hl.HL_INFO_HW_ERR_EVENT}, &hw)
	if hw.EventID != 0xFFFF {
		t.Errorf("HW_ERR_EVENT %+v", hw)
	}
}

func TestGetEventsReadAndClear(t *testing.T) {
	s := newTestSystem(t, Default(Gaudi2, 1))
	f, _ := openBoth(t, s, 0)
	d := s.Device(0)
	d.Notify(hl.HL_NOTIFIER_EVENT_TPC_ASSERT)
	d.Notify(hl.HL_NOTIFIER_EVENT_GENERAL_HW_ERR)
	if got, want := getEvents(t, f), uint64(hl.HL_NOTIFIER_EVENT_TPC_ASSERT|hl.HL_NOTIFIER_EVENT_GENERAL_HW_ERR); got != want {
		t.Errorf("GET_EVENTS %#x, want %#x", got, want)
	}
	if got := getEvents(t, f); got != 0 {
		t.Errorf("second GET_EVENTS %#x, want 0", got)
	}
	d.Reset()
	if got := getEvents(t, f); got != hl.HL_NOTIFIER_EVENT_DEVICE_RESET {
		t.Errorf("GET_EVENTS after Reset %#x, want DEVICE_RESET", got)
	}
}

// waitEventfd reads the eventfd's counter, waiting up to timeoutMs.
func waitEventfd(t *testing.T, fd int, timeoutMs int) (uint64, bool) {
	t.Helper()
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(pfd, timeoutMs)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return 0, false
		}
		break
	}
	var b [8]byte
	if _, err := unix.Read(fd, b[:]); err != nil {
		t.Fatal(err)
	}
	return binary.NativeEndian.Uint64(b[:]), true
}

func TestEventfd(t *testing.T) {
	s := newTestSystem(t, Default(Gaudi2, 1))
	f, ctl := openBoth(t, s, 0)
	d := s.Device(0)
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	reg := func(file *File, fd int) error {
		_, err := callInfo(file, infoReq{op: hl.HL_INFO_REGISTER_EVENTFD, union: uint32(fd)}, nil)
		return err
	}
	unreg := func(file *File) error {
		_, err := callInfo(file, infoReq{op: hl.HL_INFO_UNREGISTER_EVENTFD}, nil)
		return err
	}
	if err := unreg(f); !errors.Is(err, unix.EINVAL) {
		t.Errorf("unregister without registration: %v, want EINVAL", err)
	}
	if err := reg(ctl, efd); !errors.Is(err, unix.EOPNOTSUPP) {
		t.Errorf("register on the control node: %v, want EOPNOTSUPP", err)
	}
	// A closed fd and a non-eventfd.
	closed, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(closed)
	if err := reg(f, closed); !errors.Is(err, unix.EBADF) {
		t.Errorf("register a closed fd: %v, want EBADF", err)
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	if err := reg(f, p[0]); !errors.Is(err, unix.EINVAL) {
		t.Errorf("register a pipe: %v, want EINVAL", err)
	}
	if err := reg(f, efd); err != nil {
		t.Fatalf("register: %v", err)
	}
	if err := reg(f, efd); !errors.Is(err, unix.EINVAL) {
		t.Errorf("second registration: %v, want EINVAL", err)
	}
	d.Notify(hl.HL_NOTIFIER_EVENT_RAZWI)
	if v, ok := waitEventfd(t, efd, 5000); !ok || v != 1 {
		t.Errorf("eventfd after Notify: %d %v, want 1", v, ok)
	}
	d.Reset()
	if v, ok := waitEventfd(t, efd, 5000); !ok || v != 1 {
		t.Errorf("eventfd after Reset: %d %v, want 1", v, ok)
	}
	d.RecordEngineError(1, 1)
	if _, ok := waitEventfd(t, efd, 5000); !ok {
		t.Errorf("eventfd after RecordEngineError: no signal")
	}
	if got, want := getEvents(t, f), uint64(hl.HL_NOTIFIER_EVENT_RAZWI|hl.HL_NOTIFIER_EVENT_DEVICE_RESET|hl.HL_NOTIFIER_EVENT_USER_ENGINE_ERR); got != want {
		t.Errorf("GET_EVENTS %#x, want %#x", got, want)
	}
	// Unregistering stops the signals.
	if err := unreg(f); err != nil {
		t.Fatalf("unregister: %v", err)
	}
	if err := unreg(f); !errors.Is(err, unix.EINVAL) {
		t.Errorf("second unregister: %v, want EINVAL", err)
	}
	d.Notify(hl.HL_NOTIFIER_EVENT_RAZWI)
	if v, ok := waitEventfd(t, efd, 50); ok {
		t.Errorf("eventfd signalled (%d) after unregister", v)
	}
	// Registering again works; unregistering is served in any state.
	if err := reg(f, efd); err != nil {
		t.Fatalf("register again: %v", err)
	}
	d.SetState(InReset)
	if err := reg(f, efd); !errors.Is(err, unix.EBUSY) {
		t.Errorf("register in reset: %v, want EBUSY", err)
	}
	if err := unreg(f); err != nil {
		t.Errorf("unregister in reset: %v", err)
	}
	d.SetState(Operational)
}

func TestHWIPInfoValues(t *testing.T) {
	const mb = 1 << 20
	str := func(s string, n int) []uint8 { b := make([]uint8, n); copy(b, s); return b }
	g2 := hl.InfoHWIPInfo{
		SRAMBaseAddress:               0x1000FFFFFD000000,
		DRAMBaseAddress:               0x1001001800000000,
		DRAMSize:                      127 * 768 * mb,
		SRAMSize:                      48 * mb,
		NumOfEvents:                   1329,
		DeviceID:                      0x1020,
		ModuleID:                      2,
		DecoderEnabledMask:            0x3FF,
		FirstAvailableInterruptID:     48,
		ServerType:                    0,
		CpldVersion:                   0x10,
		TPCEnabledMask:                0xFF,
		DRAMEnabled:                   1,
		SecurityEnabled:               1,
		MMEMasterSlaveMode:            1,
		TPCEnabledMaskExt:             0x1FFFFFF,
		DRAMPageSize:                  768 * mb,
		EDMAEnabledMask:               0xFF,
		NumberOfUserInterrupts:        64,
		DeviceMemAllocDefaultPageSize: 768 * mb,
		RevisionID:                    1,
		TPCInterruptID:                46,
		RotatorEnabledMask:            3,
		EngineCoreInterruptRegAddr:    0x1000007FFCE88300,
		ReservedDRAMSize:              768 * mb,
	}
	copy(g2.CPUCPVersion[:], str("1.18.0-fw-52.0.0-sec-9", 128))
	copy(g2.CardName[:], str("HL225", 16))
	// Five functional HBMs: 640 MB pages, 80 GB.
	g2five := g2
	g2five.DRAMBaseAddress = 0x1001001400000000
	g2five.DRAMSize = 127 * 640 * mb
	g2five.DRAMPageSize = 640 * mb
	g2five.DeviceMemAllocDefaultPageSize = 640 * mb
	g2five.ReservedDRAMSize = 640 * mb
	g1 := hl.InfoHWIPInfo{
		SRAMBaseAddress:               0x7FF0000080,
		DRAMBaseAddress:               0x20000000,
		DRAMSize:                      32<<30 - 512*mb,
		SRAMSize:                      20*mb - 0x80,
		NumOfEvents:                   663,
		DeviceID:                      0x1000,
		ModuleID:                      2,
		FirstAvailableInterruptID:     0xFFFF,
		CpldVersion:                   0x10,
		TPCEnabledMask:                0xFF,
		DRAMEnabled:                   1,
		TPCEnabledMaskExt:             0xFF,
		DRAMPageSize:                  2 * mb,
		DeviceMemAllocDefaultPageSize: 2 * mb,
		TPCInterruptID:                0xFFFF,
		ReservedDRAMSize:              512 * mb,
	}
	copy(g1.CPUCPVersion[:], str("1.18.0-fw-52.0.0-sec-7", 128))
	copy(g1.CardName[:], str("HL205", 16))
	for _, c := range []struct {
		name string
		dc   DeviceConfig
		want hl.InfoHWIPInfo
	}{
		{"gaudi2", DeviceConfig{ASIC: Gaudi2}, g2},
		{"gaudi2-5hbm", DeviceConfig{ASIC: Gaudi2, DRAMSize: 80 << 30}, g2five},
		{"gaudi", DeviceConfig{ASIC: Gaudi}, g1},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Default(c.dc.ASIC, 3)
			cfg.Devices[2].DRAMSize = c.dc.DRAMSize
			s := newTestSystem(t, cfg)
			_, ctl := openBoth(t, s, 2)
			var got hl.InfoHWIPInfo
			readStruct(t, ctl, infoReq{op: hl.HL_INFO_HW_IP_INFO}, &got)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("HW_IP_INFO (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSyncManagerAndPLL(t *testing.T) {
	type sm = hl.InfoSyncManager
	for _, c := range []struct {
		asic ASIC
		sm   [hlMaxDcores]sm
		clk  hl.InfoClkRate
		plls int
	}{
		{Gaudi2, [hlMaxDcores]sm{{FirstAvailableSyncObject: 413, FirstAvailableMonitor: 289, FirstAvailableCQ: 2}}, hl.InfoClkRate{CurClkRateMhz: 1650, MaxClkRateMhz: 1650}, 12},
		{Gaudi, [hlMaxDcores]sm{
			{FirstAvailableSyncObject: 144, FirstAvailableMonitor: 72, FirstAvailableCQ: 0xFFFF},
			{FirstAvailableCQ: 0xFFFF}, {FirstAvailableCQ: 0xFFFF}, {FirstAvailableCQ: 0xFFFF},
			{FirstAvailableCQ: 0xFFFF}, {FirstAvailableCQ: 0xFFFF}, {FirstAvailableCQ: 0xFFFF}, {FirstAvailableCQ: 0xFFFF},
		}, hl.InfoClkRate{CurClkRateMhz: 2200, MaxClkRateMhz: 2200}, 10},
	} {
		s := newTestSystem(t, Default(c.asic, 1))
		f, _ := openBoth(t, s, 0)
		var got [hlMaxDcores]sm
		for dc := range got {
			readStruct(t, f, infoReq{op: hl.HL_INFO_SYNC_MANAGER, union: uint32(dc)}, &got[dc])
		}
		if diff := cmp.Diff(c.sm, got); diff != "" {
			t.Errorf("%v SYNC_MANAGER (-want +got):\n%s", c.asic, diff)
		}
		var clk hl.InfoClkRate
		readStruct(t, f, infoReq{op: hl.HL_INFO_CLK_RATE}, &clk)
		if clk != c.clk {
			t.Errorf("%v CLK_RATE %+v, want %+v", c.asic, clk, c.clk)
		}
		for i := 0; i < c.plls; i++ {
			var pll hl.PLLFrequencyInfo
			readStruct(t, f, infoReq{op: hl.HL_INFO_PLL_FREQUENCY, union: uint32(i)}, &pll)
			if pll.Output[0] == 0 {
				t.Errorf("%v PLL %d: %v", c.asic, i, pll.Output)
			}
		}
		var u hl.InfoDeviceUtilization
		readStruct(t, f, infoReq{op: hl.HL_INFO_DEVICE_UTILIZATION, union: 100}, &u)
		var pw hl.PowerInfo
		readStruct(t, f, infoReq{op: hl.HL_INFO_POWER}, &pw)
		p := &s.Device(0).prof
		if want := uint32((pw.Power - p.dcPowerMW) * 100 / (p.maxPowerMW - p.dcPowerMW)); u.Utilization != want || u.Utilization > 100 {
			t.Errorf("%v utilization %d at %d mW, want %d", c.asic, u.Utilization, pw.Power, want)
		}
	}
}

func TestTimeSyncAndEnergy(t *testing.T) {
	s := newTestSystem(t, Default(Gaudi2, 1))
	f, _ := openBoth(t, s, 0)
	lo := uint64(clockNs(unix.CLOCK_MONOTONIC_RAW))
	var a, b hl.InfoTimeSync
	readStruct(t, f, infoReq{op: hl.HL_INFO_TIME_SYNC}, &a)
	readStruct(t, f, infoReq{op: hl.HL_INFO_TIME_SYNC}, &b)
	hi := uint64(clockNs(unix.CLOCK_MONOTONIC_RAW))
	if a.HostTime < lo || b.HostTime > hi || b.HostTime < a.HostTime {
		t.Errorf("host_time %d, %d outside [%d, %d]", a.HostTime, b.HostTime, lo, hi)
	}
	if b.DeviceTime < a.DeviceTime || b.TscTime < a.TscTime || a.TscTime == 0 {
		t.Errorf("device or tsc time went back: %+v then %+v", a, b)
	}
	var e hl.InfoEnergy
	readStruct(t, f, infoReq{op: hl.HL_INFO_TOTAL_ENERGY}, &e)
}

func TestClkThrottleAndCSCounters(t *testing.T) {
	s := newTestSystem(t, Default(Gaudi2, 1))
	f, ctl := openBoth(t, s, 0)
	d := s.Device(0)
	var r hl.InfoClkThrottle
	readStruct(t, f, infoReq{op: hl.HL_INFO_CLK_THROTTLE_REASON}, &r)
	if r != (hl.InfoClkThrottle{}) {
		t.Errorf("CLK_THROTTLE_REASON of a fresh device %+v", r)
	}
	d.setThrottle(int(hl.HL_CLK_THROTTLE_TYPE_POWER), true)
	d.setThrottle(int(hl.HL_CLK_THROTTLE_TYPE_THERMAL), true)
	d.setThrottle(int(hl.HL_CLK_THROTTLE_TYPE_POWER), false)
	readStruct(t, f, infoReq{op: hl.HL_INFO_CLK_THROTTLE_REASON}, &r)
	if r.ClkThrottlingReason != hl.HL_CLK_THROTTLE_THERMAL || r.ClkThrottlingTimestampUs[0] == 0 || r.ClkThrottlingTimestampUs[1] == 0 {
		t.Errorf("CLK_THROTTLE_REASON %+v", r)
	}
	d.mu.Lock()
	d.csDrops = csCounters{1, 2, 3, 4, 5, 6}
	d.mu.Unlock()
	f.mu.Lock()
	f.csDrops = csCounters{10, 20, 30, 40, 50, 60}
	f.mu.Unlock()
	want := hl.InfoCSCounters{
		TotalOutOfMemDropCnt: 1, CtxOutOfMemDropCnt: 10, TotalParsingDropCnt: 2, CtxParsingDropCnt: 20,
		TotalQueueFullDropCnt: 3, CtxQueueFullDropCnt: 30, TotalDeviceInResetDropCnt: 4, CtxDeviceInResetDropCnt: 40,
		TotalMaxCSInFlightDropCnt: 5, CtxMaxCSInFlightDropCnt: 50, TotalValidationDropCnt: 6, CtxValidationDropCnt: 60,
	}
	var got hl.InfoCSCounters
	readStruct(t, f, infoReq{op: hl.HL_INFO_CS_COUNTERS}, &got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CS_COUNTERS (-want +got):\n%s", diff)
	}
	// The control node has no context.
	readStruct(t, ctl, infoReq{op: hl.HL_INFO_CS_COUNTERS}, &got)
	want.CtxOutOfMemDropCnt, want.CtxParsingDropCnt, want.CtxQueueFullDropCnt = 0, 0, 0
	want.CtxDeviceInResetDropCnt, want.CtxMaxCSInFlightDropCnt, want.CtxValidationDropCnt = 0, 0, 0
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CS_COUNTERS on control (-want +got):\n%s", diff)
	}
}

func TestOpenStatsAndLastOpen(t *testing.T) {
	s := newTestSystem(t, Default(Gaudi2, 1))
	d := s.Device(0)
	ctl, err := d.OpenControl()
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	var lt hl.InfoLastErrOpenDevTime
	readStruct(t, ctl, infoReq{op: hl.HL_INFO_LAST_ERR_OPEN_DEV_TIME}, &lt)
	if lt.Timestamp != 0 {
		t.Errorf("LAST_ERR_OPEN_DEV_TIME before any open: %d", lt.Timestamp)
	}
	before := monotonicNow()
	f, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	readStruct(t, ctl, infoReq{op: hl.HL_INFO_LAST_ERR_OPEN_DEV_TIME}, &lt)
	if lt.Timestamp < before || lt.Timestamp > monotonicNow() {
		t.Errorf("LAST_ERR_OPEN_DEV_TIME %d, opened after %d", lt.Timestamp, before)
	}
	var st hl.OpenStatsInfo
	readStruct(t, ctl, infoReq{op: hl.HL_INFO_OPEN_STATS}, &st)
	if st.OpenCounter != 1 || st.IsComputeCtxActive != 1 || st.ComputeCtxInRelease != 0 {
		t.Errorf("OPEN_STATS while open %+v", st)
	}
	f.Close()
	readStruct(t, ctl, infoReq{op: hl.HL_INFO_OPEN_STATS}, &st)
	if st.OpenCounter != 1 || st.IsComputeCtxActive != 0 {
		t.Errorf("OPEN_STATS after close %+v", st)
	}
}

func TestEngineStatusText(t *testing.T) {
	s := newTestSystem(t, Default(Gaudi2, 1))
	f, _ := openBoth(t, s, 0)
	buf := poisoned(8192)
	a, err := callInfo(f, infoReq{op: hl.HL_INFO_ENGINE_STATUS, size: 8192}, buf)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(buf[:a.UserBufferActualSize()]), "\x00")
	if parts[0] != "\nCORE  EDMA  is_idle  QM_GLBL_STS0  DMA_CORE_STS0  DMA_CORE_STS1\n----  ----  -------  ------------  -------------  -------------\n" ||
		parts[1] != "0     0     Y        0x3fff        0              0\n" || parts[len(parts)-1] != "" {
		t.Errorf("engine table starts %q", parts[:2])
	}
	// 7 headers (no NIC ports), 8 EDMA, 2 PDMA, 4 MME, 25 TPC, 10 decoders
	// in two tables, 2 rotators, and the empty tail after the last NUL.
	if n := len(parts); n != 7+8+2+4+25+10+2+1 {
		t.Errorf("%d strings in the engine table", n)
	}
	var idle hl.InfoHWIdle
	readStruct(t, f, infoReq{op: hl.HL_INFO_HW_IDLE}, &idle)
	if idle != (hl.InfoHWIdle{IsIdle: 1}) {
		t.Errorf("HW_IDLE %+v", idle)
	}
}
