// Command export allocates device memory, exports a range of it as a
// dma-buf file descriptor (the form an RDMA NIC or another process takes),
// and prints what the kernel says about the descriptor.
//
//	go run ./examples/export [-device SEL]
package main

import (
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/memory"
)

func main() {
	log.SetFlags(0)
	cmd := cli.New("export", "export [-device SEL]",
		"export exports a range of device memory as a dma-buf file descriptor and prints what the kernel\n"+
			"says about it.")
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
		log.Fatalf("export: %v", err)
	}
	defer m.Close()
	buf, err := m.Alloc(64<<20, memory.AllocOptions{})
	if err != nil {
		log.Fatalf("export: %v", err)
	}
	const offset, size = 2 << 20, 8 << 20
	x, err := buf.Export(offset, size, memory.ExportOptions{Name: "example-export"})
	if err != nil {
		log.Fatalf("export: %v", err)
	}
	fmt.Printf("device %s\n", d)
	fmt.Printf("exported [%#x, +%#x) of the buffer at device VA %#x as fd %d\n", x.Offset(), x.Size(), x.DeviceVA(), x.Fd())
	info, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", x.Fd()))
	if err != nil {
		log.Fatalf("export: %v", err)
	}
	fmt.Printf("/proc/self/fdinfo/%d:\n", x.Fd())
	for _, line := range strings.Split(strings.TrimSpace(string(info)), "\n") {
		fmt.Printf("    %s\n", line)
	}
	if d.Simulated() {
		fmt.Println("note: on the simulator the fd is a write-only file of a memfd (a udmabuf where /dev/udmabuf exists, which the CPU may mmap),")
		fmt.Println("      or on a node hlsim serves a file of the server's; a real Gaudi dma-buf is not CPU-mappable and is meant")
		fmt.Println("      for a NIC (ib.RegDMABufMR) or another device.")
	}
	if err := buf.Close(); err != nil {
		fmt.Printf("closing the buffer while the export is open: %v\n", err)
	}
	if err := x.Close(); err != nil {
		log.Fatalf("export: %v", err)
	}
	if err := buf.Close(); err != nil {
		log.Fatalf("export: %v", err)
	}
	fmt.Println("export closed, buffer freed")
}
