package cm

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/internal/rxetest"
)

// TestKernelConnectRejected has our server reject a request with private
// data: the client's Connect fails with ErrRejected, the consumer's reason
// (28) and the data.
func TestKernelConnectRejected(t *testing.T) {
	addr := rxetest.Addr(t, DevicePath)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ch := openChannel(t)
	const port = 18640
	l := listenAt(t, ch, addr, port)
	cli := resolved(ctx, t, ch, netip.AddrPortFrom(addr, port))
	c := newEnd(t, cli, 4096)
	res := make(chan error, 1)
	go func() {
		_, err := cli.Connect(ctx, c.qp, ConnParam{})
		res <- err
	}()
	req, _, err := l.GetRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := req.Reject(bytes.Repeat([]byte("busy"), 40)); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("Reject with 160 bytes: %v, want ErrBadArgument", err)
	}
	if err := req.Reject([]byte("busy")); err != nil {
		t.Fatal(err)
	}
	err = <-res
	var ee *EventError
	if !errors.Is(err, ErrRejected) || !errors.As(err, &ee) || ee.Status != RejectConsumer || !bytes.HasPrefix(ee.PrivateData, []byte("busy")) {
		t.Fatalf("Connect to a rejecting server: %v; want ErrRejected, reason %d, data \"busy\"", err, RejectConsumer)
	}
	t.Logf("rejected: %v (%d bytes of private data)", err, len(ee.PrivateData))
	for _, c := range []interface{ Close() error }{req, l} {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
	c.close(t)
}

// TestKernelResolveNoRoute resolves an address the guest has no route to
// (TEST-NET-1, RFC 5737): a typed error, at once or as ADDR_ERROR. It
// runs only in the VM harness, whose guest has no network beyond its
// dummy device, so nothing leaves the machine.
func TestKernelResolveNoRoute(t *testing.T) {
	rxetest.Addr(t, DevicePath)
	if os.Getenv("GAUDI_VMTEST") != "1" {
		t.Skip("resolves an outside address: only in the VM harness's isolated guest")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := openChannel(t).CreateID()
	if err != nil {
		t.Fatal(err)
	}
	err = id.ResolveAddr(ctx, netip.AddrPort{}, netip.MustParseAddrPort("192.0.2.1:18641"))
	if !errors.Is(err, ErrAddrResolution) && !errors.Is(err, unix.ENETUNREACH) && !errors.Is(err, unix.EHOSTUNREACH) {
		t.Fatalf("resolve an unroutable address: %v; want ErrAddrResolution or ENETUNREACH", err)
	}
	t.Logf("no route: %v", err)
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, netip.AddrPort{}); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("resolve no address: %v, want ErrBadArgument", err)
	}
}

// TestKernelListenerCloseRejectsQueued closes a listener whose connection
// request was read from the kernel but not yet taken by GetRequest: the
// request's ID must be destroyed with it, which rejects the client at
// once, instead of leaving the client waiting for an answer that never
// comes and the ID alive until the Channel closes.
func TestKernelListenerCloseRejectsQueued(t *testing.T) {
	addr := rxetest.Addr(t, DevicePath)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	chS, chC := openChannel(t), openChannel(t)
	const port = 18642
	l := listenAt(t, chS, addr, port)
	cli := resolved(ctx, t, chC, netip.AddrPortFrom(addr, port))
	c := newEnd(t, cli, 4096)
	defer c.close(t)
	// The client waits for its answer at most 20 s: the CM's own timeout
	// for a REQ nobody answers is far longer.
	cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
	defer ccancel()
	res := make(chan error, 1)
	go func() {
		_, err := cli.Connect(cctx, c.qp, ConnParam{})
		res <- err
	}()
	// Wait until the request sits in the listener's queue.
	for {
		l.mu.Lock()
		n := len(l.events)
		l.mu.Unlock()
		if n > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no connection request reached the listener")
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-res; !errors.Is(err, ErrRejected) {
		t.Fatalf("Connect to a listener closed with the request queued: %v, want ErrRejected", err)
	}
	chS.mu.Lock()
	left := len(chS.ids)
	chS.mu.Unlock()
	if left != 0 {
		t.Errorf("%d IDs left on the server's Channel after its listener closed", left)
	}
}
