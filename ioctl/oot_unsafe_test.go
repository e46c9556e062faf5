package ioctl_test

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/ioctl/internal/fakefile"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// The out-of-tree driver's NIC ioctl goes out with its DRM number and the
// caller's buffers, and its errors name it and match the sentinels.
func TestNIC(t *testing.T) {
	in := make([]byte, unsafe.Sizeof(hl.NICGetUserAppParamsIn{}))
	out := make([]byte, unsafe.Sizeof(hl.NICGetUserAppParamsOut{}))
	for _, tc := range []struct {
		errno unix.Errno
		is    error
	}{
		{unix.EFAULT, nil}, // NIC not initialized: no ports
		{unix.EBUSY, ioctl.ErrNotOperational},
		{unix.EINVAL, nil},
	} {
		var got hl.NICArgs
		var gotReq uint
		f := fakefile.New(func(req uint, arg unsafe.Pointer) error {
			if isProbe(req, arg) {
				return nil
			}
			gotReq, got = req, *fakefile.Arg[hl.NICArgs](arg)
			return tc.errno
		})
		d := ioctl.New(f)
		args := hl.NICArgs{Op: hl.HL_NIC_OP_GET_USER_APP_PARAMS, CtxID: 3}
		err := d.NIC(&args, in, out)
		var e *ioctl.Error
		if !errors.As(err, &e) || e.Op != "NIC" || e.Sub != "GET_USER_APP_PARAMS" || e.Errno != tc.errno {
			t.Fatalf("NIC answered %v: err = %#v", tc.errno, err)
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%v does not match %v", err, tc.is)
		}
		if errors.Is(err, ioctl.ErrNotSupported) {
			t.Errorf("%v matches ErrNotSupported", err)
		}
		if gotReq != hl.DRM_IOCTL_HL_NIC {
			t.Errorf("request %#x, want %#x", gotReq, uint(hl.DRM_IOCTL_HL_NIC))
		}
		if got.InputSize != uint32(len(in)) || got.OutputSize != uint32(len(out)) || got.CtxID != 3 ||
			got.InputPtr.Addr() != uint64(uintptr(unsafe.Pointer(&in[0]))) || got.OutputPtr.Addr() != uint64(uintptr(unsafe.Pointer(&out[0]))) {
			t.Errorf("driver saw %+v", got)
		}
	}
}

// A legacy node has no NIC number: the call fails with ENOTTY before any
// ioctl, as an upstream kernel would answer.
func TestNICLegacy(t *testing.T) {
	r := &recorder{accept: legacyRequests, reject: unix.ENOTTY}
	d := ioctl.New(fakefile.New(r.ioctl))
	if got := d.Encoding(); got != ioctl.EncodingLegacy {
		t.Fatalf("Encoding() = %v, want legacy", got)
	}
	r.reset()
	args := hl.NICArgs{Op: hl.HL_NIC_OP_DUMP_QP}
	err := d.NIC(&args, nil, nil)
	if !errors.Is(err, ioctl.ErrNotSupported) || !errors.Is(err, unix.ENOTTY) {
		t.Fatalf("NIC on legacy = %v, want ENOTTY matching ErrNotSupported", err)
	}
	if seen := r.requests(); len(seen) != 0 {
		t.Errorf("issued %#x on a legacy node", seen)
	}
}

// REG_DMABUF_FD: EPERM (no peer-to-peer dma-bufs in the kernel) is "not
// supported"; EINVAL (upstream's unknown op, or a dma-buf too short) is not.
func TestRegDMABufFD(t *testing.T) {
	for _, tc := range []struct {
		errno       unix.Errno
		unsupported bool
	}{
		{unix.EPERM, true},
		{unix.EINVAL, false},
		{unix.EBADF, false},
		{0, false},
	} {
		var got hl.MemRegDmabufFDArgs
		d := ioctl.New(fakefile.New(func(req uint, arg unsafe.Pointer) error {
			if isProbe(req, arg) {
				return nil
			}
			if req != hl.DRM_IOCTL_HL_MEMORY {
				return unix.ENOTTY
			}
			a := fakefile.Arg[hl.MemRegDmabufFDArgs](arg)
			got = *a
			if tc.errno != 0 {
				return tc.errno
			}
			*a = hl.MemRegDmabufFDArgs{}
			a.FD = 0x1000_0000 // out.device_virt_addr overlays in.fd
			return nil
		}))
		args := hl.MemRegDmabufFDArgs{Op: hl.HL_MEM_OP_REG_DMABUF_FD, FD: 7, Length: 1 << 21}
		err := d.RegDMABufFD(&args)
		if got.FD != 7 || got.Length != 1<<21 || got.Op != hl.HL_MEM_OP_REG_DMABUF_FD {
			t.Errorf("driver saw %+v", got)
		}
		if tc.errno == 0 {
			if err != nil || args.Out().DeviceVirtAddr() != 0x1000_0000 {
				t.Errorf("success: err %v, VA %#x", err, args.Out().DeviceVirtAddr())
			}
			continue
		}
		var e *ioctl.Error
		if !errors.As(err, &e) || e.Op != "MEMORY" || e.Sub != "REG_DMABUF_FD" || e.Errno != tc.errno {
			t.Fatalf("answer %v: err = %#v", tc.errno, err)
		}
		if errors.Is(err, ioctl.ErrNotSupported) != tc.unsupported {
			t.Errorf("%v: matches ErrNotSupported = %v, want %v", err, !tc.unsupported, tc.unsupported)
		}
	}
}

// Errors of the out-of-tree INFO ops carry their names.
func TestOutOfTreeInfoNames(t *testing.T) {
	d := ioctl.New(fakefile.New(func(req uint, arg unsafe.Pointer) error {
		if isProbe(req, arg) {
			return nil
		}
		return unix.EINVAL
	}))
	for op, name := range hl.OutOfTreeInfoOpNames {
		var args hl.InfoArgs
		err := d.Info(op, &args, make([]byte, 16))
		var e *ioctl.Error
		if !errors.As(err, &e) || e.Sub != name {
			t.Errorf("INFO %d: err = %v, want Sub %q", op, err, name)
		}
	}
}
