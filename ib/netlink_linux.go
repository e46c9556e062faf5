package ib

import (
	"bytes"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/gaudi-go/gaudi/uapi/rdma"
	"golang.org/x/sys/unix"
)

// NetlinkError is an error the kernel answered on RDMA netlink
// (NLMSG_ERROR), with the request it answered.
type NetlinkError struct {
	// Op is the request: "GET" or "GET_CHARDEV".
	Op string
	// Errno is the error number the kernel returned.
	Errno unix.Errno
}

// Error returns a short description such as
// "rdma netlink GET_CHARDEV: no such device".
func (e *NetlinkError) Error() string { return "rdma netlink " + e.Op + ": " + e.Errno.Error() }

// Unwrap returns the errno.
func (e *NetlinkError) Unwrap() error { return e.Errno }

// netlinkSeq numbers requests across sockets.
var netlinkSeq atomic.Uint32

// nlConn is a NETLINK_RDMA socket. It is not safe for concurrent use.
type nlConn struct{ fd int }

func dialNetlink() (*nlConn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_RDMA)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("bind", err)
	}
	return &nlConn{fd: fd}, nil
}

func (c *nlConn) close() error { return unix.Close(c.fd) }

// do sends one request and collects the messages answering it, until
// NLMSG_DONE for a dump or the single answer otherwise.
func (c *nlConn) do(op string, typ, flags uint16, attrs []nlAttr) ([]nlMsg, error) {
	seq := netlinkSeq.Add(1)
	req := encodeNetlink(typ, flags|unix.NLM_F_REQUEST, seq, attrs)
	if err := unix.Sendto(c.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, os.NewSyscallError("sendto", err)
	}
	dump := flags&unix.NLM_F_DUMP == unix.NLM_F_DUMP
	buf := make([]byte, 64<<10)
	var out []nlMsg
	for {
		n, _, err := unix.Recvfrom(c.fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, os.NewSyscallError("recvfrom", err)
		}
		// The messages keep referring to their datagram; the buffer is
		// reused for the next one.
		msgs, err := parseNetlink(bytes.Clone(buf[:n]))
		if err != nil {
			return nil, err
		}
		var done bool
		out, done, err = collectReplies(op, out, msgs, seq, dump)
		if err != nil || done {
			return out, err
		}
	}
}

// collectReplies adds the messages of one datagram that answer request
// seq to out. It reports done at NLMSG_DONE, at an acknowledgement, and
// after the single answer of a request that is not a dump; an
// NLMSG_ERROR with an error becomes a *NetlinkError keeping the errno.
func collectReplies(op string, out, msgs []nlMsg, seq uint32, dump bool) ([]nlMsg, bool, error) {
	for _, m := range msgs {
		if m.seq != seq {
			continue // a stale answer
		}
		switch m.typ {
		case unix.NLMSG_ERROR:
			if m.errno != 0 {
				return nil, true, &NetlinkError{Op: op, Errno: m.errno}
			}
			return out, true, nil
		case unix.NLMSG_DONE:
			return out, true, nil
		}
		out = append(out, m)
		if !dump {
			return out, true, nil
		}
	}
	return out, false, nil
}

// NetlinkDevices asks RDMA netlink for every device (NLDEV_CMD_GET dump)
// and, per device, for its uverbs node and driver id (NLDEV_CMD_GET_CHARDEV
// with type "uverbs"). A device without a uverbs node is listed without
// one. The kernel only shows devices of the caller's network namespace.
func NetlinkDevices() ([]NetlinkDevice, error) {
	c, err := dialNetlink()
	if err != nil {
		return nil, fmt.Errorf("rdma netlink: %w", err)
	}
	defer c.close()
	msgs, err := c.do("GET", nlType(rdma.RDMA_NLDEV_CMD_GET), unix.NLM_F_DUMP, nil)
	if err != nil {
		return nil, err
	}
	var devs []NetlinkDevice
	for _, m := range msgs {
		var d NetlinkDevice
		applyDevAttrs(&d, m.attrs)
		if d.Name == "" {
			continue
		}
		cm, err := c.do("GET_CHARDEV", nlType(rdma.RDMA_NLDEV_CMD_GET_CHARDEV), 0, []nlAttr{
			u32Attr(rdma.RDMA_NLDEV_ATTR_DEV_INDEX, d.Index),
			strAttr(rdma.RDMA_NLDEV_ATTR_CHARDEV_TYPE, "uverbs"),
		})
		if err == nil {
			for _, m := range cm {
				applyDevAttrs(&d, m.attrs)
			}
		}
		devs = append(devs, d)
	}
	return devs, nil
}
