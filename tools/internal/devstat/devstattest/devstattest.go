// Package devstattest holds a fixture machine for the tests of devstat
// and of the tools built on it: a sysfs and /proc tree with three Gaudi
// devices, described at the top of machine.txtar.
package devstattest

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/device"
	"golang.org/x/sys/unix"
)

//go:embed machine.txtar
var machine string

// NoDevice is an opener for devstat.Options.OpenControl that fails as an
// open of a missing node does, so a fixture's node paths never reach a
// device of the machine the tests run on.
func NoDevice(path string) (*device.Device, error) {
	return nil, &os.PathError{Op: "open", Path: path, Err: unix.ENOENT}
}

// Machine unpacks the fixture machine into a new temporary directory and
// returns it, for devstat.Options.Root.
func Machine(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	if err := unpack(root, machine); err != nil {
		t.Fatal(err)
	}
	return root
}

// unpack writes a txtar-like fixture (testdata/machine.txtar says how)
// into dir.
func unpack(dir, archive string) error {
	var name string
	var body strings.Builder
	inFile := false
	flush := func() error {
		if !inFile {
			return nil
		}
		inFile = false
		return os.WriteFile(filepath.Join(dir, name), []byte(body.String()), 0o644)
	}
	for _, line := range strings.SplitAfter(archive, "\n") {
		l := strings.TrimSuffix(line, "\n")
		if !strings.HasPrefix(l, "-- ") || !strings.HasSuffix(l, " --") || len(l) < len("-- x --") {
			if inFile {
				body.WriteString(line)
			}
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		body.Reset()
		entry := strings.TrimSpace(l[3 : len(l)-3])
		rel, target, isLink := strings.Cut(entry, " -> ")
		isDir := strings.HasSuffix(rel, "/")
		rel = strings.TrimSuffix(rel, "/")
		if !filepath.IsLocal(rel) || (filepath.IsAbs(target) && !strings.HasPrefix(rel, "proc/")) {
			return fmt.Errorf("fixture entry %q leaves the tree", entry)
		}
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		switch {
		case isLink:
			if err := os.Symlink(target, path); err != nil {
				return err
			}
		case isDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		default:
			name, inFile = rel, true
		}
	}
	return flush()
}
