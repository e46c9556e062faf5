package ipc

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
)

// recvMsg reads one message of the exporter's (a reply or a notice) from c
// into b and oob.
//
// A read that reports the end of the connection (0 bytes, no control data)
// is repeated once, because Linux can report the end of a SOCK_SEQPACKET
// connection while a message is still queued. Its receive path for
// SEQPACKET (net/unix/af_unix.c in 6.12, __unix_dgram_recvmsg) first finds
// the queue empty, then drops the queue's locks, then looks at the
// socket's shutdown state: if the peer queues its last message and closes
// in between, recvmsg returns 0 and the message stays queued (seen on 6.12
// and 6.18). The exporter closes right after its reply, so an importer
// whose recvmsg was descheduled at that point (a loaded host, a TCG guest)
// took the reply for a close and failed with ErrExporterGone.
//
// Once the shutdown has been seen, the peer can queue nothing more and
// everything it sent is in the queue, so the second read is decisive: it
// returns the message queued before the close, or the end of the
// connection again. scripts/vmtest/seqpacket_eof.c reproduces the race
// without Go.
func recvMsg(c *net.UnixConn, b, oob []byte) (n, oobn, flags int, err error) {
	reads := 0
	n, oobn, flags, err = retryEOF(func() (int, int, int, error) {
		reads++
		if reads == 1 {
			if h := earlyEOFHook.Load(); h != nil && (*h)(c) {
				return 0, 0, 0, io.EOF
			}
		}
		n, oobn, flags, _, err := c.ReadMsgUnix(b, oob)
		return n, oobn, flags, err
	})
	if reads == 2 && n > 0 {
		earlyEOFs.Add(1)
	}
	return n, oobn, flags, err
}

// retryEOF calls read, and calls it once more when it reports the end of
// the connection: 0 bytes, no control data, and io.EOF or no error (see
// recvMsg).
func retryEOF(read func() (n, oobn, flags int, err error)) (int, int, int, error) {
	n, oobn, flags, err := read()
	if n == 0 && oobn == 0 && (err == nil || errors.Is(err, io.EOF)) {
		return read()
	}
	return n, oobn, flags, err
}

// earlyEOFs counts the messages recvMsg received after an early end of
// file (tests log it).
var earlyEOFs atomic.Uint64

// earlyEOFHook (tests) runs before the first read of each recvMsg; when it
// returns true, that read reports the end of the connection without
// reading, as the kernel's race does (see recvMsg).
var earlyEOFHook atomic.Pointer[func(c *net.UnixConn) bool]
