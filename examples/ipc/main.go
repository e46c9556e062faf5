// Command ipc shares device memory between two processes, each with its own
// device: the parent writes a pattern into its HBM by DMA, exports the range
// as a dma-buf and serves it with an ipc.Exporter; it then runs itself again
// as the importer child, which opens the next free device, imports the
// descriptor over the Unix socket (SCM_RIGHTS, after the exporter checked
// its uid) and checks the bytes. Last, the parent revokes the export and
// shows that a further import is refused.
//
//	go run ./examples/ipc [-device SEL]
//
// The importer child opens a device of the same kind as the parent's: the
// next free simulated device, or the next free Gaudi of the same chip.
//
// A Gaudi dma-buf cannot be mapped or read by the CPU, on hardware and on
// the simulator alike: on hardware the importer would register the
// descriptor with an RDMA NIC (ibv_reg_dmabuf_mr) or import it into
// another device. On the simulator the child checks the bytes through the
// simulator's test hook sim.TestHookReadDMABuf, and says so.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/ipc"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
)

const (
	envRole   = "GAUDI_IPC_EXAMPLE_ROLE"
	envSocket = "GAUDI_IPC_EXAMPLE_SOCKET"
	envHandle = "GAUDI_IPC_EXAMPLE_HANDLE"
	size      = 4 << 20
)

func pattern(i int) byte { return byte(i>>12) ^ byte(i*31) }

func main() {
	log.SetFlags(0)
	cmd := cli.New("ipc", "ipc [-device SEL]",
		"ipc shares device memory between two processes, each with its own device: the parent exports\n"+
			"a dma-buf of its HBM, a child it starts imports it and checks the bytes, then the parent\n"+
			"revokes the export.")
	cmd.ParseOrExit(os.Args[1:])
	if cmd.Flags.NArg() > 0 {
		cmd.Fatal(cmd.UsageError("unexpected argument %q", cmd.Flags.Arg(0)))
	}
	if os.Getenv(envRole) == "importer" {
		if err := importer(cmd); err != nil {
			log.Fatalf("ipc importer: %v", err)
		}
		return
	}
	if err := exporter(cmd); err != nil {
		log.Fatalf("ipc exporter: %v", err)
	}
}

// peerSelector is the device selector of the importer child: a device
// of the same kind as d, the next free one.
func peerSelector(d *device.Device) string {
	if d.Simulated() {
		return "sim"
	}
	return device.Selector{Kind: device.SelectASIC, ASIC: d.ASIC()}.String()
}

func exporter(cmd *cli.Command) error {
	d, err := cmd.OpenDevice()
	if err != nil {
		return err
	}
	defer d.Close()
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		return err
	}
	defer m.Close()
	e, err := dma.New(m, dma.Options{})
	if err != nil {
		return err
	}
	defer e.Close()

	host, err := m.AllocHost(size, memory.HostOptions{})
	if err != nil {
		return err
	}
	defer host.Close()
	for i := range host.Bytes() {
		host.Bytes()[i] = pattern(i)
	}
	buf, err := m.Alloc(2*size, memory.AllocOptions{})
	if err != nil {
		return err
	}
	defer buf.Close()
	const offset = size // export the second half of the buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.CopyToDevice(ctx, buf.Range(offset, size), host.Range(0, size)); err != nil {
		return fmt.Errorf("DMA host -> HBM: %w", err)
	}
	x, err := buf.Export(offset, size, memory.ExportOptions{Name: "ipc-example"})
	if err != nil {
		return err
	}
	defer x.Close()

	srv, err := ipc.NewExporter("", ipc.ExporterOptions{})
	if err != nil {
		return err
	}
	defer srv.Close()
	dev := ipc.DeviceIDOf(d)
	h, err := srv.Export(x, dev)
	if err != nil {
		return err
	}
	fmt.Printf("exporter pid %d: device %s (PCI %s, module %d)\n", os.Getpid(), d, dev.PCIAddress, dev.ModuleID)
	fmt.Printf("exporter: wrote %d MiB by DMA at device VA %#x, exported [%#x, +%#x) as dma-buf fd %d\n",
		size>>20, buf.VA()+offset, x.Offset(), x.Size(), x.Fd())
	fmt.Printf("exporter: serving on %s; handle (%d bytes, no fd number in it):\n  %s\n", srv.Addr(), len(h.String())/2, h)

	self, err := os.Executable()
	if err != nil {
		return err
	}
	child := exec.CommandContext(ctx, self)
	child.Env = append(os.Environ(), envRole+"=importer", envSocket+"="+srv.Addr(), envHandle+"="+h.String(),
		"GAUDI_DEVICE="+peerSelector(d))
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		return err
	}
	if err := child.Start(); err != nil {
		return fmt.Errorf("importer child: %w", err)
	}
	// Relay the importer's lines; once it has checked the bytes, close the
	// export, which revokes it: the importer is told.
	lines := bufio.NewScanner(out)
	ready := false
	for !ready && lines.Scan() {
		fmt.Println(lines.Text())
		ready = lines.Text() == importerReady
	}
	if !ready {
		child.Wait()
		return fmt.Errorf("importer child stopped before checking the bytes")
	}
	if err := x.Close(); err != nil {
		return err
	}
	fmt.Printf("exporter: closed the dma-buf, which revoked the export (%d exports left)\n", srv.Exported())
	for lines.Scan() {
		fmt.Println(lines.Text())
	}
	if err := child.Wait(); err != nil {
		return fmt.Errorf("importer child: %w", err)
	}
	if _, err := ipc.Import(ctx, srv.Addr(), h); errors.Is(err, ipc.ErrRevoked) {
		fmt.Printf("exporter: a further import is refused: %v\n", err)
	} else {
		return fmt.Errorf("import after revoke: %v, want ErrRevoked", err)
	}
	if err := srv.Close(); err != nil {
		return err
	}
	if err := buf.Close(); err != nil {
		return fmt.Errorf("free the device buffer after the revocation: %w", err)
	}
	fmt.Println("exporter: freed the device buffer; done")
	return nil
}

// importerReady is the importer's line after it checked the bytes.
const importerReady = "importer: bytes checked; waiting for the exporter to revoke"

func importer(cmd *cli.Command) error {
	// The child owns a device of its own, as a real peer process would:
	// the parent holds the first free one, so this is the next
	// (GAUDI_DEVICE, from the parent: peerSelector).
	d, err := cmd.OpenDevice()
	if err != nil {
		return err
	}
	defer d.Close()
	h, err := ipc.ParseHandle(os.Getenv(envHandle))
	if err != nil {
		return err
	}
	fmt.Printf("importer pid %d: device %s; handle from pid %d, device %s (module %d), VA %#x, %d bytes\n",
		os.Getpid(), d, h.PID, h.PCIAddress, h.ModuleID, h.DeviceVA, h.Size)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A Cache imports and watches the exporter, so it learns of the
	// revocation.
	cache := ipc.NewCache(4)
	defer cache.Close()
	addr := os.Getenv(envSocket)
	ci, err := cache.Get(ctx, addr, h)
	if err != nil {
		return err
	}
	defer ci.Release()
	if err := checkImport(d, ci.Imported); err != nil {
		return err
	}
	fmt.Println(importerReady)
	select {
	case <-ci.Revoked():
	case <-ctx.Done():
		return fmt.Errorf("no revocation: %w", ctx.Err())
	}
	fmt.Printf("importer: told that buffer %x was revoked; releasing it\n", h.BufferID)
	ci.Release()
	if _, err := cache.Get(ctx, addr, h); !errors.Is(err, ipc.ErrRevoked) {
		return fmt.Errorf("get after the revocation: %v, want ErrRevoked", err)
	}
	fmt.Println("importer: a new import is refused as revoked")
	return nil
}

// checkImport checks the bytes of im on the simulator, through its test
// hook: the CPU cannot map or read a Gaudi dma-buf.
func checkImport(d *device.Device, im *ipc.Imported) error {
	fmt.Printf("importer: received fd %d, %d bytes at offset %#x of the exporter's buffer\n", im.File.Fd(), im.Size, im.Offset)
	if !d.Simulated() {
		fmt.Println("importer: real Gaudi dma-bufs are not CPU-mappable; here the importer would register the fd with a NIC (ibv_reg_dmabuf_mr)")
		return nil
	}
	if _, err := unix.Mmap(int(im.File.Fd()), 0, int(im.Size), unix.PROT_READ, unix.MAP_SHARED); err == nil {
		return fmt.Errorf("the simulator's dma-buf could be mmapped; a Gaudi dma-buf cannot")
	} else {
		fmt.Printf("importer: mmap of the dma-buf fails (%v; a real Gaudi dma-buf answers EINVAL)\n", err)
	}
	mem := make([]byte, im.Size)
	if _, err := sim.TestHookReadDMABuf(int(im.File.Fd()), 0, mem); err != nil {
		return fmt.Errorf("read through the simulator's test hook: %w", err)
	}
	for i, c := range mem {
		if c != pattern(i) {
			return fmt.Errorf("byte %d is %#x, want %#x", i, c, pattern(i))
		}
	}
	fmt.Printf("importer: all %d bytes match the pattern (read through the simulator's test hook sim.TestHookReadDMABuf, not through the dma-buf)\n", len(mem))
	fmt.Println("importer: on hardware the importer would register the fd with a NIC (ibv_reg_dmabuf_mr) or import it into another device instead")
	return nil
}
