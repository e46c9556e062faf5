// Command ioctldemo issues the calls a Gaudi program makes, on files that
// are not a Gaudi, so that hltrace has something to show on a machine
// without one: INFO HW_IP_INFO, MEMORY ALLOC, CB CREATE, a CS on two
// queues and a WAIT_CS on /dev/null, and a dma-buf SYNC pair on a memfd.
// The kernel refuses each (ENOTTY: /dev/null has no such ioctl), which is
// all a tracer needs: hltrace decodes what the caller asked at entry,
// whatever the answer. The program then starts a copy of itself that
// halts an engine core and waits, to show that hltrace follows children.
//
//	go run ./tools/hltrace -asic gaudi2 -- go run ./tools/hltrace/internal/ioctldemo
//
// The README's hltrace section shows the output. Nothing here talks to a
// device: the library's ioctl package owns every call on a Gaudi's node.
package main

import (
	"fmt"
	"os"
	"os/exec"

	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/uapi/dmabuf"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

func main() {
	child := len(os.Args) > 1 && os.Args[1] == "-child"
	null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		fail(err)
	}
	var refused int
	count := func(errno unix.Errno) {
		if errno != 0 {
			refused++
		}
	}
	if child {
		count(engineCores(null, hl.HL_ENGINE_CORE_HALT, []uint32{0, 6}))
		count(waitCS(null, 2))
		fmt.Printf("ioctldemo -child: %d calls on /dev/null, %d refused\n", 2, refused)
		return
	}

	count(hwIPInfo(null))
	count(memAlloc(null, 2<<20))
	count(cbCreate(null, 4096))
	count(submit(null, []hl.CSChunk{
		chunk(uint32(hl.GAUDI2_QUEUE_ID_PDMA_0_0), 0x1000, 64),
		chunk(uint32(hl.GAUDI2_QUEUE_ID_DCORE0_EDMA_0_0), 0x2000, 96),
	}))
	count(waitCS(null, 1))
	memfd, err := unix.MemfdCreate("ioctldemo", unix.MFD_CLOEXEC)
	if err != nil {
		fail(err)
	}
	count(dmabufSync(memfd, dmabuf.DMA_BUF_SYNC_START|dmabuf.DMA_BUF_SYNC_READ))
	count(dmabufSync(memfd, dmabuf.DMA_BUF_SYNC_END|dmabuf.DMA_BUF_SYNC_READ))
	fmt.Printf("ioctldemo: %d calls on /dev/null and a memfd, %d refused\n", 7, refused)

	exe, err := os.Executable()
	if err != nil {
		fail(err)
	}
	cmd := exec.Command(exe, "-child")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fail(err)
	}
}

func chunk(queue uint32, cb uint64, size uint32) hl.CSChunk {
	var c hl.CSChunk
	c.QueueIndex = queue
	c.SetCBHandle(cb)
	c.SetCBSize(size)
	return c
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "ioctldemo:", err)
	os.Exit(1)
}
