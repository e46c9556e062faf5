package device

import (
	"errors"
	"testing"

	"github.com/gaudi-go/gaudi/sim"
	"golang.org/x/sys/unix"
)

func TestFirmwareRequestsSim(t *testing.T) {
	s := testSystem(t, sim.Default(sim.Gaudi2, 1))
	defer s.Close()
	d, err := openSimControl(s.Device(0))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// The simulated firmware has no security module and no passthrough
	// handler: EIO once the driver's checks pass.
	if _, err := d.SecuredAttestation(0x1234); !errors.Is(err, unix.EIO) {
		t.Errorf("attestation: %v, want EIO", err)
	}
	for _, tc := range []struct {
		name string
		sub  uint32
		size int
		want unix.Errno
	}{
		{"versions", FWPassthroughVersions, 64, unix.EIO},
		{"unknown sub-opcode", 1, 64, unix.EINVAL},
		{"too large", FWPassthroughVersions, 1<<20 + 1, unix.EINVAL},
		{"no buffer", FWPassthroughVersions, 0, unix.ENOMEM},
	} {
		err := d.FWGenericRequest(tc.sub, make([]byte, tc.size))
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}
