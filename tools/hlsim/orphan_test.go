package main

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gaudi-go/gaudi/internal/hlsimtest"
	"github.com/gaudi-go/gaudi/packet"
	g3 "github.com/gaudi-go/gaudi/uapi/gaudi3"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Issue 23's reproduction through served nodes: a process stages a Gaudi3
// PDMA channel (a FENCE, then a LIN_PDMA from device memory to its host
// address X), and another process holds the descriptor and a mapping of
// the channel block, through which it can release the fence without an
// ioctl. The opener then runs a new program image at the same pid (exec)
// or exits and a new process takes its pid, mapping X itself. The fence
// is released: nothing may land at X, and the staged work must be
// aborted, not done.

const (
	orphanPage = 4096
	orphanCh   = 5 // the PDMA channel staged
	// orphanBase is where the opener maps its buffer, so that the new
	// image can map X again: an address below the race detector's shadow
	// (which starts at 32 TiB), away from the Go heap's arena hints
	// (0x..c0_0000_0000) and far below the kernel's mmap base. With an
	// address the kernel chose, the new image found it taken by its own
	// runtime about once in 60 runs under -race ("map 0x7f7b743f5000:
	// file exists").
	orphanBase = 0x0a5a_0000_0000
)

// orphanChild runs the processes of these tests (see child):
//
//   - "stage NODE": the opener. It stages the channel, prints "staged FD
//     HANDLE SIZE X" (its descriptor of NODE, the block's mmap handle and
//     size, and X), then on "exec" runs "image X" in its place, on "exit"
//     exits.
//   - "image X": a program that never opened the device. It maps the
//     opener's three pages around X at the same address, fills them, and
//     prints their checksum at once and on each "sum"; on "regs NODE" it
//     opens NODE, maps the staged channel's block and prints "PI CI BASE".
func orphanChild(f []string) int {
	switch f[0] {
	case "stage":
		return stageChannel(f[1])
	case "image":
		x, _ := strconv.ParseUint(f[1], 10, 64)
		return orphanImage(x)
	}
	return hostileChild(f) // hostile_test.go
}

// ioctlOn runs request req with argument arg on descriptor fd.
func ioctlOn(fd int, req uintptr, arg unsafe.Pointer) error {
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg)); e != 0 {
		return e
	}
	return nil
}

// mapBlockOn maps the HW block at addr (MEMORY MAP_BLOCK), then its mmap
// handle through the node, and returns the mapping and the handle.
func mapBlockOn(fd int, addr uint64) ([]byte, uint64, error) {
	var a hl.MemArgs
	a.In().Op = hl.HL_MEM_OP_MAP_BLOCK
	a.In().MapBlock().BlockAddr = addr
	if err := ioctlOn(fd, hl.DRM_IOCTL_HL_MEMORY, unsafe.Pointer(&a)); err != nil {
		return nil, 0, fmt.Errorf("map block: %w", err)
	}
	h := a.Out().BlockHandle()
	win, err := unix.Mmap(fd, int64(h), int(a.Out().BlockSize()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, 0, fmt.Errorf("mmap block: %w", err)
	}
	return win, h, nil
}

// chanReg returns the register at off of a channel block mapping.
func chanReg(win []byte, off uint64) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&win[off]))
}

// stageChannel is the opener's part: three pages of its memory mapped to
// the device ([0, page) the staged packets, [page, 2 pages) X, then the
// setup ring) and device memory; a setup ring copies the staged packets
// and the bytes to send into device memory; the channel is then pointed
// at the staged ring there, where it waits on its FENCE.
func stageChannel(node string) int {
	fail := func(what string, err error) int {
		fmt.Printf("error: %s: %v\n", what, err)
		return 1
	}
	p, err := unix.MmapPtr(-1, 0, unsafe.Add(unsafe.Pointer(nil), orphanBase), 3*orphanPage,
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE)
	if err != nil {
		return fail("mmap", err)
	}
	buf := unsafe.Slice((*byte)(p), 3*orphanPage)
	base := uint64(uintptr(unsafe.Pointer(&buf[0])))
	fd, err := unix.Open(node, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fail("open", err)
	}
	var m hl.MemArgs
	m.In().Op = hl.HL_MEM_OP_MAP
	m.In().Flags = hl.HL_MEM_USERPTR
	m.In().MapHost().HostVirtAddr = base
	m.In().MapHost().MemSize = 3 * orphanPage
	if err := ioctlOn(fd, hl.DRM_IOCTL_HL_MEMORY, unsafe.Pointer(&m)); err != nil {
		return fail("map host memory", err)
	}
	hva := m.Out().DeviceVirtAddr()
	var a hl.MemArgs
	a.In().Op = hl.HL_MEM_OP_ALLOC
	a.In().Alloc().MemSize = 4 * orphanPage
	if err := ioctlOn(fd, hl.DRM_IOCTL_HL_MEMORY, unsafe.Pointer(&a)); err != nil {
		return fail("alloc device memory", err)
	}
	var d hl.MemArgs
	d.In().Op = hl.HL_MEM_OP_MAP
	d.In().MapDevice().Handle = a.Out().Handle()
	if err := ioctlOn(fd, hl.DRM_IOCTL_HL_MEMORY, unsafe.Pointer(&d)); err != nil {
		return fail("map device memory", err)
	}
	dva := d.Out().DeviceVirtAddr()
	win, h, err := mapBlockOn(fd, g3.PDMAChannelBlock(orphanCh))
	if err != nil {
		return fail("channel block", err)
	}
	pqm := func(fn func(b *packet.Builder)) []byte {
		b := packet.NewBuilder(packet.Gaudi3PQM, nil)
		fn(&b)
		return b.Bytes()
	}
	staged := pqm(func(b *packet.Builder) {
		b.Gaudi3Fence(packet.Gaudi3Fence{ID: 0, Target: 1, Dec: 1})
		b.LinPDMA(packet.LinPDMA{Src: dva + orphanPage, Dst: hva + orphanPage, Size: orphanPage,
			WriteCompletion: true, CompletionAddr: dva + 2*orphanPage, CompletionData: 0x600d})
	})
	setup := pqm(func(b *packet.Builder) {
		b.LinPDMA(packet.LinPDMA{Src: hva, Dst: dva, Size: uint32(len(staged))})
		b.LinPDMA(packet.LinPDMA{Src: 0xeeeeeeeeeeeeeeee, Dst: dva + orphanPage, Size: orphanPage, Memset: true})
		b.LinPDMA(packet.LinPDMA{Src: 0, Dst: dva + 2*orphanPage, Size: 8, Memset: true})
	})
	copy(buf, staged)
	copy(buf[2*orphanPage:], setup)
	reg := func(off uint64) *atomic.Uint32 { return chanReg(win, off) }
	wait := func(what string, cond func() bool) error {
		for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(100 * time.Microsecond) {
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: not within a minute", what)
			}
		}
		return nil
	}
	program := func(ring uint64, pi int) error {
		// The mode write resets the channel; the ring is set once it is
		// taken (the simulator marks it with bit 31).
		reg(g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG).Store(g3.PQM_DESC_SUBMIT_MODE_PI_CI_IN_MEM)
		if err := wait("mode write", func() bool {
			return reg(g3.PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG).Load()&(1<<31) != 0
		}); err != nil {
			return err
		}
		reg(g3.PDMA_CH_A_PQM_CH_MSQ_SIZE).Store(orphanPage - 1)
		reg(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_L).Store(uint32(ring))
		reg(g3.PDMA_CH_A_PQM_CH_MSQ_BASE_H).Store(uint32(ring >> 32))
		reg(g3.PDMA_CH_A_PQM_CH_MSQ_PI).Store(uint32(pi))
		return nil
	}
	if err := program(hva+2*orphanPage, len(setup)); err != nil {
		return fail("setup ring", err)
	}
	if err := wait("setup ring", func() bool { return reg(g3.PDMA_CH_A_PQM_CH_MSQ_CI).Load() == uint32(len(setup)) }); err != nil {
		return fail("setup ring", err)
	}
	if err := program(dva, len(staged)); err != nil {
		return fail("staged ring", err)
	}
	x := base + orphanPage
	fmt.Printf("staged %d %d %d %d\n", fd, h, len(win), x)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch sc.Text() {
		case "exit":
			return 0
		case "exec":
			exe, err := os.Executable()
			if err != nil {
				return fail("exec", err)
			}
			var env []string
			for _, e := range os.Environ() {
				if !strings.HasPrefix(e, hlsimChildEnv+"=") {
					env = append(env, e)
				}
			}
			env = append(env, hlsimChildEnv+"=image "+strconv.FormatUint(x, 10))
			return fail("exec", unix.Exec(exe, []string{exe}, env))
		}
	}
	return 0
}

// orphanImage is the program that never opened the device.
func orphanImage(x uint64) int {
	b, err := unix.MmapPtr(-1, 0, unsafe.Add(unsafe.Pointer(nil), x-orphanPage), 3*orphanPage,
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE)
	if err != nil || uint64(uintptr(b)) != x-orphanPage {
		fmt.Printf("error: map %#x: %v\n", x-orphanPage, err)
		return 1
	}
	mem := unsafe.Slice((*byte)(b), 3*orphanPage)
	for i := range mem {
		mem[i] = byte(i*7 + 3)
	}
	sum := func() uint64 {
		h := fnv.New64a()
		h.Write(mem)
		return h.Sum64()
	}
	fmt.Println("image", sum())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 1 && f[0] == "sum":
			fmt.Println("image", sum())
		case len(f) == 2 && f[0] == "regs":
			fd, err := unix.Open(f[1], unix.O_RDWR|unix.O_CLOEXEC, 0)
			if err != nil {
				fmt.Println("error: open:", err)
				continue
			}
			win, _, err := mapBlockOn(fd, g3.PDMAChannelBlock(orphanCh))
			if err != nil {
				fmt.Println("error:", err)
				unix.Close(fd)
				continue
			}
			fmt.Println(chanReg(win, g3.PDMA_CH_A_PQM_CH_MSQ_PI).Load(), chanReg(win, g3.PDMA_CH_A_PQM_CH_MSQ_CI).Load(),
				chanReg(win, g3.PDMA_CH_A_PQM_CH_MSQ_BASE_L).Load())
			unix.Munmap(win)
			unix.Close(fd)
		}
	}
	return 0
}

// lineProc is a child process driven line by line.
type lineProc struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// childCommand is this test binary to run as child cmd (see child).
func childCommand(t *testing.T, cmd string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(exe)
	c.Env = append(os.Environ(), hlsimChildEnv+"="+cmd)
	return c
}

// startLines starts this test binary as child cmd.
func startLines(t *testing.T, cmd string) *lineProc {
	t.Helper()
	c := childCommand(t, cmd)
	c.Stderr = os.Stderr
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	p := &lineProc{t: t, cmd: c, in: in, out: bufio.NewReader(out)}
	t.Cleanup(p.end)
	return p
}

// end ends the process.
func (p *lineProc) end() {
	p.in.Close()
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

// line reads the process's next line (a minute at most).
func (p *lineProc) line() string {
	p.t.Helper()
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := p.out.ReadString('\n')
		ch <- res{strings.TrimSpace(s), err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			p.t.Fatalf("child %d: %v (said %q)", p.cmd.Process.Pid, r.err, r.s)
		}
		return r.s
	case <-time.After(time.Minute):
		p.t.Fatalf("child %d said nothing for a minute", p.cmd.Process.Pid)
	}
	return ""
}

// ask sends a line and returns the answer.
func (p *lineProc) ask(l string) string {
	p.t.Helper()
	fmt.Fprintln(p.in, l)
	return p.line()
}

// atPid starts child cmd as process pid, which must be free: the kernel's
// next pid is set just below it (ns_last_pid) and the start retried until
// another process does not take it first.
func atPid(t *testing.T, pid int, cmd string) *lineProc {
	t.Helper()
	for range 200 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			t.Fatalf("set the next pid: %v", err)
		}
		p := startLines(t, cmd)
		if p.cmd.Process.Pid == pid {
			return p
		}
		p.end()
	}
	t.Fatalf("no process got pid %d in 200 tries", pid)
	return nil
}

// TestOrphanChannelAborted runs the reproduction with an exec of the
// opener and with its exit and the reuse of its pid.
func TestOrphanChannelAborted(t *testing.T) {
	for _, how := range []string{"exec", "exit"} {
		t.Run(how, func(t *testing.T) {
			s := hlsimtest.Serve(t, "gaudi3:1")
			node := s.Node(0, false)
			a := startLines(t, "stage "+node)
			var fd int
			var h, size, x uint64
			if l := a.line(); func() bool {
				_, err := fmt.Sscanf(l, "staged %d %d %d %d", &fd, &h, &size, &x)
				return err != nil
			}() {
				t.Fatalf("opener: %q\n%s", l, s.Log())
			}
			// The holder: this process, with the opener's descriptor (as
			// a child that inherited it) and its own mapping of the block.
			pidfd, err := unix.PidfdOpen(a.cmd.Process.Pid, 0)
			if err != nil {
				t.Fatal(err)
			}
			held, err := unix.PidfdGetfd(pidfd, fd, 0)
			unix.Close(pidfd)
			if err != nil {
				t.Fatal(err)
			}
			win, err := unix.Mmap(held, int64(h), int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			if err != nil {
				unix.Close(held)
				t.Fatal(err)
			}
			released := false
			release := func() {
				if !released {
					released = true
					unix.Munmap(win)
					unix.Close(held)
				}
			}
			defer release()
			ci := chanReg(win, g3.PDMA_CH_A_PQM_CH_MSQ_CI)
			if ci.Load() != 0 {
				t.Fatalf("MSQ_CI %d before the fence", ci.Load())
			}

			var image *lineProc
			if how == "exec" {
				image = a
				fmt.Fprintln(a.in, "exec")
			} else {
				pid := a.cmd.Process.Pid
				fmt.Fprintln(a.in, "exit")
				if err := a.cmd.Wait(); err != nil {
					t.Fatalf("opener: %v", err)
				}
				image = atPid(t, pid, "image "+strconv.FormatUint(x, 10))
			}
			before := image.line()
			if !strings.HasPrefix(before, "image ") {
				t.Fatalf("new image: %q", before)
			}

			// The holder releases the fence through its mapping.
			chanReg(win, g3.PDMA_CH_A_PQM_CH_FENCE_INC_0).Store(1)
			const aborted = "its work was aborted, not run"
			for deadline := time.Now().Add(time.Minute); ci.Load() == 0 && !strings.Contains(s.Log(), aborted); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("a minute after the fence was released, MSQ_CI is %d and no abort was reported\n%s", ci.Load(), s.Log())
				}
			}
			if got := image.ask("sum"); got != before {
				t.Fatalf("the staged LIN_PDMA wrote into the program at X (%s, was %s)", got, before)
			}
			if got := ci.Load(); got != 0 {
				t.Fatalf("the staged work ran after its opener's %s: MSQ_CI %d (completed, not aborted)\n%s", how, got, s.Log())
			}
			if !strings.Contains(s.Log(), "(0 CSs, 1 PDMA channels)") {
				t.Fatalf("the abort's report:\n%s", s.Log())
			}
			// The holder's release frees the device; the next user finds
			// the channel clean.
			release()
			var regs string
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
				if regs = image.ask("regs " + node); !strings.Contains(regs, "busy") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the device is still held a minute after the holder closed it: %s", regs)
				}
			}
			if regs != "0 0 0" {
				t.Fatalf("the next user's channel registers (PI CI BASE_L): %s, want 0 0 0", regs)
			}
			if got := image.ask("sum"); got != before {
				t.Fatalf("the program at X changed (%s, was %s)", got, before)
			}
		})
	}
}
