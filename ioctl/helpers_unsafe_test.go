package ioctl_test

import (
	"context"
	"sync"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/ioctl/internal/fakefile"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// Request numbers of both encodings, by operation name.
var (
	drmRequests = map[string]uint{
		"INFO":    hl.DRM_IOCTL_HL_INFO,
		"CB":      hl.DRM_IOCTL_HL_CB,
		"CS":      hl.DRM_IOCTL_HL_CS,
		"WAIT_CS": hl.DRM_IOCTL_HL_WAIT_CS,
		"MEMORY":  hl.DRM_IOCTL_HL_MEMORY,
		"DEBUG":   hl.DRM_IOCTL_HL_DEBUG,
	}
	legacyRequests = map[string]uint{
		"INFO":    hl.HL_LEGACY_IOCTL_INFO,
		"CB":      hl.HL_LEGACY_IOCTL_CB,
		"CS":      hl.HL_LEGACY_IOCTL_CS,
		"WAIT_CS": hl.HL_LEGACY_IOCTL_WAIT_CS,
		"MEMORY":  hl.HL_LEGACY_IOCTL_MEMORY,
		"DEBUG":   hl.HL_LEGACY_IOCTL_DEBUG,
	}
)

// requestName names req in either encoding, or returns "".
func requestName(req uint) string {
	for name, r := range drmRequests {
		if r == req {
			return name
		}
	}
	for name, r := range legacyRequests {
		if r == req {
			return name
		}
	}
	return ""
}

// isProbe reports whether an ioctl is the encoding probe (INFO HW_IP_INFO).
func isProbe(req uint, arg unsafe.Pointer) bool {
	return requestName(req) == "INFO" && fakefile.Arg[hl.InfoArgs](arg).Op == hl.HL_INFO_HW_IP_INFO
}

// argBytes returns a copy of the argument of req, whose size is encoded in
// the request number.
func argBytes(req uint, arg unsafe.Pointer) []byte {
	size := int(req>>16) & 0x3fff
	return append([]byte(nil), unsafe.Slice((*byte)(arg), size)...)
}

// scribble overwrites the argument of req, as a driver may before failing.
func scribble(req uint, arg unsafe.Pointer) {
	size := int(req>>16) & 0x3fff
	b := unsafe.Slice((*byte)(arg), size)
	for i := range b {
		b[i] = 0xa5
	}
}

// typedCall is one typed call of Device with the Op and Sub its errors name.
type typedCall struct {
	op, sub string
	call    func(d *ioctl.Device) error
}

// typedCalls exercises every typed ioctl call once.
var typedCalls = []typedCall{
	{"INFO", "DEVICE_STATUS", func(d *ioctl.Device) error {
		var args hl.InfoArgs
		return d.Info(hl.HL_INFO_DEVICE_STATUS, &args, make([]byte, 16))
	}},
	{"CB", "CREATE", func(d *ioctl.Device) error {
		var args hl.CBArgs
		args.In().Op = hl.HL_CB_OP_CREATE
		args.In().CBSize = 4096
		return d.CB(&args)
	}},
	{"CS", "SIGNAL", func(d *ioctl.Device) error {
		var args hl.CSArgs
		args.In().CSFlags = hl.HL_CS_FLAGS_SIGNAL
		return d.CS(&args)
	}},
	{"WAIT_CS", "", func(d *ioctl.Device) error {
		var args hl.WaitCSArgs
		args.In().SetSeq(7)
		args.In().SetTimeoutUs(1000)
		return d.WaitCS(context.Background(), &args)
	}},
	{"MEMORY", "ALLOC", func(d *ioctl.Device) error {
		var args hl.MemArgs
		args.In().Op = hl.HL_MEM_OP_ALLOC
		return d.Memory(&args)
	}},
	{"DEBUG", "SPMU", func(d *ioctl.Device) error {
		args := hl.DebugArgs{Op: hl.HL_DEBUG_OP_SPMU}
		return d.Debug(&args, make([]byte, 8), nil)
	}},
}

// recorder is a fake kernel: it accepts the requests of one encoding,
// answers ENOTTY to the other, and records every request it sees.
type recorder struct {
	accept map[string]uint // requests served; others get reject
	reject error

	mu     sync.Mutex
	seen   []uint
	answer func(req uint, arg unsafe.Pointer) error // for served, non-probe calls
}

func (r *recorder) ioctl(req uint, arg unsafe.Pointer) error {
	r.mu.Lock()
	r.seen = append(r.seen, req)
	answer := r.answer
	r.mu.Unlock()
	served := false
	for _, a := range r.accept {
		served = served || a == req
	}
	if !served {
		return r.reject
	}
	if answer == nil || isProbe(req, arg) {
		return nil
	}
	return answer(req, arg)
}

func (r *recorder) requests() []uint {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]uint(nil), r.seen...)
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = nil
}

// newDRMDevice returns a Device on a fake kernel that serves DRM requests
// with answer (nil answers succeed), already probed.
func newDRMDevice(t *testing.T, answer func(req uint, arg unsafe.Pointer) error) (*ioctl.Device, *recorder, *fakefile.File) {
	t.Helper()
	r := &recorder{accept: drmRequests, reject: unix.ENOTTY, answer: answer}
	f := fakefile.New(r.ioctl)
	d := ioctl.New(f)
	if got := d.Encoding(); got != ioctl.EncodingDRM {
		t.Fatalf("Encoding() = %v, want drm", got)
	}
	r.reset()
	return d, r, f
}

// callFor returns the typed call for op.
func callFor(t *testing.T, op string) typedCall {
	t.Helper()
	for _, c := range typedCalls {
		if c.op == op {
			return c
		}
	}
	t.Fatalf("no typed call for %s", op)
	return typedCall{}
}
