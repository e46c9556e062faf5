package ib

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gaudi-go/gaudi/uapi/rdma"
	"golang.org/x/sys/unix"
)

// Context is an open uverbs device: the file /dev/infiniband/uverbsN with
// a user context (GET_CONTEXT) on it. Protection domains and memory
// regions belong to the Context that created them.
//
// A Context is safe for concurrent use. Close releases everything still
// open on it: its memory regions, its protection domains and the file
// (the kernel destroys every object of a uverbs file when it is closed).
type Context struct {
	dev      Device
	driverID DriverID
	drv      driverData
	f        verbsFile

	// legacy is set when the kernel has no uverbs ioctl (or no
	// GET_CONTEXT method): every call then uses write(2).
	legacy bool
	// asyncFD is the event descriptor the write() form of GET_CONTEXT
	// installs, or -1.
	asyncFD int

	numCompVectors uint32
	coreSupport    uint64

	// prov is the driver's data path, nil when the package has none.
	prov provider
	// nextHandle numbers the user handles of CQs and QPs.
	nextHandle atomic.Uint64

	mu       sync.Mutex
	closed   bool
	pds      map[*PD]struct{}
	qps      map[*QP]struct{}
	cqs      map[*CQ]struct{}
	channels map[*CompChannel]struct{}
}

// Open opens the device's uverbs node and creates a user context on it,
// carrying dev.DriverID in every request. Use a Device from Devices (or
// DeviceByName); OpenName does both. When dev.DriverIDSource is empty
// (nothing told the driver id), Open asks the kernel for it first: only
// the right id passes the kernel's header check.
//
// GET_CONTEXT is issued as an ioctl; on kernels without the uverbs ioctl
// (ENOTTY) or without that method (EPROTONOSUPPORT, EOPNOTSUPP) Open falls
// back to the legacy write() command, and the Context keeps using write()
// for every later request. An EINVAL answer matches ErrBadDriverID.
func Open(dev Device) (*Context, error) {
	if dev.UverbsPath == "" {
		return nil, fmt.Errorf("open %s: %w", dev.Name, ErrNoDevice)
	}
	k, err := openVerbs(dev.UverbsPath)
	if err != nil {
		if errno, ok := err.(unix.Errno); ok {
			return nil, &Error{Op: opOpen, Device: dev.Name, Errno: errno}
		}
		return nil, fmt.Errorf("open %s: %w", dev.UverbsPath, err)
	}
	c, err := newContext(dev, k)
	if err != nil {
		if cerr := k.close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close %s: %w", dev.UverbsPath, cerr))
		}
		return nil, err
	}
	return c, nil
}

// OpenName opens the RDMA device called name (such as "rxe0" or
// "mlx5_0"), discovered with Devices.
func OpenName(name string) (*Context, error) {
	dev, err := DeviceByName(name)
	if err != nil {
		return nil, err
	}
	return Open(dev)
}

// newContext issues GET_CONTEXT on f. A device whose driver id nothing
// told (DriverIDSource "") gets it from the kernel first (probeDriverID).
func newContext(dev Device, f verbsFile) (*Context, error) {
	if dev.DriverIDSource == "" {
		id, err := probeDriverID(f)
		switch {
		case err == nil:
			dev.DriverID, dev.DriverIDSource = id, "probe"
		case !errors.Is(err, errNoIoctl):
			if e, ok := err.(*Error); ok {
				e.Device = dev.Name
			}
			return nil, err
		}
	}
	c := &Context{
		dev:      dev,
		driverID: dev.DriverID,
		drv:      driverDataFor(dev.DriverID),
		f:        f,
		asyncFD:  -1,
		prov:     providerFor(dev.DriverID),
		pds:      map[*PD]struct{}{},
		qps:      map[*QP]struct{}{},
		cqs:      map[*CQ]struct{}{},
		channels: map[*CompChannel]struct{}{},
	}
	err := c.getContext()
	if isUnsupported(err) {
		c.legacy = true
		err = c.getContextWrite()
	}
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.firstCall = true
		}
		return nil, err
	}
	return c, nil
}

// isUnsupported reports whether err says the uverbs ioctl or the method
// is missing, so the write() form should be used.
func isUnsupported(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Errno == unix.ENOTTY || e.Errno == unix.EPROTONOSUPPORT || e.Errno == unix.EOPNOTSUPP
}

// getContext issues UVERBS_METHOD_GET_CONTEXT.
func (c *Context) getContext() error {
	r := request{obj: uint16(rdma.UVERBS_OBJECT_DEVICE), method: uint16(rdma.UVERBS_METHOD_GET_CONTEXT)}
	r.ptrOut(uint16(rdma.UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS), 4)
	r.ptrOut(uint16(rdma.UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT), 8)
	c.addUHW(&r, c.drv.getContextIn, c.drv.getContextOutLen)
	if err := c.ioctl(opGetContext, &r); err != nil {
		return err
	}
	c.numCompVectors = binary.LittleEndian.Uint32(r.out(0))
	c.coreSupport = binary.LittleEndian.Uint64(r.out(1))
	return nil
}

// getContextWrite issues the write() command GET_CONTEXT, which also
// installs an async event descriptor that the Context owns.
func (c *Context) getContextWrite() error {
	core := make([]byte, 8) // response
	w := newWriteCmd(uint32(rdma.IB_USER_VERBS_CMD_GET_CONTEXT), core, pad4(c.drv.getContextIn), 8, round4(c.drv.getContextOutLen))
	if err := c.write(opGetContext, w); err != nil {
		return err
	}
	resp := w.resp()
	c.asyncFD = int(int32(binary.LittleEndian.Uint32(resp[0:])))
	c.numCompVectors = binary.LittleEndian.Uint32(resp[4:])
	return nil
}

// addUHW adds the driver's private input and output, when it has any.
func (c *Context) addUHW(r *request, in []byte, outLen int) {
	if len(in) > 0 {
		r.ptrIn(rdma.UVERBS_ATTR_UHW_IN, in)
	}
	if outLen > 0 {
		r.ptrOut(rdma.UVERBS_ATTR_UHW_OUT, outLen)
	}
}

// ioctl encodes and issues r, retrying when interrupted.
func (c *Context) ioctl(op string, r *request) error {
	head := r.encode(uint32(c.driverID))
	if head > maxIoctlLen {
		return &Error{Op: op, Device: c.dev.Name, Errno: unix.EINVAL}
	}
	var saved [hdrSize + attrSize*maxAttrs]byte
	copy(saved[:], r.buf[:head])
	for {
		err := c.f.ioctl(r.buf)
		if err == nil {
			return nil
		}
		errno, ok := err.(unix.Errno)
		if !ok {
			return fmt.Errorf("uverbs %s: %w", op, err)
		}
		if errno != unix.EINTR {
			return &Error{Op: op, Device: c.dev.Name, Errno: errno}
		}
		copy(r.buf, saved[:head])
	}
}

// write issues the legacy command w, retrying when interrupted.
func (c *Context) write(op string, w *writeCmd) error {
	for {
		err := c.f.write(w.buf, w.n)
		if err == nil {
			return nil
		}
		errno, ok := err.(unix.Errno)
		if !ok {
			return fmt.Errorf("uverbs %s: %w", op, err)
		}
		if errno != unix.EINTR {
			return &Error{Op: op, Device: c.dev.Name, Errno: errno}
		}
	}
}

// invokeWrite runs legacy command cmd: through the INVOKE_WRITE ioctl
// method on current kernels, through write(2) on legacy ones. core is the
// core request including its leading response field where it has one. It
// returns the core response (respLen bytes) and the driver's output
// (drvOutLen bytes).
func (c *Context) invokeWrite(op string, cmd rdma.UverbsWriteCmds, core []byte, respLen int, drvIn []byte, drvOutLen int) (resp, drvOut []byte, err error) {
	if c.legacy {
		w := newWriteCmd(uint32(cmd), core, pad4(drvIn), respLen, round4(drvOutLen))
		if err := c.write(op, w); err != nil {
			return nil, nil, err
		}
		all := w.resp()
		return all[:respLen], all[respLen : respLen+drvOutLen], nil
	}
	r := request{obj: uint16(rdma.UVERBS_OBJECT_DEVICE), method: uint16(rdma.UVERBS_METHOD_INVOKE_WRITE)}
	r.inline(uint16(rdma.UVERBS_ATTR_WRITE_CMD), 8, uint64(cmd))
	r.ptrIn(uint16(rdma.UVERBS_ATTR_CORE_IN), core)
	outAt, drvAt := -1, -1
	if respLen > 0 {
		outAt = r.n
		r.ptrOut(uint16(rdma.UVERBS_ATTR_CORE_OUT), respLen)
	}
	if len(drvIn) > 0 {
		r.ptrIn(rdma.UVERBS_ATTR_UHW_IN, drvIn)
	}
	if drvOutLen > 0 {
		drvAt = r.n
		r.ptrOut(rdma.UVERBS_ATTR_UHW_OUT, drvOutLen)
	}
	if err := c.ioctl(op, &r); err != nil {
		return nil, nil, err
	}
	if outAt >= 0 {
		resp = r.out(outAt)
	}
	if drvAt >= 0 {
		drvOut = r.out(drvAt)
	}
	return resp, drvOut, nil
}

// pad4 rounds b up to whole 4-byte words for the write() path.
func pad4(b []byte) []byte {
	if len(b)%4 == 0 {
		return b
	}
	return append(b[:len(b):len(b)], make([]byte, 4-len(b)%4)...)
}

func round4(n int) int { return (n + 3) &^ 3 }

// Device returns the device the Context was opened on.
func (c *Context) Device() Device { return c.dev }

// DriverID returns the driver id the Context sends.
func (c *Context) DriverID() DriverID { return c.driverID }

// Legacy reports whether the kernel lacked the uverbs ioctl path, so the
// Context uses write(2) commands.
func (c *Context) Legacy() bool { return c.legacy }

// NumCompVectors returns the number of completion vectors GET_CONTEXT
// reported.
func (c *Context) NumCompVectors() uint32 { return c.numCompVectors }

// CoreSupport returns the core capability bits GET_CONTEXT reported
// (IB_UVERBS_CORE_SUPPORT_*: bit 0 means optional access flags are
// ignored when unknown); 0 on the write() path.
func (c *Context) CoreSupport() uint64 { return c.coreSupport }

// use marks the start of a call on the Context; it fails once closed.
func (c *Context) use(op string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return closedErr(op, c.dev.Name)
	}
	return nil
}

// Close releases everything still open on the Context: it unmaps the
// queues of its queue pairs and CQs, closes its completion channels, marks
// its memory regions and protection domains closed, then closes the file
// (and the event descriptor of a legacy context); the kernel destroys
// every object of a uverbs file when the file and its mappings are gone.
// It returns their errors, joined; closing twice returns nil.
func (c *Context) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	pds, qps, cqs, chs := c.pds, c.qps, c.cqs, c.channels
	c.pds, c.qps, c.cqs, c.channels = nil, nil, nil, nil
	c.mu.Unlock()
	var errs []error
	// The kernel destroys every object of the file when it is closed, so
	// the objects only need to learn that they are gone, and drop their
	// mappings (which would keep the file open).
	for qp := range qps {
		errs = append(errs, qp.abandon())
	}
	for cq := range cqs {
		errs = append(errs, cq.abandon())
	}
	for ch := range chs {
		errs = append(errs, ch.abandon())
	}
	for pd := range pds {
		pd.abandon()
	}
	errs = append(errs, c.f.close())
	if c.asyncFD >= 0 {
		if e := unix.Close(c.asyncFD); e != nil {
			errs = append(errs, fmt.Errorf("close async event fd: %w", e))
		}
		c.asyncFD = -1
	}
	return errors.Join(errs...)
}
