package control_test

import (
	"errors"
	"os"
	"testing"

	"github.com/gaudi-go/gaudi/control"
	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// TestClosedObjects: calls on a closed DebugFS, or on a device that was
// closed, fail with an error matching os.ErrClosed.
func TestClosedObjects(t *testing.T) {
	tests := []struct {
		name string
		call func(t *testing.T) error
	}{
		{"DebugFS.Read32", func(t *testing.T) error {
			f, err := control.OpenDebugFSDir(debugfsDir(t, map[string]string{"addr": "", "data32": "0x1\n"}))
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			_, err = f.Read32(0)
			return err
		}},
		{"Engines", func(t *testing.T) error {
			d := open(t, sim.Gaudi2)
			d.Close()
			return control.StallEngines(d, device.Gaudi2Engine(hl.GAUDI2_DCORE0_ENGINE_ID_MME))
		}},
		{"BlockInfo", func(t *testing.T) error {
			d := open(t, sim.Gaudi2)
			d.Close()
			_, _, err := control.BlockInfo(d, 0)
			return err
		}},
		{"FlushPCIWrites", func(t *testing.T) error {
			d := open(t, sim.Gaudi2)
			d.Close()
			return control.FlushPCIWrites(d)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(t); !errors.Is(err, os.ErrClosed) {
				t.Errorf("%v, want an error matching os.ErrClosed", err)
			}
		})
	}
}
