package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/internal/hlsimtest"
	"github.com/gaudi-go/gaudi/memory"
)

// TestIntegrationServedNode traces examples/dma on a node tools/hlsim
// serves: with no Gaudi and no habanalabs driver, the program's ioctls are
// still system calls on a device node, so hltrace -transfers pairs each CS
// with the wait that saw it complete, and -decode-cb decodes its LIN_DMA
// packets.
func TestIntegrationServedNode(t *testing.T) {
	requireRoot(t)
	s := hlsimtest.Serve(t, "gaudi2:1")
	dir := t.TempDir()
	const comm = "hltrace-served" // the example under a name to filter on (at most 15 bytes, as comm)
	example := filepath.Join(dir, comm)
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to build examples/dma: %v", err)
	}
	if out, err := exec.Command(gocmd, "build", "-o", example, "github.com/gaudi-go/gaudi/examples/dma").CombinedOutput(); err != nil {
		t.Fatalf("go build examples/dma: %v\n%s", err, out)
	}

	tr := startTracer(t, "-transfers", "-decode-cb", "-c", comm)

	run := exec.Command(example, "-size", "4194304")
	run.Env = s.Env()
	if b, err := run.CombinedOutput(); err != nil || !bytes.Contains(b, []byte("verified")) {
		t.Fatalf("examples/dma on the served node: %v\n%s", err, b)
	}
	time.Sleep(200 * time.Millisecond) // the last events cross the ring buffer
	got := tr.interrupt(t)
	t.Logf("hltrace:\n%s", got)
	// Every CS of the copies completed, paired with its wait.
	cs := regexp.MustCompile(`(?m)^\S+\s+\d+\s+` + regexp.QuoteMeta(comm) + `\s+CS fd=\d+ seq=(\d+) .*-> COMPLETED after .* \(\d+ wait\(s\)`)
	if n := len(cs.FindAllString(got, -1)); n < 3 {
		t.Errorf("%d CSs paired with their waits, want one per copy (3 at least)", n)
	}
	if !regexp.MustCompile(`seq=\d+ chunk0 q=\d+ \+0x0 LIN_DMA src=0x[0-9a-f]+ dst=0x[0-9a-f]+.* size=\d+`).MatchString(got) {
		t.Error("no decoded LIN_DMA packet")
	}
	if !regexp.MustCompile(`transfers: [1-9]\d* completed, 0 aborted, 0 outstanding`).MatchString(got) {
		t.Error("no transfer summary with completed transfers and none outstanding")
	}
}

// TestIntegrationServedGaudi3 traces a Gaudi3 DMA on a node tools/hlsim
// serves. Its DMA goes through PDMA channel rings, not CS: hltrace names
// the channel blocks MAP_BLOCK maps, decodes the interrupt waits, and with
// -decode-cb reads the LIN_PDMA packets from the rings (the served node's
// block mapping is a memory file, which process_vm_readv reads; on
// hardware it is MMIO). The program is this binary (runG3DMA), which
// stays alive until the trace is read: a ring is read when its wait's
// event arrives, from the program's memory.
func TestIntegrationServedGaudi3(t *testing.T) {
	requireRoot(t)
	s := hlsimtest.Serve(t, "gaudi3:2")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	prog := exec.Command(exe)
	prog.Env = append(s.Env(), programEnv+"=g3dma")
	progIn, err := prog.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	progOut, err := prog.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var progErr bytes.Buffer
	prog.Stderr = &progErr
	if err := prog.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		progIn.Close()
		prog.Wait()
	}()

	tr := startTracer(t, "-decode-cb", "-p", strconv.Itoa(prog.Process.Pid))

	// The program opens the device, copies host to device and back, and
	// says "verified" (or why not).
	fmt.Fprintln(progIn, "go")
	line, err := bufio.NewReader(progOut).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "verified" {
		t.Fatalf("the Gaudi3 DMA program: %q, %v\n%s", line, err, progErr.String())
	}
	time.Sleep(500 * time.Millisecond) // the events cross the ring buffer, the rings are read
	got := tr.interrupt(t)
	t.Logf("hltrace:\n%s", got)
	for _, c := range []struct {
		what string
		re   string
	}{
		{"MAP_BLOCK of a named PDMA channel block",
			`MEMORY\s+fd=\d+ op=MAP_BLOCK block="PDMA ch \d+ \(die [01] group [0-3]\) PQM CH_A" flags=0 -> handle=0x[0-9a-f]+ size=4096 = 0`},
		{"the block's mmap at its handle", `mmap\s+fd=\d+ addr=0x0 len=4096 prot=0x3 flags=0x1 off=0x2[0-9a-f]{15} = 0x[0-9a-f]+`},
		{"a decoded interrupt wait",
			`WAIT_CS\s+fd=\d+ interrupt=\d+ (addr=0x[0-9a-f]+|cq_handle=0x[0-9a-f]+ cq_offset=0x[0-9a-f]+) target=\d+ timeout_us=\d+ flags=INTERRUPT\S* -> status=COMPLETED`},
		{"the host-to-device LIN_PDMA from the ring",
			`(?m)^    PDMA ch \d+ msq=\d+ LIN_PDMA\{Src:0x[0-9a-f]+ Dst:0x[0-9a-f]+ Size:65536 HostToDevice .*\} src_host=0x[0-9a-f]+$`},
		{"the device-to-host LIN_PDMA from the ring",
			`(?m)^    PDMA ch \d+ msq=\d+ LIN_PDMA\{Src:0x[0-9a-f]+ Dst:0x[0-9a-f]+ Size:65536 .*\} dst_host=0x[0-9a-f]+$`},
		{"a job's last LIN_PDMA advancing the channel's completion queue",
			`(?m)^    PDMA ch \d+ msq=\d+ LIN_PDMA\{Src:0x[0-9a-f]+ Dst:0x[0-9a-f]+ Size:\d+ .*AdvanceCompletionQueue.*\}`},
	} {
		if !regexp.MustCompile(c.re).MatchString(got) {
			t.Errorf("no %s (%s)", c.what, c.re)
		}
	}
	if strings.Contains(got, "registers unreadable") {
		t.Error("the served block's registers were unreadable")
	}
}

// runG3DMA is the program of TestIntegrationServedGaudi3: after a line on
// standard input, it copies 64 KiB host to device and back on the first
// device through package dma, prints "verified" or the error, and exits
// at the end of its input, its rings and buffers mapped until then.
func runG3DMA() {
	bufio.NewReader(os.Stdin).ReadString('\n')
	var closers []io.Closer
	if err := g3dma(&closers); err != nil {
		fmt.Println(err)
	} else {
		fmt.Println("verified")
	}
	io.Copy(io.Discard, os.Stdin)
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i].Close()
	}
	os.Exit(0)
}

func g3dma(closers *[]io.Closer) error {
	const n = 64 << 10
	d, err := device.Open("")
	if err != nil {
		return err
	}
	*closers = append(*closers, d)
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		return err
	}
	*closers = append(*closers, m)
	e, err := dma.New(m, dma.Options{})
	if err != nil {
		return err
	}
	*closers = append(*closers, e)
	src, err := m.AllocHost(n, memory.HostOptions{})
	if err != nil {
		return err
	}
	dst, err := m.AllocHost(n, memory.HostOptions{})
	if err != nil {
		return err
	}
	dev, err := m.Alloc(n, memory.AllocOptions{})
	if err != nil {
		return err
	}
	for i, b := 0, src.Bytes(); i < len(b); i++ {
		b[i] = byte(i*7 + 1)
	}
	ctx := context.Background()
	if err := e.CopyToDevice(ctx, dev.Range(0, n), src.Range(0, n)); err != nil {
		return err
	}
	if err := e.CopyToHost(ctx, dst.Range(0, n), dev.Range(0, n)); err != nil {
		return err
	}
	if !bytes.Equal(src.Bytes(), dst.Bytes()) {
		return fmt.Errorf("the bytes differ after host -> device -> host")
	}
	return nil
}
