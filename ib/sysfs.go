package ib

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// maxAttrSize bounds one attribute read; the kernel serves at most a page.
const maxAttrSize = 64 << 10

// path joins elem under the root.
func (s SysFS) path(elem ...string) string {
	root := s.Root
	if root == "" {
		root = "/"
	}
	return filepath.Join(append([]string{root}, elem...)...)
}

// readAttr returns a text attribute without surrounding white space.
func readAttr(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxAttrSize))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

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

// linkBase returns the last element of a symbolic link's target.
func linkBase(path string) string {
	t, err := os.Readlink(path)
	if err != nil {
		return ""
	}
	b := filepath.Base(t)
	if b == "." || b == "/" || b == ".." {
		return ""
	}
	return b
}

// isPCIAddress reports whether s looks like "dddd:bb:ss.f" in lowercase
// hex (the domain has four or more digits).
func isPCIAddress(s string) bool {
	dom, rest, ok := strings.Cut(s, ":")
	if !ok || len(dom) < 4 || len(dom) > 8 || !isHex(dom) {
		return false
	}
	bus, rest, ok := strings.Cut(rest, ":")
	if !ok || len(bus) != 2 || !isHex(bus) {
		return false
	}
	slot, fn, ok := strings.Cut(rest, ".")
	return ok && len(slot) == 2 && isHex(slot) && len(fn) == 1 && fn[0] >= '0' && fn[0] <= '7'
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}

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
