package ib

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/uapi/rdma"
)

// hostRange is a fake host address range; the fake kernel never touches it.
const hostAddr = 0x7f0000000000

func TestFakeVerbs(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		name := "ioctl"
		if legacy {
			name = "write"
		}
		t.Run(name, func(t *testing.T) {
			k := newFakeKernel(DriverRXE)
			k.noIoctl = legacy
			c, err := fakeContext(k, DriverRXE)
			if err != nil {
				t.Fatal(err)
			}
			if c.Legacy() != legacy || c.NumCompVectors() != 2 {
				t.Errorf("context: legacy %v, %d vectors", c.Legacy(), c.NumCompVectors())
			}
			da, err := c.QueryDevice()
			if err != nil {
				t.Fatal(err)
			}
			if da.MaxMR != 1000 || da.MaxPD != 100 || da.PhysPortCnt != 1 {
				t.Errorf("QueryDevice: %+v", da)
			}
			pa, err := c.QueryPort(1)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(PortAttr{State: PortActive, ActiveMTU: 3, GIDTableLen: 16, LinkLayer: LinkLayerEthernet}, pa); d != "" {
				t.Errorf("QueryPort (-want +got):\n%s", d)
			}
			if _, err := c.QueryPort(2); !errors.Is(err, unix.EINVAL) {
				t.Errorf("QueryPort(2): %v", err)
			}
			gids, err := c.GIDTable()
			if legacy {
				if !errors.Is(err, ErrNotSupported) {
					t.Errorf("GIDTable on a write()-only context: %v", err)
				}
			} else {
				want := []GIDEntry{
					{GID: netip.MustParseAddr("fe80::1"), Index: 0, Port: 1, Type: GIDTypeRoCEv2, NetdevIfindex: 2},
					{GID: netip.MustParseAddr("::ffff:10.77.0.1"), Index: 1, Port: 1, Type: GIDTypeRoCEv2, NetdevIfindex: 2},
				}
				if d := cmp.Diff(want, gids, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" || err != nil {
					t.Errorf("GIDTable (-want +got), err %v:\n%s", err, d)
				}
			}
			ge, err := c.GIDEntry(1, 0)
			if legacy {
				if !errors.Is(err, ErrNotSupported) {
					t.Errorf("GIDEntry on a write()-only context: %v", err)
				}
			} else if err != nil || ge.GID != netip.MustParseAddr("fe80::1") || ge.Port != 1 {
				t.Errorf("GIDEntry(1, 0) = %+v, %v", ge, err)
			}
			if _, err := c.GIDEntry(1, 5); !legacy && !errors.Is(err, unix.ENODATA) {
				t.Errorf("GIDEntry of an empty slot: %v", err)
			}
			pd, err := c.AllocPD()
			if err != nil {
				t.Fatal(err)
			}
			mr, err := pd.RegMR(hostAddr, 1<<20, hostAddr, AccessLocalWrite|AccessRemoteRead)
			if err != nil {
				t.Fatal(err)
			}
			if mr.LKey() != 0x100+mr.Handle() || mr.RKey() != 0x200+mr.Handle() || mr.IOVA() != hostAddr || mr.Len() != 1<<20 || mr.DMABuf() {
				t.Errorf("MR %+v", mr)
			}
			if _, err := pd.RegMR(hostAddr, 4096, hostAddr, AccessRemoteWrite); !errors.Is(err, unix.EINVAL) {
				t.Errorf("RegMR(RemoteWrite): %v", err)
			}
			dmr, err := pd.RegDMABufMR(7, 0x1000, 0x2000, 0x20001000, AccessLocalWrite)
			if legacy {
				if !errors.Is(err, ErrDMABufNotSupported) {
					t.Errorf("RegDMABufMR on write()-only: %v", err)
				}
			} else if err != nil || !dmr.DMABuf() || dmr.LKey() != 0x100+dmr.Handle() {
				t.Errorf("RegDMABufMR: %+v, %v", dmr, err)
			}
			if p, m := k.live(); p != 1 || m != 1+btoi(!legacy) {
				t.Errorf("live objects: %d PDs, %d MRs", p, m)
			}
			// PD.Close deregisters what is left in it.
			if err := pd.Close(); err != nil {
				t.Errorf("PD.Close: %v", err)
			}
			if p, m := k.live(); p != 0 || m != 0 {
				t.Errorf("after PD.Close: %d PDs, %d MRs live", p, m)
			}
			if err := mr.Close(); err != nil {
				t.Errorf("MR.Close after PD.Close: %v", err)
			}
			if err := c.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRegDMABufMRBytes checks the exact request REG_DMABUF_MR sends: the
// 168-byte layout of nine mandatory attributes.
func TestRegDMABufMRBytes(t *testing.T) {
	k := newFakeKernel(DriverRXE)
	c, err := fakeContext(k, DriverRXE)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	k.fail["MR.REG_DMABUF_MR"] = unix.EOPNOTSUPP
	_, err = pd.RegDMABufMR(42, 0x3000, 0x5000, 0x1000003000, AccessLocalWrite|AccessRemoteRead|AccessRelaxedOrdering)
	if !errors.Is(err, ErrDMABufNotSupported) || !errors.Is(err, unix.EOPNOTSUPP) || !errors.Is(err, ErrNotSupported) {
		t.Fatalf("RegDMABufMR: %v, want EOPNOTSUPP", err)
	}
	if !strings.Contains(err.Error(), "dma-buf registration not supported by this NIC") {
		t.Errorf("error text %q", err)
	}
	h, attrs, err := DecodeIoctl(k.lastReq)
	if err != nil {
		t.Fatal(err)
	}
	wantH := IoctlHeader{Length: 168, Object: 7, Method: 4, NumAttrs: 9, DriverID: DriverRXE}
	if d := cmp.Diff(wantH, h); d != "" {
		t.Errorf("header (-want +got):\n%s", d)
	}
	const M = rdma.UVERBS_ATTR_F_MANDATORY
	want := []Attr{
		{ID: 0, Len: 0, Flags: M, Data: 0},
		{ID: 1, Len: 0, Flags: M, Data: uint64(pd.Handle())},
		{ID: 2, Len: 8, Flags: M, Data: 0x3000},
		{ID: 3, Len: 8, Flags: M, Data: 0x5000},
		{ID: 4, Len: 8, Flags: M, Data: 0x1000003000},
		{ID: 5, Len: 4, Flags: M, Data: 42},
		{ID: 6, Len: 4, Flags: M, Data: 0x100005},
		{ID: 7, Len: 4, Flags: M},
		{ID: 8, Len: 4, Flags: M},
	}
	// The outputs point into the request; their addresses vary.
	for i := 7; i < 9; i++ {
		if attrs[i].Data == 0 {
			t.Errorf("output attribute %d has no address", i)
		}
		attrs[i].Data = 0
	}
	if d := cmp.Diff(want, attrs); d != "" {
		t.Errorf("attributes (-want +got):\n%s", d)
	}
	// A negative descriptor travels as its 32-bit two's complement.
	delete(k.fail, "MR.REG_DMABUF_MR")
	if _, err := pd.RegDMABufMR(-1, 0, 4096, 0, AccessLocalWrite); !errors.Is(err, unix.EBADF) || errors.Is(err, ErrClosed) {
		t.Errorf("RegDMABufMR(-1): %v, want EBADF not matching ErrClosed", err)
	}
	if k.lastAttr[5].Data != 0xffffffff {
		t.Errorf("fd -1 encoded as %#x", k.lastAttr[5].Data)
	}
}

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		method string
		errno  unix.Errno
		call   func(*Context, *PD) error
		is     []error
		isNot  []error
	}{
		{"MR.REG_DMABUF_MR", unix.EOPNOTSUPP, regDMABuf, []error{ErrDMABufNotSupported, ErrNotSupported, unix.EOPNOTSUPP}, []error{ErrClosed, ErrBadDriverID}},
		{"MR.REG_DMABUF_MR", unix.EPROTONOSUPPORT, regDMABuf, []error{ErrDMABufNotSupported, ErrNotSupported}, nil},
		{"MR.REG_DMABUF_MR", unix.EINVAL, regDMABuf, []error{unix.EINVAL}, []error{ErrDMABufNotSupported, ErrBadDriverID}},
		{"MR.REG_DMABUF_MR", unix.EBADF, regDMABuf, []error{unix.EBADF}, []error{ErrClosed, ErrDMABufNotSupported}},
		{"DEVICE.QUERY_PORT", unix.EIO, func(c *Context, _ *PD) error { _, err := c.QueryPort(1); return err }, []error{unix.EIO}, []error{ErrNotSupported}},
		{"DEVICE.INVOKE_WRITE", unix.ENOMEM, func(c *Context, _ *PD) error { _, err := c.AllocPD(); return err }, []error{unix.ENOMEM}, []error{ErrDMABufNotSupported}},
		{"PD.PD_DESTROY", unix.EBUSY, func(_ *Context, pd *PD) error { return pd.Close() }, []error{unix.EBUSY}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.method+"/"+unix.ErrnoName(tt.errno), func(t *testing.T) {
			k := newFakeKernel(DriverRXE)
			c, err := fakeContext(k, DriverRXE)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			pd, err := c.AllocPD()
			if err != nil {
				t.Fatal(err)
			}
			k.fail[tt.method] = tt.errno
			err = tt.call(c, pd)
			var e *Error
			if !errors.As(err, &e) || e.Errno != tt.errno || e.Device != "fake0" {
				t.Fatalf("error %T %v, want *Error with %v", err, err, tt.errno)
			}
			for _, target := range tt.is {
				if !errors.Is(err, target) {
					t.Errorf("errors.Is(%v, %v) = false", err, target)
				}
			}
			for _, target := range tt.isNot {
				if errors.Is(err, target) {
					t.Errorf("errors.Is(%v, %v) = true", err, target)
				}
			}
		})
	}
}

func regDMABuf(_ *Context, pd *PD) error {
	_, err := pd.RegDMABufMR(3, 0, 4096, 0, AccessLocalWrite)
	return err
}

func TestWrongDriverID(t *testing.T) {
	k := newFakeKernel(DriverMLX5)
	_, err := fakeContext(k, DriverRXE)
	if !errors.Is(err, ErrBadDriverID) || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("open with the wrong driver id: %v", err)
	}
	if !strings.Contains(err.Error(), "driver id") {
		t.Errorf("error text %q does not mention the driver id", err)
	}
	// The fake saw the mlx5 request data? No: the id in the header was rxe's.
	h, _, _ := DecodeIoctl(k.lastReq)
	if h.DriverID != DriverRXE {
		t.Errorf("header driver id %v", h.DriverID)
	}
	// Later EINVALs are not blamed on the driver id.
	k2 := newFakeKernel(DriverRXE)
	c, err := fakeContext(k2, DriverRXE)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.QueryPort(9); !errors.Is(err, unix.EINVAL) || errors.Is(err, ErrBadDriverID) {
		t.Errorf("QueryPort(9): %v", err)
	}
}

func TestEINTRRetried(t *testing.T) {
	k := newFakeKernel(DriverRXE)
	k.eintr = 3
	c, err := fakeContext(k, DriverRXE)
	if err != nil {
		t.Fatalf("GET_CONTEXT after EINTRs: %v", err)
	}
	if len(k.calls) != 4 {
		t.Errorf("calls %v, want 3 interrupted and 1 done", k.calls)
	}
	k.eintr = 2
	if _, err := c.QueryPort(1); err != nil {
		t.Errorf("QueryPort after EINTRs: %v (the request must be restored before a retry)", err)
	}
}

func TestClosed(t *testing.T) {
	k := newFakeKernel(DriverRXE)
	c, err := fakeContext(k, DriverRXE)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	mr, err := pd.RegMR(hostAddr, 4096, hostAddr, AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	calls := len(k.calls)
	checks := []struct {
		name string
		err  error
	}{
		{"AllocPD", func() error { _, err := c.AllocPD(); return err }()},
		{"QueryDevice", func() error { _, err := c.QueryDevice(); return err }()},
		{"QueryPort", func() error { _, err := c.QueryPort(1); return err }()},
		{"GIDTable", func() error { _, err := c.GIDTable(); return err }()},
		{"ProbeDMABuf", func() error { _, err := c.ProbeDMABuf(); return err }()},
		{"RegMR", func() error { _, err := pd.RegMR(hostAddr, 4096, hostAddr, AccessLocalWrite); return err }()},
		{"RegDMABufMR", func() error { _, err := pd.RegDMABufMR(3, 0, 4096, 0, AccessLocalWrite); return err }()},
	}
	for _, ch := range checks {
		if !errors.Is(ch.err, ErrClosed) || !errors.Is(ch.err, os.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed (os.ErrClosed)", ch.name, ch.err)
		}
	}
	if err := mr.Close(); err != nil {
		t.Errorf("MR.Close after Context.Close: %v", err)
	}
	if err := pd.Close(); err != nil {
		t.Errorf("PD.Close after Context.Close: %v", err)
	}
	if len(k.calls) != calls {
		t.Errorf("calls reached the kernel after Close: %v", k.calls[calls:])
	}
	// A call racing with Close that reaches a closed file gets EBADF.
	if err := c.ioctl(opQueryPort, &request{obj: 0, method: 2}); !errors.Is(err, ErrClosed) {
		t.Errorf("ioctl on a closed file: %v", err)
	}
}

func TestProbeDMABuf(t *testing.T) {
	tests := []struct {
		errno   unix.Errno // answer to REG_DMABUF_MR; 0 = the fake's own (EBADF for fd -1)
		want    bool
		wantErr bool
	}{
		{0, true, false},
		{unix.EOPNOTSUPP, false, false},
		{unix.EPROTONOSUPPORT, false, false},
		{unix.EINVAL, false, true},
		{unix.EIO, false, true},
	}
	for _, tt := range tests {
		k := newFakeKernel(DriverRXE)
		c, err := fakeContext(k, DriverRXE)
		if err != nil {
			t.Fatal(err)
		}
		if tt.errno != 0 {
			k.fail["MR.REG_DMABUF_MR"] = tt.errno
		}
		got, err := c.ProbeDMABuf()
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("errno %v: ProbeDMABuf = %v, %v; want %v, error %v", tt.errno, got, err, tt.want, tt.wantErr)
		}
		if p, m := k.live(); p != 0 || m != 0 {
			t.Errorf("errno %v: probe left %d PDs, %d MRs", tt.errno, p, m)
		}
		c.Close()
	}
}

// TestDriverData checks each driver's request data on the wire: mlx5 gets
// its ucontext request and a PD output area, siw its output areas, rxe
// nothing.
func TestDriverData(t *testing.T) {
	tests := []struct {
		id       DriverID
		ctxAttrs []uint16 // attribute ids of GET_CONTEXT
		pdAttrs  []uint16 // attribute ids of INVOKE_WRITE(ALLOC_PD)
	}{
		{DriverRXE, []uint16{0, 1}, []uint16{2, 0, 1}},
		{DriverMLX5, []uint16{0, 1, rdma.UVERBS_ATTR_UHW_IN, rdma.UVERBS_ATTR_UHW_OUT}, []uint16{2, 0, 1, rdma.UVERBS_ATTR_UHW_OUT}},
		{DriverSIW, []uint16{0, 1, rdma.UVERBS_ATTR_UHW_OUT}, []uint16{2, 0, 1}},
		{DriverIRDMA, []uint16{0, 1, rdma.UVERBS_ATTR_UHW_IN, rdma.UVERBS_ATTR_UHW_OUT}, []uint16{2, 0, 1}},
	}
	ids := func(attrs []Attr) []uint16 {
		var out []uint16
		for _, a := range attrs {
			out = append(out, a.ID)
		}
		return out
	}
	for _, tt := range tests {
		k := newFakeKernel(tt.id)
		c, err := fakeContext(k, tt.id)
		if err != nil {
			t.Fatalf("%v: %v", tt.id, err)
		}
		if d := cmp.Diff(tt.ctxAttrs, ids(k.lastAttr)); d != "" {
			t.Errorf("%v GET_CONTEXT attributes (-want +got):\n%s", tt.id, d)
		}
		if _, err := c.AllocPD(); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tt.pdAttrs, ids(k.lastAttr)); d != "" {
			t.Errorf("%v ALLOC_PD attributes (-want +got):\n%s", tt.id, d)
		}
		c.Close()
	}
}

func TestWriteCmdLayout(t *testing.T) {
	core := make([]byte, 40)
	binary.LittleEndian.PutUint64(core[8:], 0x1234)
	w := newWriteCmd(uint32(rdma.IB_USER_VERBS_CMD_REG_MR), core, []byte{1, 2, 3, 4, 5, 6, 7, 8}, 12, 8)
	le := binary.LittleEndian
	if got := le.Uint32(w.buf[0:]); got != 9 {
		t.Errorf("command %d", got)
	}
	if in, out := le.Uint16(w.buf[4:]), le.Uint16(w.buf[6:]); in != (8+40+8)/4 || out != (12+8)/4 {
		t.Errorf("in_words %d out_words %d", in, out)
	}
	if w.n != 56 || le.Uint64(w.buf[16:]) != 0x1234 || w.buf[48] != 1 {
		t.Errorf("write length %d, payload % x", w.n, w.buf[:w.n])
	}
	if got := payloadAt(w.buf, le.Uint64(w.buf[8:]), 20); len(got) != 20 || &got[0] != &w.resp()[0] {
		t.Errorf("response address does not point at the response area")
	}
}

func TestPayloadAtBounds(t *testing.T) {
	b := make([]byte, 64)
	base := addrOf(b, 0)
	tests := []struct {
		addr uint64
		n    int
		ok   bool
	}{
		{base, 64, true}, {base + 60, 4, true}, {base + 61, 4, false}, {base - 1, 1, false},
		{base + 64, 0, true}, {base + 65, 0, false}, {0, 1, false}, {base, -1, false}, {^uint64(0), 2, false},
	}
	for _, tt := range tests {
		got := payloadAt(b, tt.addr, tt.n)
		if (got != nil) != tt.ok {
			t.Errorf("payloadAt(base%+d, %d) = %v, want ok %v", int64(tt.addr-base), tt.n, got != nil, tt.ok)
		}
	}
}

func TestAccessString(t *testing.T) {
	tests := []struct {
		a    Access
		want string
	}{
		{0, "0"},
		{AccessLocalWrite, "LocalWrite"},
		{AccessLocalWrite | AccessRemoteRead | AccessRelaxedOrdering, "LocalWrite|RemoteRead|RelaxedOrdering"},
		{AccessRemoteAtomic | 0x40000000, "RemoteAtomic|0x40000000"},
	}
	for _, tt := range tests {
		if got := tt.a.String(); got != tt.want {
			t.Errorf("%#x: %q, want %q", uint32(tt.a), got, tt.want)
		}
	}
}

func TestDriverIDForName(t *testing.T) {
	tests := map[string]DriverID{
		"rxe0": DriverRXE, "mlx5_0": DriverMLX5, "mlx5_core": DriverMLX5, "irdma1": DriverIRDMA, "ice": DriverIRDMA,
		"siw0": DriverSIW, "bnxt_re3": DriverBNXTRE, "bnxt_en": DriverBNXTRE, "efa_0": DriverEFA, "mana_0": DriverMANA,
		"eth0": DriverUnknown, "": DriverUnknown, "123": DriverUnknown,
	}
	for name, want := range tests {
		if got := DriverIDForName(name); got != want {
			t.Errorf("DriverIDForName(%q) = %v, want %v", name, got, want)
		}
	}
	if DriverRXE.String() != "rxe" || DriverID(200).String() != "DriverID(200)" || DriverUnknown.String() != "unknown" {
		t.Errorf("DriverID.String: %v %v %v", DriverRXE, DriverID(200), DriverUnknown)
	}
}

func TestProbeDriverID(t *testing.T) {
	for _, id := range []DriverID{DriverRXE, DriverMLX5, DriverSIW, DriverID(12)} {
		k := newFakeKernel(id)
		k.eintr = 1
		c, err := newContext(Device{Name: "fake0", UverbsPath: "/dev/infiniband/uverbs9"}, k)
		if err != nil {
			t.Errorf("%v: open without a driver id: %v", id, err)
			continue
		}
		if c.DriverID() != id || c.Device().DriverIDSource != "probe" {
			t.Errorf("probed driver id %v from %q, want %v from probe", c.DriverID(), c.Device().DriverIDSource, id)
		}
		c.Close()
	}
	// An id the probe does not know: a clear error, not a panic.
	k := newFakeKernel(DriverID(77))
	if _, err := newContext(Device{Name: "fake0"}, k); !errors.Is(err, unix.EINVAL) || !errors.Is(err, ErrBadDriverID) {
		t.Errorf("unknown driver: %v, want EINVAL matching ErrBadDriverID", err)
	}
	// A kernel without the ioctl: the id does not matter, write() is used.
	k = newFakeKernel(DriverRXE)
	k.noIoctl = true
	c, err := newContext(Device{Name: "fake0"}, k)
	if err != nil || !c.Legacy() {
		t.Errorf("no ioctl: %v, legacy %v", err, err == nil && c.Legacy())
	}
	// Another failure stops the probe.
	k = newFakeKernel(DriverRXE)
	k.fail["DEVICE.INVOKE_WRITE"] = unix.EIO
	if _, err := newContext(Device{Name: "fake0"}, k); !errors.Is(err, unix.EIO) {
		t.Errorf("EIO during the probe: %v", err)
	}
}
