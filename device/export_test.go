package device

import (
	"testing"

	"github.com/gaudi-go/gaudi/ioctl"
)

// UseSysFS makes Open and OpenControl list the nodes of the sysfs tree
// at root and open them with file until the test ends. Tests that use it
// must not run in parallel.
func UseSysFS(t testing.TB, root string, file func(path string) (ioctl.File, error)) {
	old := live
	live = opener{sys: SysFS{Root: root}, file: file}
	t.Cleanup(func() { live = old })
}
