package sim

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// isEventfd reports whether fd is an eventfd of this process, from its
// /proc fdinfo; EBADF when fd is not open.
func isEventfd(fd int) (bool, error) {
	if fd < 0 {
		return false, unix.EBADF
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", fd))
	if errors.Is(err, os.ErrNotExist) {
		return false, unix.EBADF
	}
	if err != nil {
		return false, err
	}
	return strings.Contains(string(b), "eventfd-count:"), nil
}

// infoRegisterEventfd registers the eventfd in the union, as
// eventfd_ctx_fdget does: EBADF for a closed fd, EINVAL for one that is not
// an eventfd or when one is already registered.
func (f *File) infoRegisterEventfd(a *hl.InfoArgs) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.eventfd >= 0 {
		return unix.EINVAL
	}
	fd := int(int32(a.Eventfd()))
	ok, err := isEventfd(fd)
	if err != nil {
		return err
	}
	if !ok {
		return unix.EINVAL
	}
	// Hold a reference of our own, as the driver holds the eventfd context.
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f.eventfd, f.signaler = dup, newEventSignal(dup)
	return nil
}

func (f *File) infoUnregisterEventfd(a *hl.InfoArgs) error {
	f.mu.Lock()
	if f.eventfd < 0 {
		f.mu.Unlock()
		return unix.EINVAL
	}
	sig := f.signaler
	f.signaler, f.eventfd = nil, -1
	f.mu.Unlock()
	sig.close() // outside f.mu: it may wait for a write to end
	return nil
}
