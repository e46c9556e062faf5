package device

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gaudi-go/gaudi/internal/sysfsattr"
)

// SysFS reads device information from sysfs below an injectable root: "/"
// on a live system, or a fixture tree that holds a sys/ directory in tests.
// The zero value reads the live system, or the tree the environment
// variable GAUDI_ROOT names (see RootEnv).
//
// SysFS only reads files and symbolic links; it never opens a device node,
// so it works while another process owns the device. A SysFS is a plain
// value and is safe for concurrent use.
type SysFS struct {
	// Root is the directory that contains sys/. Empty means $GAUDI_ROOT
	// when it is set, else "/".
	Root string
}

// RootEnv is the environment variable that moves discovery off the live
// system: GAUDI_ROOT=DIR makes the zero SysFS read DIR/sys, and Open and
// OpenControl open the nodes discovery finds under DIR (DIR/dev/accel/accel0
// for /dev/accel/accel0). A simulated server serving devices under a
// directory (tools/hlsim serve -dir DIR) lays them out so; an unset or
// empty variable means the live system. Node paths given as selectors are
// opened as they are written.
const RootEnv = "GAUDI_ROOT"

// RootDir returns the directory that contains sys/ and dev/: Root, else
// $GAUDI_ROOT when it is set, else "/".
func (s SysFS) RootDir() string {
	if s.Root != "" {
		return s.Root
	}
	if r := os.Getenv(RootEnv); r != "" {
		return r
	}
	return "/"
}

// nodePath returns where a node the kernel names path (/dev/accel/accel0)
// is: under GAUDI_ROOT when the zero SysFS reads that tree, else path
// itself (a SysFS with Root set reads sysfs there and leaves nodes where
// the kernel names them, as for fixture trees).
func (s SysFS) nodePath(path string) string {
	if s.Root != "" {
		return path
	}
	if r := os.Getenv(RootEnv); r != "" {
		return filepath.Join(r, path)
	}
	return path
}

// AttrError reports a sysfs file that discovery needs (such as a PCI
// vendor or device id) but could not read or parse.
type AttrError struct {
	// Path is the file as read, joined under SysFS.Root.
	Path string
	// Err is the underlying read or parse error.
	Err error
}

// Error implements error.
func (e *AttrError) Error() string {
	return "read sysfs attribute " + e.Path + ": " + e.Err.Error()
}

// Unwrap returns the underlying error, so errors.Is(err, fs.ErrNotExist)
// works for a missing file.
func (e *AttrError) Unwrap() error { return e.Err }

// path joins elem under the root.
func (s SysFS) path(elem ...string) string { return sysfsattr.Join(s.RootDir(), elem...) }

// readAttr returns the content of a sysfs text attribute without
// surrounding white space.
func readAttr(path string) (string, error) { return sysfsattr.Read(path) }

// linkBase returns the last element of a symbolic link's target, such as
// the PCI address a "device" link points at or the driver name a "driver"
// link points at.
func linkBase(path string) (string, error) { return sysfsattr.LinkBase(path) }

// readHex reads an attribute the kernel prints as "0x%x" (PCI vendor,
// device and revision) into an unsigned number of the given bit size.
func readHex(path string, bits int) (uint64, error) {
	s, err := readAttr(path)
	if err != nil {
		return 0, &AttrError{Path: path, Err: err}
	}
	v, err := parseHex(s, bits)
	if err != nil {
		return 0, &AttrError{Path: path, Err: err}
	}
	return v, nil
}

// errNoHexPrefix is returned for a number that lacks the "0x" prefix the
// kernel always prints.
var errNoHexPrefix = errors.New(`missing "0x" prefix`)

// parseHex parses "0x1da3" strictly: prefix, then hex digits only.
func parseHex(s string, bits int) (uint64, error) {
	digits, ok := strings.CutPrefix(s, "0x")
	if !ok {
		digits, ok = strings.CutPrefix(s, "0X")
	}
	if !ok {
		return 0, fmt.Errorf("parse %q: %w", s, errNoHexPrefix)
	}
	if digits == "" || strings.ContainsAny(digits, "_+-") {
		return 0, fmt.Errorf("parse %q: %w", s, strconv.ErrSyntax)
	}
	v, err := strconv.ParseUint(digits, 16, bits)
	if err != nil {
		return 0, fmt.Errorf("parse %q: %w", s, err)
	}
	return v, nil
}

// parseIndex returns N for a class entry named prefix+N. It accepts only
// the decimal form the kernel prints with "%d" for a non-negative number:
// no sign and no leading zeros.
func parseIndex(name, prefix string) (int, bool) {
	digits, ok := strings.CutPrefix(name, prefix)
	if !ok || digits == "" || len(digits) > 9 {
		return 0, false
	}
	if len(digits) > 1 && digits[0] == '0' {
		return 0, false
	}
	n := 0
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// isPCIAddress reports whether s has the form the kernel gives PCI
// functions ("dddd:bb:ss.f", lowercase hex).
func isPCIAddress(s string) bool { return sysfsattr.IsPCIAddress(s) }
