package ipc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
)

// ErrUnexpectedPeer reports that the process listening on an exporter's
// socket is not the exporter the handle names (another pid, or the same
// pid given to another process after the exporter exited), or runs as a
// uid the importer does not allow: for example an impostor that bound the
// socket name after the exporter exited. Import, Watch and Cache.Get
// refuse it before they send anything.
var ErrUnexpectedPeer = errors.New("ipc: the socket's owner is not the expected exporter")

// ImportOptions adjust ImportWith, WatchExporter and NewCacheWith: which
// exporters the importer accepts. It is the importer's side of
// ExporterOptions.AllowUIDs.
type ImportOptions struct {
	// AllowUIDs lists the user ids an exporter may run as: the uid the
	// kernel reports for the process listening on the socket
	// (SO_PEERCRED). Empty means the importer's own effective uid and
	// root (a root process can read and write this one anyway).
	AllowUIDs []uint32
}

// allowed returns the uids opts accepts.
func (o ImportOptions) allowed() []uint32 {
	if len(o.AllowUIDs) > 0 {
		return o.AllowUIDs
	}
	return []uint32{uint32(os.Geteuid()), 0}
}

// checkPeer compares the credentials of the process listening on c's
// socket (SO_PEERCRED, taken at listen) with opts and, when want is not
// nil, with the exporter that handle names: its pid must be the
// listener's, which the kernel reports in this pid namespace, so a handle
// of another pid namespace cannot be checked (ErrOtherNamespace), and the
// listener must have started when the handle says (process.go), so a
// process that got the exporter's pid after it exited is refused too.
func checkPeer(c *net.UnixConn, want *Handle, opts ImportOptions) error {
	cred, err := peerCred(c)
	if err != nil {
		return fmt.Errorf("ipc: peer credentials: %w", err)
	}
	if !slices.Contains(opts.allowed(), cred.Uid) {
		return fmt.Errorf("%w: socket owned by uid %d (pid %d), allowed uids %v", ErrUnexpectedPeer, cred.Uid, cred.Pid, opts.allowed())
	}
	if want == nil {
		return nil
	}
	ns, err := PIDNamespace()
	if err != nil {
		return err
	}
	if want.PIDNamespace != ns {
		return fmt.Errorf("%w: handle of pid namespace %d, this one is %d: its exporter's pid cannot be checked", ErrOtherNamespace, want.PIDNamespace, ns)
	}
	if uint32(cred.Pid) != want.PID {
		return fmt.Errorf("%w: socket owned by pid %d (uid %d), the handle's exporter is pid %d", ErrUnexpectedPeer, cred.Pid, cred.Uid, want.PID)
	}
	return checkExporterProcess(c, int(cred.Pid), want)
}
