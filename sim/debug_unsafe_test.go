package sim

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// debugCall issues DEBUG op with in and out as the input and output
// buffers (nil for none).
func debugCall(f *File, op, reg uint32, enable bool, in, out []byte) error {
	var a hl.DebugArgs
	a.Op, a.RegIdx = op, reg
	if enable {
		a.Enable = 1
	}
	if len(in) > 0 {
		escaped = append(escaped[:0], in)
		a.InputPtr, a.InputSize = hl.SlicePointer(in), uint32(len(in))
	}
	if len(out) > 0 {
		escaped = append(escaped, out)
		a.OutputPtr, a.OutputSize = hl.SlicePointer(out), uint32(len(out))
	}
	return f.Ioctl(hl.DRM_IOCTL_HL_DEBUG, unsafe.Pointer(&a))
}

func setMode(f *File, on bool) error { return debugCall(f, hl.HL_DEBUG_OP_SET_MODE, 0, on, nil, nil) }

func TestDebugStructSizes(t *testing.T) {
	want := map[uint32]uintptr{
		hl.HL_DEBUG_OP_ETR:  unsafe.Sizeof(hl.DebugParamsETR{}),
		hl.HL_DEBUG_OP_ETF:  unsafe.Sizeof(hl.DebugParamsETF{}),
		hl.HL_DEBUG_OP_STM:  unsafe.Sizeof(hl.DebugParamsSTM{}),
		hl.HL_DEBUG_OP_BMON: unsafe.Sizeof(hl.DebugParamsBMON{}),
		hl.HL_DEBUG_OP_SPMU: unsafe.Sizeof(hl.DebugParamsSPMU{}),
	}
	for op, size := range want {
		if uintptr(debugStructSize[op]) != size {
			t.Errorf("op %d: size %d, struct %d", op, debugStructSize[op], size)
		}
	}
	if off := unsafe.Offsetof(hl.DebugParamsSPMU{}.EventTypesNum); off != 80 {
		t.Errorf("event_types_num at %d, the simulator reads 80", off)
	}
}

func TestDebugMode(t *testing.T) {
	_, d, f := openSim(t, Gaudi2)
	steps := []struct {
		name string
		call func() error
		want error
		mode bool
	}{
		{"disable while off", func() error { return setMode(f, false) }, unix.EFAULT, false},
		{"etf before debug mode", func() error { return debugCall(f, hl.HL_DEBUG_OP_ETF, 0, false, nil, nil) }, unix.EFAULT, false},
		{"enable", func() error { return setMode(f, true) }, nil, true},
		{"enable twice", func() error { return setMode(f, true) }, unix.EFAULT, true},
		{"bad op", func() error { return debugCall(f, 8, 0, false, nil, nil) }, unix.EINVAL, true},
		{"disable", func() error { return setMode(f, false) }, nil, false},
	}
	for _, s := range steps {
		if err := s.call(); err != s.want {
			t.Fatalf("%s: %v, want %v", s.name, err, s.want)
		}
		if got := d.DebugMode(); got != s.mode {
			t.Fatalf("%s: mode %v, want %v", s.name, got, s.mode)
		}
	}
}

// TestDebugCloseWithoutRelease is hl-thunk's
// test_close_without_releasing_debug: the end of the context leaves debug
// mode, so the next owner can enter it.
func TestDebugCloseWithoutRelease(t *testing.T) {
	_, d, f := openCompute(t, Gaudi2)
	if err := setMode(f, true); err != nil {
		t.Fatal(err)
	}
	f.Close()
	f2, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	if d.DebugMode() {
		t.Fatal("debug mode survived the context")
	}
	if err := setMode(f2, true); err != nil {
		t.Fatalf("enable after reopen: %v", err)
	}
}

func TestDebugCoresightRules(t *testing.T) {
	for _, asic := range []ASIC{Gaudi2, Gaudi} {
		t.Run(asic.String(), func(t *testing.T) {
			_, d, f := openSim(t, asic)
			regs, host := gaudi2DebugRegs, d.prof.vm.host.start
			if asic == Gaudi {
				regs = gaudiDebugRegs
			}
			etr := func(addr, size uint64) []byte {
				b := make([]byte, 24)
				binary.LittleEndian.PutUint64(b, addr)
				binary.LittleEndian.PutUint64(b[8:], size)
				return b
			}
			spmu := func(n uint32) []byte {
				b := make([]byte, 96)
				binary.LittleEndian.PutUint32(b[80:], n)
				return b
			}
			if err := setMode(f, true); err != nil {
				t.Fatal(err)
			}
			cases := []struct {
				name   string
				op     uint32
				reg    uint32
				enable bool
				in     []byte
				out    int
				want   error
				gaudi  error // Gaudi's answer where it differs
				differ bool  // gaudi applies
				quiet  bool  // accepted without a change, so not recorded
			}{
				{"stm last", hl.HL_DEBUG_OP_STM, regs.stm - 1, false, nil, 0, nil, nil, false, false},
				{"stm past table", hl.HL_DEBUG_OP_STM, regs.stm, false, nil, 0, unix.EINVAL, nil, false, false},
				{"stm enable without input", hl.HL_DEBUG_OP_STM, 0, true, nil, 0, unix.EINVAL, nil, false, false},
				{"stm enable", hl.HL_DEBUG_OP_STM, 0, true, make([]byte, 24), 0, nil, nil, false, false},
				{"etf past table", hl.HL_DEBUG_OP_ETF, regs.etf, true, make([]byte, 24), 0, unix.EINVAL, nil, false, false},
				{"funnel", hl.HL_DEBUG_OP_FUNNEL, regs.funnel - 1, true, nil, 0, nil, nil, false, false},
				{"funnel past table", hl.HL_DEBUG_OP_FUNNEL, regs.funnel, true, nil, 0, unix.EINVAL, nil, false, false},
				{"bmon past table", hl.HL_DEBUG_OP_BMON, regs.bmon, false, nil, 0, unix.EINVAL, nil, false, false},
				{"bmon enable", hl.HL_DEBUG_OP_BMON, 1, true, make([]byte, 200), 0, nil, nil, false, false},
				{"spmu 7 events", hl.HL_DEBUG_OP_SPMU, 0, true, spmu(7), 0, unix.EINVAL, nil, false, false},
				{"spmu 6 events", hl.HL_DEBUG_OP_SPMU, regs.spmu - 1, true, spmu(6), 0, nil, nil, false, false},
				{"spmu read 6", hl.HL_DEBUG_OP_SPMU, 0, false, nil, 8 * 8, nil, nil, false, false},
				{"spmu read 7", hl.HL_DEBUG_OP_SPMU, 0, false, nil, 9 * 8, unix.EINVAL, nil, false, false},
				{"spmu past table", hl.HL_DEBUG_OP_SPMU, regs.spmu, false, nil, 0, unix.EINVAL, nil, false, false},
				{"etr size 0", hl.HL_DEBUG_OP_ETR, 0, true, etr(host, 0), 0, unix.EINVAL, nil, false, false},
				{"etr no input", hl.HL_DEBUG_OP_ETR, 0, true, nil, 0, unix.EINVAL, nil, false, false},
				{"etr outside", hl.HL_DEBUG_OP_ETR, 0, true, etr(1<<12, 4096), 0, unix.EINVAL, nil, false, false},
				{"etr wraps", hl.HL_DEBUG_OP_ETR, 0, true, etr(host, ^uint64(0)), 0, unix.EINVAL, nil, false, false},
				{"etr enable", hl.HL_DEBUG_OP_ETR, 0, true, etr(host, 1<<20), 0, nil, nil, false, false},
				{"etr enabled again", hl.HL_DEBUG_OP_ETR, 0, true, nil, 0, nil, nil, false, true},
				{"timestamp", hl.HL_DEBUG_OP_TIMESTAMP, 1 << 30, true, nil, 0, nil, nil, false, false},
				{"spmu 2 events", hl.HL_DEBUG_OP_SPMU, 0, true, spmu(2), 0, nil, unix.EINVAL, true, false},
				{"spmu read without output", hl.HL_DEBUG_OP_SPMU, 0, false, nil, 0, nil, unix.EINVAL, true, false},
				{"spmu read no events", hl.HL_DEBUG_OP_SPMU, 0, false, nil, 2 * 8, nil, unix.EINVAL, true, false},
			}
			var wantOps []string
			for _, c := range cases {
				var out []byte
				if c.out > 0 {
					out = make([]byte, c.out)
				}
				want := c.want
				if c.differ && asic == Gaudi {
					want = c.gaudi
				}
				if err := debugCall(f, c.op, c.reg, c.enable, c.in, out); err != want {
					t.Errorf("%s: %v, want %v", c.name, err, want)
				}
				if want == nil && !c.quiet {
					wantOps = append(wantOps, hl.DebugOpNames[c.op])
				}
			}
			// Disabling the ETR reports the write pointer: the buffer's
			// start, the trace being empty.
			out := make([]byte, 8)
			if err := debugCall(f, hl.HL_DEBUG_OP_ETR, 0, false, nil, out); err != nil {
				t.Fatal(err)
			}
			if got := binary.LittleEndian.Uint64(out); got != host {
				t.Errorf("ETR write pointer %#x, want %#x", got, host)
			}
			// A bad output pointer is EFAULT after the configuration.
			var a hl.DebugArgs
			a.Op, a.OutputSize = hl.HL_DEBUG_OP_SPMU, 32
			setPointer(&a.OutputPtr, 8)
			if err := f.Ioctl(hl.DRM_IOCTL_HL_DEBUG, unsafe.Pointer(&a)); err != unix.EFAULT {
				t.Errorf("bad output pointer: %v", err)
			}
			a = hl.DebugArgs{Op: hl.HL_DEBUG_OP_STM, Enable: 1, InputSize: 24}
			setPointer(&a.InputPtr, 8)
			if err := f.Ioctl(hl.DRM_IOCTL_HL_DEBUG, unsafe.Pointer(&a)); err != unix.EFAULT {
				t.Errorf("bad input pointer: %v", err)
			}
			var got []string
			for _, op := range d.DebugOps() {
				got = append(got, hl.DebugOpNames[op.Op])
			}
			// The ETR disable and the SPMU read with a bad output pointer
			// configured the hardware too.
			wantOps = append(wantOps, "ETR", "SPMU")
			if diff := cmp.Diff(wantOps, got); diff != "" {
				t.Errorf("recorded ops (-want +got):\n%s", diff)
			}
			// The BMON input was cut to the size of its struct.
			for _, op := range d.DebugOps() {
				if op.Op == hl.HL_DEBUG_OP_BMON && len(op.Input) != 80 {
					t.Errorf("BMON input %d bytes", len(op.Input))
				}
			}
		})
	}
}

func TestDebugNotOperational(t *testing.T) {
	_, d, f := openSim(t, Gaudi2)
	d.SetState(NeedsReset)
	defer d.SetState(Operational)
	if err := setMode(f, true); err != unix.EBUSY {
		t.Fatalf("debug on a device that needs a reset: %v", err)
	}
}

func TestDebugControlNode(t *testing.T) {
	_, d, _ := openSim(t, Gaudi2)
	c, err := d.OpenControl()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := setMode(c, true); err != unix.ENOTTY {
		t.Fatalf("DEBUG on the control node: %v", err)
	}
}
