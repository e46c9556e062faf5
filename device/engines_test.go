package device

import (
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/sim"
)

// TestEngineStatusJoined: the dump is the driver's strings without the
// NUL each one ends with, in the ASIC's own layout.
func TestEngineStatusJoined(t *testing.T) {
	for _, tt := range []struct {
		asic        sim.ASIC
		first, last string
	}{
		{sim.Gaudi2, "\nCORE  EDMA  is_idle", "\nCORE  ROT  is_idle"},
		{sim.Gaudi3, "\nDIE  PDMA  is_idle", "\nHD  ARC_FARM_DUP  is_idle"},
	} {
		s := testSystem(t, sim.Default(tt.asic, 1))
		d, err := openSim(s.Device(0))
		if err != nil {
			t.Fatal(err)
		}
		st, err := d.EngineStatus()
		d.Close()
		if err != nil {
			t.Fatalf("%v: %v", tt.asic, err)
		}
		if strings.Contains(st, "\x00") {
			t.Errorf("%v: NUL in the engine status", tt.asic)
		}
		if !strings.HasPrefix(st, tt.first) || !strings.Contains(st, tt.last) {
			t.Errorf("%v: engine status lacks %q first or %q:\n%s", tt.asic, tt.first, tt.last, st)
		}
		// Every row follows the newline of the line before it.
		if strings.Contains(st, "\n ") {
			t.Errorf("%v: a line starts with a space:\n%s", tt.asic, st)
		}
	}
}
