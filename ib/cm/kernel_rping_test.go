package cm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/ib"
	"github.com/gaudi-go/gaudi/internal/rxetest"
)

// Interoperability with rping (rdmacm-utils, librdmacm's example): its
// protocol (librdmacm/examples/rping.c) is one RC connection with no
// private data; every message is a 16-byte big-endian struct
// rping_rdma_info {buf u64, rkey u32, size u32}, received into a 16-byte
// receive. Per iteration the client sends the info of its start buffer
// ("rdma-ping-N: " and an ASCII ramp, NUL-terminated); the server RDMA
// READs it and answers with any info ("go ahead"); the client sends the
// info of its second buffer; the server RDMA WRITEs what it read (strlen
// + 1 bytes) there and answers again; the client compares (-V).

const rpingSize = 64

// rpingPeer returns the rping binary, failing under the VM harness when
// it is missing.
func rpingPeer(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("rping")
	if err != nil {
		rxetest.SkipOrFail(t, "no rping (apt-get install rdmacm-utils)")
	}
	return p
}

func rpingInfo(buf uint64, rkey, size uint32) []byte {
	b := binary.BigEndian.AppendUint64(nil, buf)
	b = binary.BigEndian.AppendUint32(b, rkey)
	return binary.BigEndian.AppendUint32(b, size)
}

// rpingMessage is what the rping client puts in its start buffer for
// iteration ping (rping.c, rping_test_client).
func rpingMessage(ping, start int) []byte {
	b := make([]byte, rpingSize)
	cc := copy(b, fmt.Sprintf("rdma-ping-%d: ", ping))
	c := start
	for i := cc; i < rpingSize; i++ {
		b[i] = byte(c)
		if c++; c > 122 {
			c = 65
		}
	}
	b[rpingSize-1] = 0
	return b
}

// rpingRun runs rping with args until ctx ends and returns its output and
// exit error through done.
func rpingRun(ctx context.Context, t *testing.T, args ...string) <-chan error {
	t.Helper()
	cmd := exec.CommandContext(ctx, rpingPeer(t), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		t.Logf("rping %v:\n%s", args, out.String())
		if err == nil && !bytes.Contains(out.Bytes(), []byte("ping data: rdma-ping-0: ")) {
			err = errors.New("rping printed no ping data")
		}
		done <- err
	}()
	return done
}

// TestKernelRpingServer is our client against rping's server: three
// iterations, the echo the server RDMA WRITEs back compared with what it
// RDMA READ, and rping's own printout of the data it read.
func TestKernelRpingServer(t *testing.T) {
	addr := rxetest.Addr(t, DevicePath)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const port, count = 18610, 3
	done := rpingRun(ctx, t, "-s", "-v", "-a", addr.String(), "-p", strconv.Itoa(port), "-S", strconv.Itoa(rpingSize))
	ch := openChannel(t)
	bufs := hostBuffer(t, 4096) // start@0, rdma@1024, send@2048, recv@3072
	var c *end
	for c == nil {
		// rping listens when it gets there: retry the rejections its CM
		// sends until then (reason 8, no listener), as perftest does.
		id := resolved(ctx, t, ch, netip.AddrPortFrom(addr, port))
		e, err := makeEnd(id, bufs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.qp.PostRecv(ib.RecvWR{ID: 1, SG: e.sge(3072, 16)}); err != nil {
			t.Fatal(err)
		}
		_, err = id.Connect(ctx, e.qp, ConnParam{})
		if err == nil {
			c = e
			break
		}
		e.close(t)
		if !errors.Is(err, ErrRejected) || ctx.Err() != nil {
			t.Fatalf("connect to rping: %v", err)
		}
		select {
		case err := <-done:
			t.Fatalf("rping exited before we connected: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	start := 65
	send := func(info []byte) {
		t.Helper()
		copy(c.buf[2048:], info)
		if _, err := c.qp.PostSend(ib.SendWR{ID: 2, Op: ib.OpSend, Flags: ib.SendSignaled, SG: c.sge(2048, 16)}); err != nil {
			t.Fatal(err)
		}
		c.wait(t)
	}
	goAhead := func() {
		t.Helper()
		if wc := c.waitRecv(t); wc.ByteLen != 16 {
			t.Fatalf("go-ahead of %d bytes", wc.ByteLen)
		}
		if _, err := c.qp.PostRecv(ib.RecvWR{ID: 1, SG: c.sge(3072, 16)}); err != nil {
			t.Fatal(err)
		}
	}
	for ping := range count {
		msg := rpingMessage(ping, start)
		if start++; start > 122 {
			start = 65
		}
		copy(c.buf[0:], msg)
		clear(c.buf[1024 : 1024+rpingSize])
		send(rpingInfo(c.mr.IOVA(), c.mr.RKey(), rpingSize))
		goAhead()
		send(rpingInfo(c.mr.IOVA()+1024, c.mr.RKey(), rpingSize))
		goAhead()
		if got := c.buf[1024 : 1024+rpingSize]; !bytes.Equal(got, msg) {
			t.Fatalf("ping %d: rping wrote back %q, want %q", ping, got, msg)
		}
	}
	if err := c.id.Disconnect(c.qp); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("rping server: %v", err)
	}
	c.close(t)
}

// TestKernelRpingClient is rping's client (-V: it compares what comes
// back) against our server, which RDMA READs the client's buffer, checks
// it, and RDMA WRITEs it back.
func TestKernelRpingClient(t *testing.T) {
	addr := rxetest.Addr(t, DevicePath)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const port, count = 18611, 3
	l := listenAt(t, openChannel(t), addr, port)
	done := rpingRun(ctx, t, "-c", "-v", "-V", "-a", addr.String(), "-p", strconv.Itoa(port), "-S", strconv.Itoa(rpingSize), "-C", strconv.Itoa(count))
	id, _, err := l.GetRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := makeEnd(id, hostBuffer(t, 4096)) // data@0, send@2048, recv@3072
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.qp.PostRecv(ib.RecvWR{ID: 1, SG: s.sge(3072, 16)}); err != nil {
		t.Fatal(err)
	}
	if err := id.Accept(ctx, s.qp, ConnParam{}); err != nil {
		t.Fatal(err)
	}
	info := func() (uint64, uint32, uint32) {
		t.Helper()
		if wc := s.waitRecv(t); wc.ByteLen != 16 {
			t.Fatalf("info of %d bytes", wc.ByteLen)
		}
		b := s.buf[3072:]
		buf, rkey, size := binary.BigEndian.Uint64(b), binary.BigEndian.Uint32(b[8:]), binary.BigEndian.Uint32(b[12:])
		if size == 0 || size > 1024 {
			t.Fatalf("info: size %d", size)
		}
		if _, err := s.qp.PostRecv(ib.RecvWR{ID: 1, SG: s.sge(3072, 16)}); err != nil {
			t.Fatal(err)
		}
		return buf, rkey, size
	}
	rdma := func(op ib.SendOp, raddr uint64, rkey, n uint32) {
		t.Helper()
		if _, err := s.qp.PostSend(ib.SendWR{ID: 3, Op: op, Flags: ib.SendSignaled, RemoteAddr: raddr, RKey: rkey, SG: s.sge(0, int(n))}); err != nil {
			t.Fatal(err)
		}
		s.wait(t)
	}
	goAhead := func() {
		t.Helper()
		copy(s.buf[2048:], rpingInfo(s.mr.IOVA(), s.mr.RKey(), rpingSize))
		if _, err := s.qp.PostSend(ib.SendWR{ID: 2, Op: ib.OpSend, Flags: ib.SendSignaled, SG: s.sge(2048, 16)}); err != nil {
			t.Fatal(err)
		}
		s.wait(t)
	}
	start := 65
	for ping := range count {
		buf, rkey, size := info()
		clear(s.buf[:1024])
		rdma(ib.OpRDMARead, buf, rkey, size)
		want := rpingMessage(ping, start)
		if start++; start > 122 {
			start = 65
		}
		if got := s.buf[:size]; !bytes.Equal(got, want[:size]) {
			t.Fatalf("ping %d: read %q, want %q", ping, got, want[:size])
		}
		goAhead()
		buf, rkey, _ = info()
		rdma(ib.OpRDMAWrite, buf, rkey, uint32(bytes.IndexByte(s.buf[:size], 0)+1))
		goAhead()
	}
	if err := <-done; err != nil {
		t.Errorf("rping client: %v", err)
	}
	if _, err := id.await(ctx, "DISCONNECT", EventDisconnected); err != nil {
		t.Errorf("after rping's disconnect: %v", err)
	}
	s.close(t)
	if err := l.Close(); err != nil {
		t.Error(err)
	}
}
