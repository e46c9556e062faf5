package ib

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/uapi/dmabuf"
	"golang.org/x/sys/unix"
)

// Kernel tests run against the kernel's real RDMA stack: a Soft-RoCE (rxe)
// device over a netdev, with ib_uverbs and udmabuf. Where no uverbs device
// exists they skip, except under the VM harness (GAUDI_VMTEST=1), which
// provides one, where a skip would hide a failure and they fail instead.

// kernelDevice returns the rxe device to test on.
func kernelDevice(t testing.TB) Device {
	t.Helper()
	devs, err := Devices()
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	for _, d := range devs {
		if d.UverbsPath != "" && d.DriverID == DriverRXE {
			return d
		}
	}
	skipOrFail(t, "no rxe device with a uverbs node (modprobe rdma_rxe; rdma link add rxe0 type rxe netdev <dev>)")
	return Device{}
}

// skipOrFail skips with reason, or fails under the VM harness.
func skipOrFail(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("GAUDI_VMTEST") == "1" {
		t.Fatalf("GAUDI_VMTEST=1 but %s", reason)
	}
	t.Skip(reason)
}

// openFDs counts the process's open descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	e, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(e)
}

// hostBuffer maps n bytes of anonymous memory for registration.
func hostBuffer(t testing.TB, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += os.Getpagesize() {
		b[i] = 1 // fault the pages in
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

// udmabuf makes a real dma-buf of size bytes: a sealed memfd turned into
// a dma-buf by /dev/udmabuf (UDMABUF_CREATE). The caller closes it.
func udmabuf(t testing.TB, size int) int {
	t.Helper()
	memfd, err := unix.MemfdCreate("ib-test", unix.MFD_ALLOW_SEALING|unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatalf("memfd_create: %v", err)
	}
	defer unix.Close(memfd)
	if err := unix.Ftruncate(memfd, int64(size)); err != nil {
		t.Fatalf("ftruncate: %v", err)
	}
	if _, err := unix.FcntlInt(uintptr(memfd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK); err != nil {
		t.Fatalf("F_ADD_SEALS: %v", err)
	}
	dev, err := unix.Open("/dev/udmabuf", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		skipOrFail(t, "no /dev/udmabuf: "+err.Error())
	}
	defer unix.Close(dev)
	arg := &dmabuf.UdmabufCreate{Memfd: uint32(memfd), Flags: dmabuf.UDMABUF_FLAGS_CLOEXEC, Size: uint64(size)}
	fd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(dev), uintptr(dmabuf.UDMABUF_CREATE), uintptr(unsafe.Pointer(arg)))
	runtime.KeepAlive(arg)
	if errno != 0 {
		t.Fatalf("UDMABUF_CREATE: %v", errno)
	}
	link, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(fd)))
	t.Logf("udmabuf fd %d -> %s", fd, link)
	return int(fd)
}

func TestKernelDiscovery(t *testing.T) {
	dev := kernelDevice(t)
	t.Logf("device %+v", dev)
	nl, err := NetlinkDevices()
	if err != nil {
		t.Fatalf("NetlinkDevices: %v", err)
	}
	var found *NetlinkDevice
	for i := range nl {
		if nl[i].Name == dev.Name {
			found = &nl[i]
		}
	}
	if found == nil {
		t.Fatalf("netlink does not list %s: %+v", dev.Name, nl)
	}
	t.Logf("netlink %+v", *found)
	if !found.HasDriverID || found.DriverID != DriverRXE {
		t.Errorf("netlink driver id of %s = %v (reported %v), want rxe (14)", dev.Name, found.DriverID, found.HasDriverID)
	}
	if found.Chardev != dev.Uverbs {
		t.Errorf("netlink chardev %q, sysfs %q", found.Chardev, dev.Uverbs)
	}
	if dev.DriverIDSource != "netlink" {
		t.Errorf("driver id source %q, want netlink", dev.DriverIDSource)
	}
	if dev.ABIVersion != 2 {
		t.Errorf("rxe uverbs ABI version %d, want 2", dev.ABIVersion)
	}
	if dev.NodeType != 1 || dev.NodeGUID == "" {
		t.Errorf("node type %d %q, guid %q", dev.NodeType, dev.NodeTypeName, dev.NodeGUID)
	}
	if len(dev.Ports) != 1 || dev.Ports[0].State != PortActive || dev.Ports[0].LinkLayer != "Ethernet" || len(dev.Ports[0].GIDs) == 0 {
		t.Errorf("ports %+v, want one ACTIVE Ethernet port with GIDs", dev.Ports)
	}
	if dev.PCIAddress != "" {
		t.Errorf("rxe has PCI address %q", dev.PCIAddress)
	}
}

func TestKernelVerbs(t *testing.T) {
	dev := kernelDevice(t)
	fds := openFDs(t)

	ctx, err := Open(dev)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if ctx.Legacy() {
		t.Errorf("6.12 has the ioctl GET_CONTEXT, but the context fell back to write()")
	}
	if ctx.NumCompVectors() == 0 {
		t.Errorf("num_comp_vectors 0")
	}
	t.Logf("context: %d completion vectors, core support %#x", ctx.NumCompVectors(), ctx.CoreSupport())

	da, err := ctx.QueryDevice()
	if err != nil {
		t.Fatalf("QueryDevice: %v", err)
	}
	t.Logf("device attr %+v", da)
	if da.PhysPortCnt != 1 || da.MaxMR == 0 || da.MaxPD == 0 || da.MaxMRSize == 0 {
		t.Errorf("QueryDevice: %+v", da)
	}

	pa, err := ctx.QueryPort(1)
	if err != nil {
		t.Fatalf("QueryPort(1): %v", err)
	}
	t.Logf("port attr %+v", pa)
	if pa.State != PortActive || pa.LinkLayer != LinkLayerEthernet || pa.GIDTableLen == 0 {
		t.Errorf("QueryPort(1): state %v, link layer %v, gid table %d", pa.State, pa.LinkLayer, pa.GIDTableLen)
	}
	if _, err := ctx.QueryPort(2); !errors.Is(err, unix.EINVAL) {
		t.Errorf("QueryPort(2) on a one-port device: %v, want EINVAL", err)
	}

	gids, err := ctx.GIDTable()
	if err != nil {
		t.Fatalf("GIDTable: %v", err)
	}
	t.Logf("gids %+v", gids)
	if len(gids) == 0 {
		t.Errorf("empty GID table")
	}
	for _, g := range gids {
		if g.Port != 1 || !g.GID.IsValid() || g.GID.IsUnspecified() {
			t.Errorf("gid entry %+v", g)
		}
	}
	if len(gids) > 0 {
		e, err := ctx.GIDEntry(1, gids[0].Index)
		if err != nil || e != gids[0] {
			t.Errorf("GIDEntry(1, %d) = %+v, %v; the table says %+v", gids[0].Index, e, err, gids[0])
		}
	}
	if _, err := ctx.GIDEntry(1, 1000); err == nil {
		t.Errorf("GIDEntry of an empty slot succeeded")
	}
	if len(dev.Ports) == 1 && len(gids) != len(dev.Ports[0].GIDs) {
		t.Errorf("ioctl GID table has %d entries, sysfs %d", len(gids), len(dev.Ports[0].GIDs))
	}

	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatalf("AllocPD: %v", err)
	}
	buf := hostBuffer(t, 1<<20)
	mr, err := pd.RegBytes(buf, AccessLocalWrite|AccessRemoteWrite|AccessRemoteRead)
	if err != nil {
		t.Fatalf("RegMR: %v", err)
	}
	if mr.LKey() == 0 || mr.RKey() == 0 || mr.Len() != 1<<20 {
		t.Errorf("MR: lkey %#x rkey %#x len %d", mr.LKey(), mr.RKey(), mr.Len())
	}
	t.Logf("host MR handle %d lkey %#x rkey %#x", mr.Handle(), mr.LKey(), mr.RKey())

	// A remote write right without local write is refused by the core.
	if _, err := pd.RegBytes(buf, AccessRemoteWrite); !errors.Is(err, unix.EINVAL) {
		t.Errorf("RegMR(RemoteWrite only): %v, want EINVAL", err)
	}

	dfd := udmabuf(t, 1<<20)
	_, err = pd.RegDMABufMR(dfd, 0, 1<<20, 0x10000000, AccessLocalWrite|AccessRemoteRead)
	if !errors.Is(err, ErrDMABufNotSupported) || !errors.Is(err, unix.EOPNOTSUPP) {
		t.Errorf("RegDMABufMR of a udmabuf on rxe: %v, want EOPNOTSUPP (ErrDMABufNotSupported)", err)
	}
	t.Logf("RegDMABufMR: %v", err)
	unix.Close(dfd)

	ok, err := ctx.ProbeDMABuf()
	if err != nil || ok {
		t.Errorf("ProbeDMABuf = %v, %v; want false, nil on rxe", ok, err)
	}

	if err := mr.Close(); err != nil {
		t.Errorf("MR.Close: %v", err)
	}
	if err := mr.Close(); err != nil {
		t.Errorf("second MR.Close: %v", err)
	}
	if err := pd.Close(); err != nil {
		t.Errorf("PD.Close: %v", err)
	}
	if _, err := pd.RegBytes(buf, AccessLocalWrite); !errors.Is(err, ErrClosed) {
		t.Errorf("RegMR on a closed PD: %v, want ErrClosed", err)
	}
	if err := ctx.Close(); err != nil {
		t.Errorf("Context.Close: %v", err)
	}
	if _, err := ctx.AllocPD(); !errors.Is(err, ErrClosed) {
		t.Errorf("AllocPD on a closed context: %v, want ErrClosed", err)
	}
	if got := openFDs(t); got != fds {
		t.Errorf("%d descriptors open after Close, %d before", got, fds)
	}
}

// TestKernelCloseReleasesEverything leaves a PD and an MR open and checks
// that Context.Close releases them and the descriptor.
func TestKernelCloseReleasesEverything(t *testing.T) {
	dev := kernelDevice(t)
	fds := openFDs(t)
	ctx, err := Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	mr, err := pd.RegBytes(hostBuffer(t, 64<<10), AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctx.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := mr.Close(); err != nil {
		t.Errorf("MR.Close after Context.Close: %v", err)
	}
	if err := pd.Close(); err != nil {
		t.Errorf("PD.Close after Context.Close: %v", err)
	}
	if got := openFDs(t); got != fds {
		t.Errorf("%d descriptors open after Close, %d before", got, fds)
	}
}

// TestKernelLegacyWrite drives the write(2) command path the package
// falls back to on kernels without the uverbs ioctl.
func TestKernelLegacyWrite(t *testing.T) {
	dev := kernelDevice(t)
	fds := openFDs(t)
	k, err := openVerbs(dev.UverbsPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx := &Context{dev: dev, driverID: dev.DriverID, drv: driverDataFor(dev.DriverID), f: k, asyncFD: -1, pds: map[*PD]struct{}{}, legacy: true}
	if err := ctx.getContextWrite(); err != nil {
		k.close()
		t.Fatalf("write GET_CONTEXT: %v", err)
	}
	if ctx.asyncFD < 0 || ctx.NumCompVectors() == 0 {
		t.Errorf("write GET_CONTEXT: async fd %d, %d vectors", ctx.asyncFD, ctx.NumCompVectors())
	}
	da, err := ctx.QueryDevice()
	if err != nil || da.PhysPortCnt != 1 {
		t.Errorf("write QUERY_DEVICE: %+v, %v", da, err)
	}
	pa, err := ctx.QueryPort(1)
	if err != nil || pa.State != PortActive || pa.LinkLayer != LinkLayerEthernet {
		t.Errorf("write QUERY_PORT: %+v, %v", pa, err)
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatalf("write ALLOC_PD: %v", err)
	}
	mr, err := pd.RegBytes(hostBuffer(t, 1<<20), AccessLocalWrite|AccessRemoteRead)
	if err != nil {
		t.Fatalf("write REG_MR: %v", err)
	}
	if mr.LKey() == 0 {
		t.Errorf("write REG_MR: lkey 0")
	}
	if _, err := pd.RegDMABufMR(-1, 0, 4096, 0, AccessLocalWrite); !errors.Is(err, ErrDMABufNotSupported) {
		t.Errorf("RegDMABufMR on a write()-only context: %v", err)
	}
	if err := mr.Close(); err != nil {
		t.Errorf("write DEREG_MR: %v", err)
	}
	if err := pd.Close(); err != nil {
		t.Errorf("write DEALLOC_PD: %v", err)
	}
	if err := ctx.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if got := openFDs(t); got != fds {
		t.Errorf("%d descriptors open after Close, %d before (the async event fd must be closed)", got, fds)
	}
}

func TestKernelWrongDriverID(t *testing.T) {
	dev := kernelDevice(t)
	fds := openFDs(t)
	for _, id := range []DriverID{DriverMLX5, DriverSIW, DriverUnknown} {
		bad := dev
		bad.DriverID = id
		ctx, err := Open(bad)
		if err == nil {
			ctx.Close()
			t.Errorf("Open with driver id %v succeeded on %s", id, dev.Name)
			continue
		}
		if !errors.Is(err, ErrBadDriverID) || !errors.Is(err, unix.EINVAL) {
			t.Errorf("Open with driver id %v: %v, want EINVAL matching ErrBadDriverID", id, err)
		}
		var e *Error
		if !errors.As(err, &e) || e.Op != opGetContext {
			t.Errorf("Open with driver id %v: %T %v", id, err, err)
		}
	}
	if got := openFDs(t); got != fds {
		t.Errorf("%d descriptors open after failed opens, %d before", got, fds)
	}
}

// TestKernelProbeDriverID opens the device with no driver id known: Open
// must find it by asking the kernel.
func TestKernelProbeDriverID(t *testing.T) {
	dev := kernelDevice(t)
	dev.DriverID, dev.DriverIDSource = DriverUnknown, ""
	ctx, err := Open(dev)
	if err != nil {
		t.Fatalf("Open without a driver id: %v", err)
	}
	defer ctx.Close()
	if ctx.DriverID() != DriverRXE || ctx.Device().DriverIDSource != "probe" {
		t.Errorf("probed driver id %v from %q, want rxe from probe", ctx.DriverID(), ctx.Device().DriverIDSource)
	}
	if _, err := ctx.QueryPort(1); err != nil {
		t.Errorf("QueryPort with the probed id: %v", err)
	}
}

func TestKernelUnknownDevice(t *testing.T) {
	kernelDevice(t)
	if _, err := OpenName("nosuchdev9"); !errors.Is(err, ErrNoDevice) {
		t.Errorf("OpenName(nosuchdev9): %v, want ErrNoDevice", err)
	}
}

// BenchmarkRegMR1MiB measures REG_MR plus DEREG_MR of a 1 MiB host buffer
// (the pages stay faulted in; the kernel pins and unpins them each time).
func BenchmarkRegMR1MiB(b *testing.B) {
	dev := kernelDevice(b)
	ctx, err := Open(dev)
	if err != nil {
		b.Fatal(err)
	}
	defer ctx.Close()
	pd, err := ctx.AllocPD()
	if err != nil {
		b.Fatal(err)
	}
	defer pd.Close()
	buf := hostBuffer(b, 1<<20)
	b.ReportAllocs()
	b.SetBytes(1 << 20)
	for b.Loop() {
		mr, err := pd.RegBytes(buf, AccessLocalWrite|AccessRemoteRead)
		if err != nil {
			b.Fatal(err)
		}
		if err := mr.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
