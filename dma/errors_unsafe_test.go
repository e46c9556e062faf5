package dma

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// munmapFailFile is an ioctl.File that creates kernel CBs and maps them,
// but fails every munmap.
type munmapFailFile struct{ fakeFile }

func (f *munmapFailFile) Ioctl(req uint, arg unsafe.Pointer) error {
	if req == uint(hl.DRM_IOCTL_HL_CB) {
		a := (*hl.CBArgs)(arg)
		if a.In().Op == hl.HL_CB_OP_CREATE {
			*a = hl.CBArgs{}
			a.Out().SetCBHandle(1 << 12)
		}
		return nil
	}
	return f.fakeFile.Ioctl(req, arg)
}

func (f *munmapFailFile) Mmap(offset int64, length int, prot, flags int) ([]byte, error) {
	return make([]byte, length), nil
}

func (f *munmapFailFile) Munmap(b []byte) error { return unix.EINVAL }

// TestMunmapErrors: a failed munmap of a kernel CB is returned by the
// pool's close, with the CB destroyed anyway.
func TestMunmapErrors(t *testing.T) {
	io := ioctl.New(&munmapFailFile{})
	defer io.Close()
	p := newCBPool(io, nil, false, false)
	if _, err := p.get(cbSize); err != nil {
		t.Fatal(err)
	}
	err := p.close()
	var e *ioctl.Error
	if !errors.Is(err, unix.EINVAL) || !errors.As(err, &e) || e.Op != "MUNMAP" {
		t.Errorf("close: %v, want the munmap's EINVAL", err)
	}
}
