package pcie

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// UnpackFixture writes the files of a txtar-like sysfs fixture under
// root: each "-- path --" line starts a file whose content is the lines
// up to the next marker; text before the first marker is a comment. It
// is for tests of this package and of the tools that read links
// (hlperf's verdict), which keep fixtures as text because Go module zips
// reject the ':' of PCI addresses in file names.
func UnpackFixture(root string, archive []byte) error {
	var name string
	var body strings.Builder
	flush := func() error {
		if name == "" {
			return nil
		}
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, []byte(body.String()), 0o644)
	}
	for _, line := range strings.SplitAfter(string(archive), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "-- "); ok && strings.HasSuffix(m, " --") {
			if err := flush(); err != nil {
				return err
			}
			name = strings.TrimSuffix(m, " --")
			if name == "" || strings.Contains(name, "..") || filepath.IsAbs(name) {
				return fmt.Errorf("fixture: bad file name %q", name)
			}
			body.Reset()
			continue
		}
		if name != "" {
			body.WriteString(line)
		}
	}
	return flush()
}
