package ioctl_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/ioctl/internal/fakefile"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestProbeChoosesEncoding(t *testing.T) {
	tests := []struct {
		name     string
		drm      error // the answer to the DRM probe
		legacy   error // the answer to the legacy probe
		want     ioctl.Encoding
		wantReqs []uint // the probe's requests
	}{
		{"drm accepted", nil, nil, ioctl.EncodingDRM,
			[]uint{hl.DRM_IOCTL_HL_INFO}},
		{"drm busy", unix.EBUSY, nil, ioctl.EncodingDRM,
			[]uint{hl.DRM_IOCTL_HL_INFO}},
		{"drm eperm", unix.EPERM, nil, ioctl.EncodingDRM,
			[]uint{hl.DRM_IOCTL_HL_INFO}},
		{"drm efault", unix.EFAULT, nil, ioctl.EncodingDRM,
			[]uint{hl.DRM_IOCTL_HL_INFO}},
		{"drm enotty", unix.ENOTTY, nil, ioctl.EncodingLegacy,
			[]uint{hl.DRM_IOCTL_HL_INFO, hl.HL_LEGACY_IOCTL_INFO}},
		{"drm einval", unix.EINVAL, nil, ioctl.EncodingLegacy,
			[]uint{hl.DRM_IOCTL_HL_INFO, hl.HL_LEGACY_IOCTL_INFO}},
		{"legacy busy", unix.ENOTTY, unix.EBUSY, ioctl.EncodingLegacy,
			[]uint{hl.DRM_IOCTL_HL_INFO, hl.HL_LEGACY_IOCTL_INFO}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen []uint
			f := fakefile.New(func(req uint, arg unsafe.Pointer) error {
				seen = append(seen, req)
				args := fakefile.Arg[hl.InfoArgs](arg)
				if args.Op != hl.HL_INFO_HW_IP_INFO || args.ReturnSize == 0 || args.ReturnPointer.IsNil() {
					t.Errorf("probe args = %+v, want HW_IP_INFO with a buffer", *args)
				}
				switch req {
				case hl.DRM_IOCTL_HL_INFO:
					return tt.drm
				case hl.HL_LEGACY_IOCTL_INFO:
					return tt.legacy
				}
				t.Errorf("unexpected request %#x", req)
				return unix.ENOTTY
			})
			d := ioctl.New(f)
			if got := d.Encoding(); got != tt.want {
				t.Errorf("Encoding() = %v, want %v", got, tt.want)
			}
			if got := d.Encoding(); got != tt.want {
				t.Errorf("second Encoding() = %v, want %v", got, tt.want)
			}
			if diff := cmp.Diff(tt.wantReqs, seen); diff != "" {
				t.Errorf("probe requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEncodingUsedByEveryCall(t *testing.T) {
	for _, enc := range []struct {
		name   string
		accept map[string]uint
		want   ioctl.Encoding
		typ    uint // 'd' or 'H'
		nrBase uint // 0x40 for drm, 1 for legacy
	}{
		{"drm", drmRequests, ioctl.EncodingDRM, 'd', 0x40},
		{"legacy", legacyRequests, ioctl.EncodingLegacy, 'H', 1},
	} {
		t.Run(enc.name, func(t *testing.T) {
			r := &recorder{accept: enc.accept, reject: unix.ENOTTY}
			d := ioctl.New(fakefile.New(r.ioctl))
			if got := d.Encoding(); got != enc.want {
				t.Fatalf("Encoding() = %v, want %v", got, enc.want)
			}
			nrs := map[string]uint{"INFO": 0, "CB": 1, "CS": 2, "WAIT_CS": 3, "MEMORY": 4, "DEBUG": 5}
			for _, c := range typedCalls {
				r.reset()
				if err := c.call(d); err != nil {
					t.Fatalf("%s: %v", c.op, err)
				}
				got := r.requests()
				want := []uint{enc.accept[c.op]}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s requests (-want +got):\n%s", c.op, diff)
				}
				req := got[0]
				if typ, nr := req>>8&0xff, req&0xff; typ != enc.typ || nr != enc.nrBase+nrs[c.op] {
					t.Errorf("%s request %#x has type %q nr %#x, want %q %#x",
						c.op, req, rune(typ), nr, rune(enc.typ), enc.nrBase+nrs[c.op])
				}
			}
		})
	}
}

func TestProbeFailsOnce(t *testing.T) {
	for _, errno := range []unix.Errno{unix.ENOTTY, unix.EINVAL} {
		t.Run(errno.Error(), func(t *testing.T) {
			f := fakefile.New(func(req uint, arg unsafe.Pointer) error { return errno })
			d := ioctl.New(f)
			var args hl.InfoArgs
			err := d.Info(hl.HL_INFO_DEVICE_STATUS, &args, nil)
			if !errors.Is(err, ioctl.ErrNotSupported) {
				t.Errorf("Info() = %v, want an error matching ErrNotSupported", err)
			}
			if !errors.Is(err, errno) {
				t.Errorf("Info() = %v, want an error matching %v", err, errno)
			}
			for _, s := range []string{"probe", "drm", "legacy", "fake"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			if got := d.Encoding(); got != ioctl.EncodingUnknown {
				t.Errorf("Encoding() = %v, want unknown", got)
			}
			for _, c := range typedCalls {
				if err := c.call(d); !errors.Is(err, ioctl.ErrNotSupported) {
					t.Errorf("%s after failed probe = %v, want ErrNotSupported", c.op, err)
				}
			}
			if got := f.Calls(); got != 2 {
				t.Errorf("%d ioctls, want 2 (one probe per encoding, never repeated)", got)
			}
		})
	}
}

// TestProbeBadFile: a File whose descriptor is not open answers EBADF
// before any handler; the probe fails with that errno, which is not
// ErrClosed (the Device is open), and does not guess an encoding.
func TestProbeBadFile(t *testing.T) {
	f := fakefile.New(func(req uint, arg unsafe.Pointer) error { return unix.EBADF })
	d := ioctl.New(f)
	var args hl.InfoArgs
	err := d.Info(hl.HL_INFO_DEVICE_STATUS, &args, nil)
	if !errors.Is(err, unix.EBADF) || errors.Is(err, ioctl.ErrClosed) {
		t.Errorf("Info() = %v, want EBADF not matching ErrClosed", err)
	}
	if got := d.Encoding(); got != ioctl.EncodingUnknown {
		t.Errorf("Encoding() = %v, want unknown", got)
	}
	if got := f.Calls(); got != 1 {
		t.Errorf("%d ioctls, want 1 (the failure is kept)", got)
	}
}

func TestProbeOnceConcurrently(t *testing.T) {
	var mu sync.Mutex
	probes := 0
	f := fakefile.New(func(req uint, arg unsafe.Pointer) error {
		if isProbe(req, arg) {
			mu.Lock()
			probes++
			mu.Unlock()
		}
		return nil
	})
	d := ioctl.New(f)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var args hl.InfoArgs
			if err := d.Info(hl.HL_INFO_DEVICE_STATUS, &args, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if probes != 1 {
		t.Errorf("%d probes, want 1", probes)
	}
}

func TestEncodingString(t *testing.T) {
	got := []string{ioctl.EncodingUnknown.String(), ioctl.EncodingDRM.String(), ioctl.EncodingLegacy.String(), ioctl.Encoding(9).String()}
	want := []string{"unknown", "drm", "legacy", "unknown"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("String() (-want +got):\n%s", diff)
	}
}
