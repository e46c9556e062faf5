// Command rdma hands Gaudi memory to the RDMA NIC closest to the Gaudi:
// it ranks the machine's NICs by PCIe distance, opens the closest one with
// a user verbs node, asks whether it can register dma-bufs (as UCX and
// NCCL do), exports a range of device memory as a dma-buf and registers
// it at its device address, and registers host memory as the fallback.
//
//	go run ./examples/rdma [-device SEL]
//
// A machine without an RDMA NIC can make a software one (Soft-RoCE) with
//
//	modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0
//
// rxe cannot register dma-bufs, so there the example shows the refusal and
// the host-memory path.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/memory"
)

// newCommand returns the example's command line.
func newCommand() *cli.Command {
	return cli.New("rdma", "rdma [-device SEL]",
		"rdma registers device memory (as a dma-buf) and host memory with the RDMA NIC closest to the\n"+
			"Gaudi.")
}

func main() {
	cmd := newCommand()
	cmd.ParseOrExit(os.Args[1:])
	if cmd.Flags.NArg() > 0 {
		cmd.Fatal(cmd.UsageError("unexpected argument %q", cmd.Flags.Arg(0)))
	}
	cmd.Fatal(run(cmd, os.Stdout))
}

// run does the example's work, printing to w.
func run(cmd *cli.Command, w io.Writer) error {
	d, err := cmd.OpenDevice()
	if err != nil {
		return err
	}
	defer d.Close()
	gaudi, err := d.PCIAddress()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "device %s at %s\n", d, gaudi)

	nics, err := ib.Devices()
	if err != nil {
		return err
	}
	if len(nics) == 0 {
		fmt.Fprintln(w, "no RDMA NICs on this machine: nothing to register with")
		fmt.Fprintln(w, "(a software one: modprobe rdma_rxe && rdma link add rxe0 type rxe netdev <netdev>)")
		return nil
	}
	var nic *ib.Device
	for _, n := range ib.NICsForNode(device.Node{PCIAddress: gaudi}, nics) {
		fmt.Fprintf(w, "  %-10s %-8s %-14s %s\n", n.NIC.Name, n.NIC.DriverID, n.Distance, n.NIC.UverbsPath)
		if nic == nil && n.NIC.UverbsPath != "" {
			nic = &n.NIC
		}
	}
	if nic == nil {
		fmt.Fprintln(w, "no NIC has a user verbs node (is ib_uverbs loaded?)")
		return nil
	}

	ctx, err := ib.Open(*nic)
	if err != nil {
		return err
	}
	defer ctx.Close()
	pd, err := ctx.AllocPD()
	if err != nil {
		return err
	}
	defer pd.Close()
	ok, err := ctx.ProbeDMABuf()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "opened %s (driver id %d from %s); dma-buf registration supported: %v\n",
		nic.Name, ctx.DriverID(), ctx.Device().DriverIDSource, ok)

	m, err := memory.New(d, memory.Options{})
	if err != nil {
		return err
	}
	defer m.Close()
	buf, err := m.Alloc(8<<20, memory.AllocOptions{})
	if err != nil {
		return err
	}
	defer buf.Close()
	access := ib.AccessLocalWrite | ib.AccessRemoteWrite | ib.AccessRemoteRead
	rb, err := ib.RegisterBuffer(pd, buf, 2<<20, 4<<20, access)
	switch {
	case err == nil:
		mr := rb.MR()
		fmt.Fprintf(w, "device memory [%#x, +%#x) registered: iova %#x lkey %#x rkey %#x (%v)\n",
			rb.DMABuf().DeviceVA(), mr.Len(), mr.IOVA(), mr.LKey(), mr.RKey(), mr.Access())
		if err := rb.Close(); err != nil {
			return err
		}
	case errors.Is(err, ib.ErrDMABufNotSupported):
		fmt.Fprintf(w, "device memory: %v\n", err)
	default:
		return err
	}

	host, err := m.AllocHost(4<<20, memory.HostOptions{})
	if err != nil {
		return err
	}
	defer host.Close()
	mr, err := pd.RegBytes(host.Bytes(), access)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "host memory %#x, +%#x registered: lkey %#x rkey %#x\n", mr.IOVA(), mr.Len(), mr.LKey(), mr.RKey())
	if err := mr.Close(); err != nil {
		return err
	}
	fmt.Fprintln(w, "done: regions deregistered")
	return nil
}
