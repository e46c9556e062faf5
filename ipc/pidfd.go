package ipc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The second transport: the importer takes the descriptor straight out of
// the exporter's descriptor table with pidfd_open and pidfd_getfd, which
// the kernel allows only to a process with ptrace rights over the exporter
// (same uid and no stricter Yama policy, or CAP_SYS_PTRACE). No socket is
// involved, so it needs a reference to the descriptor: a PidfdRef names the
// Exporter's own duplicate by number and identifies its file by device and
// inode. A number alone would be the mistake the UCX attempts made (a
// descriptor number means nothing after it was closed and reused); the
// importer therefore checks the file it got against the device and inode,
// and the exporter keeps the duplicate open until Revoke or Close.

// ErrOtherNamespace reports a handle from another pid namespace: its pid
// means another process here.
var ErrOtherNamespace = errors.New("ipc: handle from another pid namespace")

// PidfdRef names an exported descriptor in the exporter's table for
// ImportPidfd. It is meaningful only together with the Handle it was made
// for and only until the export is revoked.
type PidfdRef struct {
	FD  int32  // number in the exporter's descriptor table
	Dev uint64 // st_dev of the file
	Ino uint64 // st_ino of the file
}

// String encodes the reference as "fd:dev:ino" (decimal).
func (r PidfdRef) String() string {
	return fmt.Sprintf("%d:%d:%d", r.FD, r.Dev, r.Ino)
}

// ParsePidfdRef decodes String's form.
func ParsePidfdRef(s string) (PidfdRef, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return PidfdRef{}, fmt.Errorf("ipc: pidfd reference %q: want fd:dev:ino", s)
	}
	fd, err1 := strconv.ParseInt(parts[0], 10, 32)
	dev, err2 := strconv.ParseUint(parts[1], 10, 64)
	ino, err3 := strconv.ParseUint(parts[2], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil || fd < 0 {
		return PidfdRef{}, fmt.Errorf("ipc: pidfd reference %q: %w", s, errors.Join(err, ErrMalformed))
	}
	return PidfdRef{FD: int32(fd), Dev: dev, Ino: ino}, nil
}

// PidfdRef returns the reference an importer with ptrace rights over this
// process passes to ImportPidfd, for a buffer exported here.
func (e *Exporter) PidfdRef(h Handle) (PidfdRef, error) {
	e.mu.Lock()
	en, ok := e.entries[h.BufferID]
	e.mu.Unlock()
	if !ok {
		return PidfdRef{}, ErrUnknownBuffer
	}
	en.mu.RLock()
	defer en.mu.RUnlock()
	if en.fd < 0 {
		return PidfdRef{}, ErrRevoked
	}
	var st unix.Stat_t
	if err := unix.Fstat(en.fd, &st); err != nil {
		return PidfdRef{}, fmt.Errorf("ipc: stat exported descriptor: %w", err)
	}
	return PidfdRef{FD: int32(en.fd), Dev: st.Dev, Ino: st.Ino}, nil
}

// ImportPidfd takes the descriptor of h from the exporter process with
// pidfd_getfd. It checks first that the handle comes from this boot
// (ErrOtherHost) and this pid namespace (ErrOtherNamespace), and afterwards
// that the descriptor is the exported file (a mismatch means the export
// was revoked and the number reused: ErrRevoked). An exporter that exited
// gives ErrExporterGone, also when another process has its pid now (its
// start time is not the handle's); missing ptrace rights give
// ErrNotAllowed with the kernel's EPERM.
func ImportPidfd(h Handle, ref PidfdRef) (*Imported, error) {
	boot, err := BootID()
	if err != nil {
		return nil, err
	}
	if h.BootID != boot {
		return nil, ErrOtherHost
	}
	ns, err := PIDNamespace()
	if err != nil {
		return nil, err
	}
	if h.PIDNamespace != ns {
		return nil, ErrOtherNamespace
	}
	pidfd, err := unix.PidfdOpen(int(h.PID), 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil, fmt.Errorf("ipc: pidfd_open %d: %w", h.PID, errors.Join(ErrExporterGone, err))
		}
		return nil, fmt.Errorf("ipc: pidfd_open %d: %w", h.PID, err)
	}
	defer unix.Close(pidfd)
	if err := startedAt(pidfd, int(h.PID), h.StartTime); err != nil {
		return nil, fmt.Errorf("ipc: %w", errors.Join(ErrExporterGone, err))
	}
	fd, err := unix.PidfdGetfd(pidfd, int(ref.FD), 0)
	switch {
	case errors.Is(err, unix.EPERM):
		return nil, fmt.Errorf("ipc: pidfd_getfd needs ptrace rights over pid %d: %w", h.PID, errors.Join(ErrNotAllowed, err))
	case errors.Is(err, unix.EBADF):
		return nil, fmt.Errorf("ipc: pid %d no longer holds descriptor %d: %w", h.PID, ref.FD, errors.Join(ErrRevoked, err))
	case errors.Is(err, unix.ESRCH):
		return nil, fmt.Errorf("ipc: pidfd_getfd: %w", errors.Join(ErrExporterGone, err))
	case err != nil:
		return nil, fmt.Errorf("ipc: pidfd_getfd: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("ipc: stat imported descriptor: %w", err)
	}
	if st.Dev != ref.Dev || st.Ino != ref.Ino {
		unix.Close(fd)
		return nil, fmt.Errorf("ipc: descriptor %d of pid %d is another file now: %w", ref.FD, h.PID, ErrRevoked)
	}
	if st.Size > 0 && uint64(st.Size) < h.Size {
		unix.Close(fd)
		return nil, fmt.Errorf("ipc: imported file has %d bytes, the handle says %d: %w", st.Size, h.Size, ErrProtocol)
	}
	return &Imported{File: os.NewFile(uintptr(fd), "dmabuf"), Size: h.Size, Offset: h.Offset, Handle: h}, nil
}
