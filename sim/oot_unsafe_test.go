package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// ootSystem is a server of n devices behaving as the out-of-tree driver.
func ootSystem(t *testing.T, asic ASIC, n int) *System {
	t.Helper()
	cfg := Default(asic, n)
	cfg.Driver = DriverOutOfTree
	s := newTestSystem(t, cfg)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestDriverConfig(t *testing.T) {
	for in, want := range map[string]Driver{"upstream": DriverUpstream, "oot": DriverOutOfTree, "OOT": DriverOutOfTree, "out-of-tree": DriverOutOfTree} {
		if got, err := ParseDriver(in); err != nil || got != want {
			t.Errorf("ParseDriver(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseDriver("habana"); err == nil {
		t.Error("ParseDriver accepted an unknown driver")
	}
	for spec, want := range map[string]struct {
		n   int
		drv Driver
	}{
		"gaudi2:3:oot": {3, DriverOutOfTree}, "gaudi2::oot": {8, DriverOutOfTree},
		"gaudi:2:upstream": {2, DriverUpstream}, "gaudi2:2": {2, 0},
	} {
		t.Setenv("GAUDI_SIM", spec)
		c, err := FromEnv()
		if err != nil || len(c.Devices) != want.n || c.Driver != want.drv {
			t.Errorf("GAUDI_SIM=%s: %d devices, driver %v, %v; want %d, %v", spec, len(c.Devices), c.Driver, err, want.n, want.drv)
		}
	}
	t.Setenv("GAUDI_SIM", "gaudi2:2:nvidia")
	if _, err := FromEnv(); err == nil {
		t.Error("GAUDI_SIM with an unknown driver accepted")
	}

	// The zero Driver takes GAUDI_SIM_DRIVER.
	for env, want := range map[string]Driver{"": DriverUpstream, "oot": DriverOutOfTree, "upstream": DriverUpstream} {
		t.Setenv("GAUDI_SIM_DRIVER", env)
		s, err := New(Config{LockDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if s.Driver() != want || s.Device(0).Driver() != want {
			t.Errorf("GAUDI_SIM_DRIVER=%q: driver %v, want %v", env, s.Driver(), want)
		}
		s.Close()
	}
	// A legacy system is the kernel's driver whatever the environment says.
	t.Setenv("GAUDI_SIM_DRIVER", "oot")
	if s, err := New(Config{LockDir: t.TempDir(), Legacy: true}); err != nil || s.Driver() != DriverUpstream {
		t.Errorf("legacy system with GAUDI_SIM_DRIVER=oot: %v", err)
	} else {
		s.Close()
	}
	t.Setenv("GAUDI_SIM_DRIVER", "bogus")
	if _, err := New(Config{LockDir: t.TempDir()}); err == nil {
		t.Error("New accepted GAUDI_SIM_DRIVER=bogus")
	}
	if _, err := New(Config{LockDir: t.TempDir(), Driver: DriverOutOfTree, Legacy: true}); err == nil {
		t.Error("New accepted the out-of-tree driver with the legacy encoding")
	}
}

// TestOOTInfoOps checks the out-of-tree INFO ops against their rules, and
// that the upstream driver does not know them.
func TestOOTInfoOps(t *testing.T) {
	oot := ootSystem(t, Gaudi2, 1)
	f, c := openBoth(t, oot, 0)
	d := oot.Device(0)

	// MODULE_PARAMS and CONFIG_DRM_ACCEL_ENABLED are served in any state.
	d.SetState(InReset)
	var mp hl.InfoModuleParams
	readStruct(t, c, infoReq{op: hl.HL_INFO_MODULE_PARAMS}, &mp)
	if mp.TPCMask != 0x1FFFFFF || mp.MMEEnable != 1 || mp.TimeoutLocked != 30 || mp.NICPortsMask != 0 || mp.FWLoading != fwTypeAllTypes || mp.DecoderMask != 0x3FF {
		t.Errorf("MODULE_PARAMS %+v", mp)
	}
	buf := poisoned(16)
	if _, err := callInfo(f, infoReq{op: hl.HL_INFO_CONFIG_DRM_ACCEL_ENABLED, size: 16}, buf); err != nil {
		t.Fatal(err)
	}
	if binary.NativeEndian.Uint64(buf) != 1 || !untouched(buf[8:]) {
		t.Errorf("CONFIG_DRM_ACCEL_ENABLED wrote % x; want u64 1 and nothing past it", buf)
	}
	// The operational-only ones are EBUSY now.
	for _, op := range []uint32{hl.HL_INFO_TIME_SYNC_PER_DIE, hl.HL_INFO_MEMORY_CONSUMPTION, hl.HL_INFO_HABANA_LINK_STATE, hl.HL_INFO_HABANA_LINK_COUNTERS} {
		if _, err := callInfo(f, infoReq{op: op, size: 32}, make([]byte, 32)); !errors.Is(err, unix.EBUSY) {
			t.Errorf("op %d in reset: %v, want EBUSY", op, err)
		}
	}
	d.SetState(Operational)

	var ts hl.InfoTimeSyncPerDie
	ts.DieIndex = 0
	readStruct(t, f, infoReq{op: hl.HL_INFO_TIME_SYNC_PER_DIE}, &ts)
	if ts.DeviceTime == 0 || ts.HostTime == 0 {
		t.Errorf("TIME_SYNC_PER_DIE %+v", ts)
	}
	ts = hl.InfoTimeSyncPerDie{DieIndex: 1}
	b := structBytes(&ts)
	cases := []struct {
		name string
		req  infoReq
		buf  []byte
		want error
	}{
		{"module params size 0", infoReq{op: hl.HL_INFO_MODULE_PARAMS}, nil, unix.EINVAL},
		{"accel enabled short", infoReq{op: hl.HL_INFO_CONFIG_DRM_ACCEL_ENABLED, size: 7}, make([]byte, 8), unix.EINVAL},
		{"accel enabled nil", infoReq{op: hl.HL_INFO_CONFIG_DRM_ACCEL_ENABLED, size: 8, nilPtr: true}, make([]byte, 8), unix.EINVAL},
		{"time sync die 1", infoReq{op: hl.HL_INFO_TIME_SYNC_PER_DIE, size: 32}, b, unix.EINVAL},
		{"memory consumption 15 bytes", infoReq{op: hl.HL_INFO_MEMORY_CONSUMPTION, size: 15}, make([]byte, 16), unix.EINVAL},
		{"memory consumption nil", infoReq{op: hl.HL_INFO_MEMORY_CONSUMPTION, size: 16, nilPtr: true}, make([]byte, 16), unix.EFAULT},
		{"link state", infoReq{op: hl.HL_INFO_HABANA_LINK_STATE, size: 8}, make([]byte, 8), unix.EFAULT},
		{"link state size 0", infoReq{op: hl.HL_INFO_HABANA_LINK_STATE}, make([]byte, 8), unix.EINVAL},
		{"link counters", infoReq{op: hl.HL_INFO_HABANA_LINK_COUNTERS, size: 24}, make([]byte, 24), unix.EFAULT},
	}
	for _, tc := range cases {
		if _, err := callInfo(f, tc.req, tc.buf); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}

	// MEMORY_CONSUMPTION reports at most the DRAM allocated.
	report := func(used uint64) error {
		r := hl.InfoMemoryConsumption{UsedMem: used, TimestampSec: 77}
		_, err := callInfo(f, infoReq{op: hl.HL_INFO_MEMORY_CONSUMPTION, size: 16}, structBytes(&r))
		return err
	}
	if err := report(1); !errors.Is(err, unix.EINVAL) {
		t.Errorf("report of 1 byte with nothing allocated: %v, want EINVAL", err)
	}
	h, err := memAllocFlags(f, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer memFree(f, h)
	if err := report(4096); err != nil {
		t.Fatal(err)
	}
	if got := d.MemoryConsumption(); got != (MemoryConsumption{UsedMem: 4096, TimestampSec: 77, Reports: 1}) {
		t.Errorf("reported %+v", got)
	}

	// The upstream driver knows none of them: EINVAL when operational,
	// EBUSY otherwise.
	up := newTestSystem(t, Default(Gaudi2, 1))
	defer up.Close()
	uf, _ := openBoth(t, up, 0)
	for _, op := range []uint32{hl.HL_INFO_MODULE_PARAMS, hl.HL_INFO_CONFIG_DRM_ACCEL_ENABLED, hl.HL_INFO_TIME_SYNC_PER_DIE, hl.HL_INFO_MEMORY_CONSUMPTION, hl.HL_INFO_HABANA_LINK_STATE} {
		if _, err := callInfo(uf, infoReq{op: op, size: 16}, make([]byte, 16)); !errors.Is(err, unix.EINVAL) {
			t.Errorf("upstream op %d: %v, want EINVAL", op, err)
		}
	}
	up.Device(0).SetState(InReset)
	if _, err := callInfo(uf, infoReq{op: hl.HL_INFO_CONFIG_DRM_ACCEL_ENABLED, size: 8}, make([]byte, 8)); !errors.Is(err, unix.EBUSY) {
		t.Errorf("upstream CONFIG_DRM_ACCEL_ENABLED in reset: %v, want EBUSY", err)
	}
	up.Device(0).SetState(Operational)
}

func TestOOTHWIPInfo(t *testing.T) {
	for _, drv := range []Driver{DriverUpstream, DriverOutOfTree} {
		cfg := Default(Gaudi2, 1)
		cfg.Driver = drv
		s := newTestSystem(t, cfg)
		_, c := openBoth(t, s, 0)
		var r hl.InfoHWIPInfo
		readStruct(t, c, infoReq{op: hl.HL_INFO_HW_IP_INFO}, &r)
		mme, sched := uint32(0), uint32(0)
		if drv == DriverOutOfTree {
			mme, sched = 0xF, 0x3F
		}
		if r.MMEEnabledMask() != mme || r.SchedArcEnabledMask() != sched || r.NICPortsMask() != 0 ||
			r.NICPortsExternalMask() != 0 || r.ODPSupported() || r.PDMAUserOwnedChMask() != 0 {
			t.Errorf("%v: mme %#x sched %#x nic %#x/%#x odp %v pdma %#x", drv, r.MMEEnabledMask(), r.SchedArcEnabledMask(),
				r.NICPortsMask(), r.NICPortsExternalMask(), r.ODPSupported(), r.PDMAUserOwnedChMask())
		}
		if r.DeviceID != 0x1020 {
			t.Errorf("%v: device id %#x", drv, r.DeviceID)
		}
		s.Close()
	}
}

// deviceStatus issues DEVICE_STATUS with a buffer of size bytes whose
// soft_reset_stall word (bytes 4..7) is stall, and returns the buffer.
func deviceStatus(t *testing.T, f *File, size int, stall uint32) []byte {
	t.Helper()
	buf := poisoned(16)
	binary.NativeEndian.PutUint32(buf[0:], 0xFFFF)
	binary.NativeEndian.PutUint32(buf[4:], stall)
	if _, err := callInfo(f, infoReq{op: hl.HL_INFO_DEVICE_STATUS, size: uint32(size)}, buf); err != nil {
		t.Fatal(err)
	}
	return buf
}

func TestOOTSoftResetStall(t *testing.T) {
	s := ootSystem(t, Gaudi2, 1)
	d := s.Device(0)
	c, err := d.OpenControl()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	buf := deviceStatus(t, c, 16, 1)
	if binary.NativeEndian.Uint32(buf) != uint32(Operational) || binary.NativeEndian.Uint32(buf[4:]) != 1 || !untouched(buf[8:]) {
		t.Errorf("status buffer % x: want status 0, the stall word kept, nothing past 8 bytes", buf)
	}
	if got := d.SoftResetStallRequests(); got != 1 {
		t.Fatalf("%d stall requests, want 1", got)
	}
	// A 4-byte buffer reads no stall word: it cancels the stall.
	deviceStatus(t, c, 4, 1)
	if got := d.SoftResetStallRequests(); got != 1 {
		t.Fatalf("%d stall requests after a 4-byte query, want 1", got)
	}
	f, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := d.StalledSoftResets(); got != 0 {
		t.Fatalf("%d stalled resets after the stall was cancelled, want 0", got)
	}

	// A stall asked for just before the release delays its soft reset.
	f, err = d.Open()
	if err != nil {
		t.Fatal(err)
	}
	deviceStatus(t, c, 8, 7)
	start := time.Now()
	f.Close()
	if el := time.Since(start); el < 20*time.Millisecond {
		t.Errorf("release took %v; a stall of 30 ms was asked", el)
	}
	if got := d.StalledSoftResets(); got != 1 {
		t.Errorf("%d stalled resets, want 1", got)
	}

	// The upstream driver ignores the word.
	up := newTestSystem(t, Default(Gaudi2, 1))
	defer up.Close()
	uc, err := up.Device(0).OpenControl()
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	buf = deviceStatus(t, uc, 16, 1)
	if binary.NativeEndian.Uint32(buf[4:]) != 0 || up.Device(0).SoftResetStallRequests() != 0 {
		t.Errorf("upstream status buffer % x, %d requests; want pad 0 written, none", buf, up.Device(0).SoftResetStallRequests())
	}
}

// nic issues the NIC ioctl.
func nic(f *File, a *hl.NICArgs) error { return f.Ioctl(hl.DRM_IOCTL_HL_NIC, unsafe.Pointer(a)) }

func TestNICIoctl(t *testing.T) {
	s := ootSystem(t, Gaudi2, 1)
	f, c := openBoth(t, s, 0)
	d := s.Device(0)

	in := make([]byte, 100) // the driver reads InputSize bytes of it
	out := poisoned(100)
	a := hl.NICArgs{Op: hl.HL_NIC_OP_GET_USER_APP_PARAMS, InputPtr: hl.SlicePointer(in), InputSize: 100,
		OutputPtr: hl.SlicePointer(out), OutputSize: 100}
	if err := nic(f, &a); !errors.Is(err, unix.EFAULT) {
		t.Errorf("GET_USER_APP_PARAMS without NIC: %v, want EFAULT", err)
	}
	if a.InputSize != 8 || a.OutputSize != 48 {
		t.Errorf("sizes after the call %d/%d, want the driver's 8/48", a.InputSize, a.OutputSize)
	}
	if !bytes.Equal(out[:48], make([]byte, 48)) || !untouched(out[48:]) {
		t.Errorf("output % x: want 48 zero bytes, the rest untouched", out)
	}
	runtime.KeepAlive(in)
	for _, op := range []uint32{hl.HL_NIC_OP_CQ_CREATE, hl.HL_NIC_OP_CQ_UPDATE_CONSUMED_CQES, hl.HL_NIC_OP_DUMP_QP + 1, 1 << 31} {
		a := hl.NICArgs{Op: op}
		if err := nic(f, &a); !errors.Is(err, unix.EINVAL) {
			t.Errorf("NIC op %d: %v, want EINVAL", op, err)
		}
	}
	a = hl.NICArgs{Op: hl.HL_NIC_OP_ALLOC_CONN}
	if err := nic(f, &a); !errors.Is(err, unix.EFAULT) {
		t.Errorf("ALLOC_CONN: %v, want EFAULT", err)
	}
	if err := nic(c, &a); !errors.Is(err, unix.ENOTTY) {
		t.Errorf("NIC on the control node: %v, want ENOTTY", err)
	}
	d.SetState(NeedsReset)
	if err := nic(f, &a); !errors.Is(err, unix.EBUSY) {
		t.Errorf("NIC on a device that needs a reset: %v, want EBUSY", err)
	}
	d.SetState(Operational)

	// drm_ioctl of the upstream driver: the number is past its table.
	up := newTestSystem(t, Default(Gaudi2, 1))
	defer up.Close()
	uf, _ := openBoth(t, up, 0)
	if err := nic(uf, &a); !errors.Is(err, unix.EINVAL) {
		t.Errorf("upstream NIC: %v, want EINVAL", err)
	}
}

// regDMABuf issues MEMORY REG_DMABUF_FD and returns the arguments as the
// call left them.
func regDMABuf(f *File, fd int, length uint64) (hl.MemArgs, error) {
	var a hl.MemArgs
	v := (*hl.MemRegDmabufFDArgs)(unsafe.Pointer(&a))
	v.Op, v.FD, v.Length = hl.HL_MEM_OP_REG_DMABUF_FD, uint64(fd), length
	err := memIoctl(f, &a)
	return a, err
}

// exportPair opens two devices of an out-of-tree system (memfd exports),
// fills n bytes of device memory of the first with random bytes of seed
// and exports them with flags: exp, imp, the exported range's address,
// its bytes and the export's descriptor, which the test closes.
func exportPair(t *testing.T, n uint64, seed uint64, flags uint32) (s *System, exp, imp *File, va uint64, want []byte, fd int) {
	t.Helper()
	memfdExports(t)
	s = ootSystem(t, Gaudi2, 2)
	exp, err := s.Device(0).Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exp.Close() })
	imp, err = s.Device(1).Open()
	if err != nil {
		t.Fatal(err)
	}
	va = deviceBuf(t, exp, n)
	want = make([]byte, n)
	fillRandom(want, seed)
	dramPut(t, exp, va, want)
	fd, err = memExport(exp, va, n, 0, flags)
	if err != nil {
		t.Fatal(err)
	}
	return s, exp, imp, va, want, fd
}

func TestRegDMABufFD(t *testing.T) {
	const n = 1 << 20
	s, exp, imp, va, want, fd := exportPair(t, n, 5, exportFlags)
	defer func() { imp.Close() }()
	defer unix.Close(fd)

	fds := countFDs(t)
	a, err := regDMABuf(imp, fd, n)
	if err != nil {
		t.Fatal(err)
	}
	got := a.Out().DeviceVirtAddr()
	v := &imp.dev.prof.vm
	if got < v.host.start || got > v.host.end || got%v.hostPage != 0 {
		t.Fatalf("imported at %#x, want a page of the host range %#x-%#x", got, v.host.start, v.host.end)
	}
	if a.Out().DeviceVirtAddr() != got || (*hl.MemRegDmabufFDArgs)(unsafe.Pointer(&a)).Length != 0 {
		t.Error("the arguments were not cleared around the answer")
	}
	// The importing device reaches the exporter's memory: both ways.
	var seen []byte
	err = imp.ctx.access(got, n, func(e extent) error {
		if e.kind != extentHost {
			t.Fatalf("extent kind %d, want host", e.kind)
		}
		seen = append(seen, e.host...)
		return nil
	})
	if err != nil || !bytes.Equal(seen, want) {
		t.Fatalf("imported bytes differ from the exporter's (%v)", err)
	}
	imp.ctx.access(got+100, 3, func(e extent) error { copy(e.host, "abc"); return nil })
	if b := dramAt(t, exp, va+100, 3); string(b) != "abc" {
		t.Errorf("exporter reads %q after the importer wrote abc", b)
	}
	// It is not device memory of the importer: no export of it.
	if _, err := memExport(imp, got, n, 0, exportFlags); !errors.Is(err, unix.EINVAL) {
		t.Errorf("export of an imported range: %v, want EINVAL", err)
	}
	if err := memUnmap(imp, got); err != nil {
		t.Fatal(err)
	}
	if after := countFDs(t); after != fds {
		t.Errorf("%d descriptors after UNMAP, %d before the import", after, fds)
	}
	if err := memUnmap(imp, got); !errors.Is(err, unix.EINVAL) {
		t.Errorf("second UNMAP: %v, want EINVAL", err)
	}

	// The context's end releases what is left.
	imp.Close()
	fds = countFDs(t)
	if imp, err = s.Device(1).Open(); err != nil {
		t.Fatal(err)
	}
	if _, err := regDMABuf(imp, fd, 4096); err != nil {
		t.Fatal(err)
	}
	imp.Close()
	if after := countFDs(t); after != fds {
		t.Errorf("%d descriptors after the importer closed, %d before it opened", after, fds)
	}
	if imp, err = s.Device(1).Open(); err != nil {
		t.Fatal(err)
	}

	// Refusals.
	p := make([]int, 2)
	if err := unix.Pipe2(p, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	for _, tc := range []struct {
		name   string
		fd     int
		length uint64
		want   error
	}{
		{"closed descriptor", 1 << 20, 4096, unix.EBADF},
		{"negative descriptor", -1, 4096, unix.EBADF},
		{"pipe", p[0], 4096, unix.EINVAL},
		{"longer than the buffer", fd, n + 4096, unix.EINVAL},
		{"length 0", fd, 0, unix.EINVAL},
	} {
		a, err := regDMABuf(imp, tc.fd, tc.length)
		if !errors.Is(err, tc.want) || a.Out().DeviceVirtAddr() != 0 {
			t.Errorf("%s: %v, address %#x; want %v and 0", tc.name, err, a.Out().DeviceVirtAddr(), tc.want)
		}
	}
	imp.dev.SetState(InReset)
	if _, err := regDMABuf(imp, fd, 4096); !errors.Is(err, unix.EBUSY) {
		t.Errorf("import on a device in reset: %v, want EBUSY", err)
	}
	imp.dev.SetState(Operational)
	imp.Close()

	// Upstream: an unknown op. Without peer to peer: EPERM.
	up := newTestSystem(t, Default(Gaudi2, 1))
	defer up.Close()
	uf, _ := openBoth(t, up, 0)
	if _, err := regDMABuf(uf, fd, 4096); !errors.Is(err, unix.EINVAL) {
		t.Errorf("upstream REG_DMABUF_FD: %v, want EINVAL", err)
	}
	cfg := Default(Gaudi2, 1)
	cfg.Driver, cfg.NoPeerToPeer = DriverOutOfTree, true
	np := newTestSystem(t, cfg)
	defer np.Close()
	nf, _ := openBoth(t, np, 0)
	if _, err := regDMABuf(nf, fd, 4096); !errors.Is(err, unix.EPERM) {
		t.Errorf("REG_DMABUF_FD without peer to peer: %v, want EPERM", err)
	}
}

// TestRegDMABufDMA runs LIN_DMA on the importing device between its own
// DRAM and the imported buffer, both ways.
func TestRegDMABufDMA(t *testing.T) {
	memfdExports(t)
	s := ootSystem(t, Gaudi2, 2)
	exp, err := s.Device(0).Open()
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Close()
	imp, err := s.Device(1).Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSim(imp) })
	const n = 256 << 10
	src := deviceBuf(t, exp, n)
	want := make([]byte, n)
	fillRandom(want, 9)
	dramPut(t, exp, src, want)
	fd, err := memExport(exp, src, n, 0, exportFlags)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	a, err := regDMABuf(imp, fd, n)
	if err != nil {
		t.Fatal(err)
	}
	peer := a.Out().DeviceVirtAddr()
	local := deviceBuf(t, imp, n)
	fm := imp.dev.hardware().format()
	cb := build(t, fm, func(b *packet.Builder) {
		b.LinDMA(packet.LinDMA{Src: peer, Dst: local, Size: n})
	})
	mustComplete(t, imp, runCB(t, imp, 0, cb, 0, 0))
	if !bytes.Equal(dramAt(t, imp, local, n), want) {
		t.Fatal("the importer's DRAM differs from the exporter's after a copy from the import")
	}
	back := make([]byte, n)
	fillRandom(back, 10)
	dramPut(t, imp, local, back)
	cb = build(t, fm, func(b *packet.Builder) {
		b.LinDMA(packet.LinDMA{Src: local, Dst: peer, Size: n})
	})
	mustComplete(t, imp, runCB(t, imp, 0, cb, 0, 0))
	if !bytes.Equal(dramAt(t, exp, src, n), back) {
		t.Fatal("the exporter's DRAM differs after a copy into the import")
	}
}
