// Command alloc allocates device memory and pinned host memory on a Gaudi
// (or the simulator when none is present), maps both into the device's
// address space, and shows how the library finds what covers an address.
//
//	go run ./examples/alloc [-device SEL]
package main

import (
	"fmt"
	"log"
	"os"

	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/memory"
)

func main() {
	log.SetFlags(0)
	cmd := cli.New("alloc", "alloc [-device SEL]",
		"alloc allocates device memory and pinned host memory, maps both into the device's address space\n"+
			"and shows how the library finds what covers an address.")
	cmd.ParseOrExit(os.Args[1:])
	if cmd.Flags.NArg() > 0 {
		cmd.Fatal(cmd.UsageError("unexpected argument %q", cmd.Flags.Arg(0)))
	}
	d, err := cmd.OpenDevice()
	// A refusal in the words of every command (cli.ErrorText): a busy
	// device names its owner.
	cmd.Fatal(err)
	defer d.Close()
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		log.Fatalf("alloc: %v", err)
	}
	defer m.Close()

	before, err := d.DRAMUsage()
	if err != nil {
		log.Fatalf("alloc: %v", err)
	}
	buf, err := m.Alloc(1<<30, memory.AllocOptions{})
	if err != nil {
		log.Fatalf("alloc: %v", err)
	}
	host, err := m.AllocHost(64<<20, memory.HostOptions{HugePages: true})
	if err != nil {
		log.Fatalf("alloc: %v", err)
	}
	after, err := d.DRAMUsage()
	if err != nil {
		log.Fatalf("alloc: %v", err)
	}
	fmt.Printf("device %s\n", d)
	fmt.Printf("device buffer: VA %#x, %d MiB (allocated %d MiB: whole DRAM pages of %d MiB), handle %d\n",
		buf.VA(), buf.Size()>>20, buf.AllocatedSize()>>20, d.HWIPInfo().DRAMPageSize>>20, buf.Handle())
	fmt.Printf("host buffer:   %d MiB at host %p, device VA %#x, huge pages: %q\n",
		host.Size()>>20, &host.Bytes()[0], host.VA(), host.HugePages())
	fmt.Printf("DRAM free:     %d MiB -> %d MiB (this context holds %d MiB)\n", before.Free>>20, after.Free>>20, after.Context>>20)
	for _, addr := range []uint64{buf.VA() + 4096, host.VA() + 8, addrOf(host.Bytes()) + 16, 0x1234} {
		r := m.Lookup(addr)
		fmt.Printf("lookup %#x: %s memory, offset %d\n", addr, r.Kind, r.Offset)
	}
	if err := host.Close(); err != nil {
		log.Fatalf("alloc: %v", err)
	}
	if err := buf.Close(); err != nil {
		log.Fatalf("alloc: %v", err)
	}
	final, _ := d.DRAMUsage()
	fmt.Printf("after Close:   %d MiB free\n", final.Free>>20)
}
