package device_test

import (
	"os"
	"testing"

	"github.com/gaudi-go/gaudi/internal/leakcheck"
	"github.com/gaudi-go/gaudi/simdevice"
)

// TestMain fails the run when the tests leave descriptors, mappings,
// goroutines or unclosed objects behind (see internal/leakcheck). The
// examples open the process's simulated server, which stays for the
// process; it is closed before the check.
func TestMain(m *testing.M) {
	os.Exit(leakcheck.Run(m, leakcheck.AfterRun(func() {
		if s, err := simdevice.System(); err == nil {
			s.Close()
		}
	})))
}
