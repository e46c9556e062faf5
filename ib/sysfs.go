package ib

import (
	"strconv"
	"strings"

	"github.com/gaudi-go/gaudi/internal/sysfsattr"
)

// SysFS reads RDMA device information below an injectable root: "/" on a
// live system, or a fixture tree holding sys/ (and dev/) in tests. The
// zero value reads the live system.
//
// SysFS only reads files and symbolic links. It is a plain value and safe
// for concurrent use.
type SysFS struct {
	// Root is the directory that contains sys/. Empty means "/".
	Root string
}

// path joins elem under the root.
func (s SysFS) path(elem ...string) string { return sysfsattr.Join(s.Root, elem...) }

// readAttr returns a text attribute without surrounding white space.
func readAttr(path string) (string, error) { return sysfsattr.Read(path) }

// readInt reads a decimal attribute, or returns def when it is missing or
// not a number.
func readInt(path string, def int) int {
	s, err := readAttr(path)
	if err != nil {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return v
}

// linkBase returns the last element of a symbolic link's target, or ""
// when there is no such link.
func linkBase(path string) string {
	b, err := sysfsattr.LinkBase(path)
	if err != nil {
		return ""
	}
	return b
}

// isPCIAddress reports whether s looks like "dddd:bb:ss.f" in lowercase hex.
func isPCIAddress(s string) bool { return sysfsattr.IsPCIAddress(s) }

// splitNumbered parses "4: ACTIVE" (the kernel's "%d: %s" attributes) into
// its number and name; a value without the number gives -1.
func splitNumbered(s string) (int, string) {
	n, name, ok := strings.Cut(s, ":")
	if !ok {
		return -1, strings.TrimSpace(s)
	}
	v, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil {
		return -1, strings.TrimSpace(s)
	}
	return v, strings.TrimSpace(name)
}
