// Command hlinfo lists the Gaudi devices of this machine: index, PCI
// address, ASIC, module id, DRAM, status, the ioctl encoding the kernel
// speaks, dma-buf export support and the device nodes, then the RDMA NICs
// with their driver, uverbs node and PCIe distance to each Gaudi (same
// switch, same root port, same NUMA node, other). With no Gaudi
// present, or with GAUDI_DEVICE=sim, it lists the simulator's devices in the
// same shape.
//
// Usage:
//
//	hlinfo [-v] [-json]
//
// -v adds every INFO value of each device; -json prints one JSON document
// for scripts. Listing opens control nodes only, so it works while other
// processes own the devices.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	verbose := flag.Bool("v", false, "print every INFO value")
	asJSON := flag.Bool("json", false, "print JSON")
	flag.Parse()
	if err := run(os.Stdout, os.Getenv("GAUDI_DEVICE"), *verbose, *asJSON); err != nil {
		fmt.Fprintln(os.Stderr, "hlinfo:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, choice string, verbose, asJSON bool) error {
	inv, err := collect(choice, verbose)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(w, inv)
	}
	return writeText(w, inv, verbose)
}
