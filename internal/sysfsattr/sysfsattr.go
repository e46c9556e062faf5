// Package sysfsattr reads sysfs attributes and names, for the packages that
// discover devices from sysfs (device for Gaudis, ib for RDMA NICs) under a
// root that tests point at fixture trees.
package sysfsattr

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// MaxSize bounds one attribute read. The kernel serves at most a page per
// text attribute; the bound only guards against odd fixture files.
const MaxSize = 64 << 10

// Join joins elem under root ("" means "/").
func Join(root string, elem ...string) string {
	if root == "" {
		root = "/"
	}
	return filepath.Join(append([]string{root}, elem...)...)
}

// Read returns the content of a text attribute without surrounding white
// space.
func Read(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxSize))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// LinkBase returns the last element of a symbolic link's target, such as
// the PCI address a "device" link points at or the driver name a "driver"
// link points at.
func LinkBase(path string) (string, error) {
	target, err := os.Readlink(path)
	if err != nil {
		return "", err
	}
	base := filepath.Base(target)
	if base == "." || base == "/" || base == ".." {
		return "", fmt.Errorf("link %s: unexpected target %q", path, target)
	}
	return base, nil
}

// IsPCIAddress reports whether s has the form the kernel gives PCI
// functions: "dddd:bb:ss.f" in lowercase hex, where the domain has four to
// eight digits (pci_name prints it with "%04x", so VMD domains such as
// 10000 have five).
func IsPCIAddress(s string) bool {
	domain, rest, ok := strings.Cut(s, ":")
	if !ok || len(domain) < 4 || len(domain) > 8 || !IsLowerHex(domain) {
		return false
	}
	if len(rest) != len("00:00.0") || rest[2] != ':' || rest[5] != '.' {
		return false
	}
	return IsLowerHex(rest[0:2]) && IsLowerHex(rest[3:5]) && rest[6] >= '0' && rest[6] <= '7'
}

// IsLowerHex reports whether s is non-empty and all lowercase hex digits.
func IsLowerHex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
