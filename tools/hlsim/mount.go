package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// fsType is the type hlsim's mounts show in /proc/self/mountinfo.
const fsType = "fuse.hlsim"

// ErrServed reports a directory another hlsim serves already.
var ErrServed = errors.New("already served")

// ErrStale reports a mount of hlsim whose server is gone.
var ErrStale = errors.New("stale hlsim mount")

// mountAt returns the filesystem type mounted at dir ("" when none), from
// /proc/self/mountinfo.
func mountAt(dir string) (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	typ := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - type source super
		line := sc.Text()
		fields := strings.Fields(line)
		sep := strings.Index(line, " - ")
		if len(fields) < 5 || sep < 0 {
			continue
		}
		rest := strings.Fields(line[sep+3:])
		if len(rest) == 0 {
			continue
		}
		if unescapeMount(fields[4]) == dir {
			typ = rest[0] // the last mount over dir is the one seen
		}
	}
	return typ, sc.Err()
}

// unescapeMount undoes the octal escapes of mountinfo (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// checkMountpoint makes sure dir can be served: it exists (it is made
// when missing) and nothing is mounted on it. A live hlsim there gives an
// error matching ErrServed naming its process; a mount of an hlsim that is
// gone (its files answer ENOTCONN) gives ErrStale, unless force is set,
// when it is unmounted first.
func checkMountpoint(dir string, force bool) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	typ, err := mountAt(abs)
	if err != nil {
		return "", fmt.Errorf("read mount table: %w", err)
	}
	switch {
	case typ == fsType:
		// statfs always asks the server (stat may answer from the
		// attribute cache); a connection whose server is gone answers
		// ENOTCONN.
		var st unix.Statfs_t
		err := unix.Statfs(abs, &st)
		if errors.Is(err, unix.ENOTCONN) {
			if !force {
				return "", fmt.Errorf("%s: %w (its server is gone): unmount it with umount %s, or serve with -force", abs, ErrStale, abs)
			}
			if err := unix.Unmount(abs, unix.MNT_DETACH); err != nil {
				return "", fmt.Errorf("unmount stale mount %s: %w", abs, err)
			}
			return checkMountpoint(abs, false)
		}
		pid, _ := os.ReadFile(filepath.Join(abs, "hlsim", "pid"))
		return "", fmt.Errorf("%s: %w by hlsim (process %s)", abs, ErrServed, strings.TrimSpace(string(pid)))
	case typ != "":
		return "", fmt.Errorf("%s: a %s filesystem is mounted there; choose another directory", abs, typ)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", err
	}
	return abs, nil
}
