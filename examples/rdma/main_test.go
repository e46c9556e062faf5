package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKernelExample runs the example against a real RDMA stack: the VM
// harness's Soft-RoCE device with the simulated Gaudi, whose dma-bufs are
// udmabufs there. Without a uverbs device it skips, except under the
// harness (GAUDI_VMTEST=1), where it fails.
func TestKernelExample(t *testing.T) {
	if m, _ := filepath.Glob("/dev/infiniband/uverbs*"); len(m) == 0 {
		if os.Getenv("GAUDI_VMTEST") == "1" {
			t.Fatal("GAUDI_VMTEST=1 but no /dev/infiniband/uverbs*")
		}
		t.Skip("no uverbs device (modprobe rdma_rxe; rdma link add rxe0 type rxe netdev <dev>)")
	}
	t.Setenv("GAUDI_DEVICE", "sim")
	t.Setenv("GAUDI_SIM_LOCKDIR", t.TempDir())
	var out bytes.Buffer
	if err := run(newCommand(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Logf("output:\n%s", out.String())
	for _, want := range []string{
		"rxe0",
		"dma-buf registration supported: false",
		"device memory: register device buffer: uverbs REG_DMABUF_MR rxe0: dma-buf registration not supported by this NIC",
		"host memory 0x",
		"done: regions deregistered",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
