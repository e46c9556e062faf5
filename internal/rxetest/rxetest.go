// Package rxetest holds what the tests that run against the kernel's
// Soft-RoCE (rdma_rxe, in the VM harness scripts/vmtest) share: the
// skip-or-fail rule for a missing prerequisite and the rxe device's IPv4
// address, and the perftest processes (Peer, RetryPeer) the interop and
// benchmark tests run. It is for tests only. Package ib's own tests
// cannot import it (it imports ib) and keep their copy of SkipOrFail.
package rxetest

import (
	"net/netip"
	"os"
	"testing"

	"github.com/gaudi-go/gaudi/ib"
)

// SkipOrFail skips the test for reason, or fails it inside the VM harness
// (GAUDI_VMTEST=1), where every prerequisite must be there.
func SkipOrFail(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("GAUDI_VMTEST") == "1" {
		t.Fatalf("GAUDI_VMTEST=1 but %s", reason)
	}
	t.Skip(reason)
}

// Addr returns the IPv4 address of an rxe device, from its RoCE v2 GIDs
// (::ffff:a.b.c.d), which the RDMA CM resolves back to the device:
// loopback on rxe. Without one, or without the RDMA CM's node rdmaCM
// (cm.DevicePath, module rdma_ucm), the test is skipped (SkipOrFail).
func Addr(t testing.TB, rdmaCM string) netip.Addr {
	t.Helper()
	if _, err := os.Stat(rdmaCM); err != nil {
		SkipOrFail(t, "no "+rdmaCM+" (modprobe rdma_ucm)")
	}
	devs, err := ib.Devices()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		if d.DriverID != ib.DriverRXE || d.UverbsPath == "" {
			continue
		}
		c, err := ib.Open(d)
		if err != nil {
			t.Fatal(err)
		}
		gids, err := c.GIDTable()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gids {
			if g.GID.Is4In6() {
				return g.GID.Unmap()
			}
		}
	}
	SkipOrFail(t, "no rxe device with an IPv4 address")
	return netip.Addr{}
}
