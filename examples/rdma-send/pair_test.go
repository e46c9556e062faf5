package main

import (
	"context"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

// The two-guest harness (GAUDI_VMTEST_PAIR=1 scripts/vmtest/run.sh, make
// vmtest-pair) runs TestTwoGuests in both guests, rxe0 on each one's NIC,
// and tells each its role and both addresses (scripts/vmtest/run.sh).
const (
	pairRoleEnv = "GAUDI_VMTEST_PAIR_ROLE" // server or client
	pairSelfEnv = "GAUDI_VMTEST_PAIR_SELF" // this guest's IPv4 address
	pairPeerEnv = "GAUDI_VMTEST_PAIR_PEER" // the other guest's
	pairPort    = 18701
	pairArgs    = " -size 12M"
)

// TestTwoGuests runs the example across two machines: the receiving end
// in the server guest, the sending end in the client guest, each a
// process on a simulated Gaudi2 of its own, over rxe to rxe. The receiver
// verifies every byte it got in device memory against the pattern; the
// sender reports what it sent. The client retries until the server
// listens (the guests boot at their own pace).
func TestTwoGuests(t *testing.T) {
	role := os.Getenv(pairRoleEnv)
	if role == "" {
		t.Skip("runs in the two-guest VM harness only (GAUDI_VMTEST_PAIR=1 scripts/vmtest/run.sh ./examples/rdma-send)")
	}
	self, err := netip.ParseAddr(os.Getenv(pairSelfEnv))
	if err != nil {
		t.Fatalf("%s: %v", pairSelfEnv, err)
	}
	peer, err := netip.ParseAddr(os.Getenv(pairPeerEnv))
	if err != nil {
		t.Fatalf("%s: %v", pairPeerEnv, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
	defer cancel()
	var args, want string
	switch role {
	case "server":
		args = "-listen " + netip.AddrPortFrom(self, pairPort).String() + pairArgs
		want = "receiver: verified: 12582912 bytes of device memory identical to the sender's"
	case "client":
		args = "-connect " + netip.AddrPortFrom(peer, pairPort).String() + pairArgs
		want = "sender: 12582912 bytes of device memory"
	default:
		t.Fatalf("%s=%q, want server or client", pairRoleEnv, role)
	}
	for attempt := 1; ; attempt++ {
		p, lines, stderr := end(ctx, t, "gaudi2", args)
		var out strings.Builder
		for l := range lines {
			out.WriteString(l + "\n")
		}
		err := p.Wait()
		t.Logf("%s, attempt %d:\n%s%s", role, attempt, out.String(), stderr)
		if err == nil {
			if !strings.Contains(out.String(), want) {
				t.Fatalf("output lacks %q", want)
			}
			return
		}
		// Only the sender retries: the receiver may not listen yet.
		if role != "client" || ctx.Err() != nil {
			t.Fatalf("%s: %v", role, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v; gave up", role, err)
		case <-time.After(2 * time.Second):
		}
	}
}
