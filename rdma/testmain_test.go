package rdma

import (
	"os"
	"testing"

	"github.com/gaudi-go/gaudi/internal/leakcheck"
)

// TestMain fails the run when the tests leave descriptors, mappings,
// goroutines or unclosed objects behind (see internal/leakcheck): a Conn's
// dispatcher and CM watcher, its staging rings and verbs objects.
func TestMain(m *testing.M) { os.Exit(leakcheck.Run(m)) }
