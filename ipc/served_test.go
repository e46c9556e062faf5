package ipc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/internal/hlsimtest"
	"github.com/gaudi-go/gaudi/memory"
	"golang.org/x/sys/unix"
)

// servedRig opens the served compute node path with a memory manager and
// a DMA engine; done closes them.
func servedRig(path string) (d *device.Device, m *memory.Manager, e *dma.Engine, done func(), err error) {
	if d, err = device.Open(path); err != nil {
		return nil, nil, nil, nil, err
	}
	if m, err = memory.New(d, memory.Options{}); err != nil {
		d.Close()
		return nil, nil, nil, nil, err
	}
	if e, err = dma.New(m, dma.Options{}); err != nil {
		m.Close()
		d.Close()
		return nil, nil, nil, nil, err
	}
	return d, m, e, func() { e.Close(); m.Close(); d.Close() }, nil
}

// childServedExport is process A on a served node ($NODE): it fills a
// device buffer with pattern, exports it on $ADDR and prints the handle;
// it exits when stdin closes.
func childServedExport() int {
	fail := func(err error) int { fmt.Println("ERR", err); return 1 }
	d, m, _, done, err := servedRig(os.Getenv("NODE"))
	if err != nil {
		return fail(err)
	}
	defer done()
	_, closeExport, err := exportPattern(d, m)
	if err != nil {
		return fail(err)
	}
	defer closeExport()
	os.Stdin.Read(make([]byte, 1))
	return 0
}

// serverFDs counts the descriptors of process pid.
func serverFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestDeviceToDeviceThroughServedNodes: two processes on devices served
// by hlsim (out-of-tree driver): A exports device memory, B imports it
// (REG_DMABUF_FD through its served node) and copies it into its own
// device memory with its own engines; the bytes are A's.
func TestDeviceToDeviceThroughServedNodes(t *testing.T) {
	hlsimtest.Skip(t)
	t.Setenv("GAUDI_SIM_DRIVER", "oot")
	s := hlsimtest.Serve(t, "gaudi2:2")
	addr := abstractAddr(t)
	c := startChild(t, selfExe(t), []string{childEnv + "=served-export", "ADDR=" + addr, "NODE=" + s.Node(0, false)}, nil)
	hs, ok := strings.CutPrefix(c.line(t), "HANDLE ")
	if !ok {
		t.Fatal("no handle from the exporter")
	}
	h, err := ParseHandle(hs)
	if err != nil {
		t.Fatal(err)
	}
	_, m, e, done, err := servedRig(s.Node(1, false))
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	im, err := Import(ctx, addr, h)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	peer, err := im.MapInto(m)
	if err != nil {
		t.Fatalf("REG_DMABUF_FD through a served node: %v", err)
	}
	defer peer.Close()
	local, err := m.Alloc(devSize, memory.AllocOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	copyPatternIn(t, ctx, e, local, peer)
	im.Close()
}

// TestServedImportByGuessedNumber: REG_DMABUF_FD through a served node
// takes the descriptor number as the caller's: numbers the caller does
// not have are refused (EBADF), whatever the server holds under them.
func TestServedImportByGuessedNumber(t *testing.T) {
	hlsimtest.Skip(t)
	t.Setenv("GAUDI_SIM_DRIVER", "oot")
	s := hlsimtest.Serve(t, "gaudi2:2")
	addr := abstractAddr(t)
	c := startChild(t, selfExe(t), []string{childEnv + "=served-export", "ADDR=" + addr, "NODE=" + s.Node(0, false)}, nil)
	if l := c.line(t); !strings.HasPrefix(l, "HANDLE ") {
		t.Fatalf("exporter: %s", l)
	}
	_, m, _, done, err := servedRig(s.Node(1, false))
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	// Numbers this process does not have; the server has its own.
	for fd := 3; fd < 64; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
			continue // one of ours
		}
		b, err := m.Import(fd, devSize)
		if err == nil {
			b.Close()
			t.Fatalf("import of descriptor %d, which this process does not have, succeeded: the server's descriptor was taken", fd)
		}
		if !errors.Is(err, unix.EBADF) {
			t.Errorf("import of descriptor %d this process does not have: %v, want EBADF", fd, err)
		}
	}
}

// childSelfImport opens the served node $NODE, exports a buffer and
// imports its own export 5,000 times without unmapping, prints how many
// imports it got and how many were refused with ENOMEM, and exits
// without closing anything.
func childSelfImport() int {
	fail := func(err error) int { fmt.Println("ERR", err); return 1 }
	_, m, _, _, err := servedRig(os.Getenv("NODE"))
	if err != nil {
		return fail(err)
	}
	b, err := m.Alloc(devSize, memory.AllocOptions{})
	if err != nil {
		return fail(err)
	}
	x, err := b.Export(0, devSize, memory.ExportOptions{})
	if err != nil {
		return fail(err)
	}
	got, refused := 0, 0
	for range 5000 {
		_, err := m.Import(x.Fd(), devSize)
		switch {
		case err == nil:
			got++
		case errors.Is(err, unix.ENOMEM):
			refused++
		default:
			return fail(err)
		}
	}
	fmt.Println("IMPORTS", got, refused)
	os.Exit(0) // without closing: the server releases what the file held
	return 0
}

// TestServedSelfImportsBounded: a client of a served node imports its own
// export 5,000 times and exits without unmapping: the imports are bounded
// per file, the device is not left taken (another user opens it, no
// EBUSY), and the server's descriptor count comes back down.
func TestServedSelfImportsBounded(t *testing.T) {
	hlsimtest.Skip(t)
	t.Setenv("GAUDI_SIM_DRIVER", "oot")
	s := hlsimtest.Serve(t, "gaudi2:1")
	before := serverFDs(t, s.Pid)
	c := startChild(t, selfExe(t), []string{childEnv + "=self-import", "NODE=" + s.Node(0, false)}, nil)
	l := c.line(t)
	var got, refused int
	if _, err := fmt.Sscanf(l, "IMPORTS %d %d", &got, &refused); err != nil {
		t.Fatalf("child: %s", l)
	}
	t.Logf("%d imports, %d refused; server descriptors: %d before, %d with the client's imports", got, refused, before, serverFDs(t, s.Pid))
	if refused == 0 || got > 1000 {
		t.Errorf("%d self-imports on one file, %d refused: not bounded", got, refused)
	}
	c.cmd.Wait()
	deadline := time.Now().Add(time.Minute)
	for {
		d, err := device.Open(s.Node(0, false))
		if err == nil {
			d.Close()
			break
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			t.Fatalf("another client opens the device after the importer exited: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for n := serverFDs(t, s.Pid); n > before+2; n = serverFDs(t, s.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("server holds %d descriptors after the importer exited, %d before", n, before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
