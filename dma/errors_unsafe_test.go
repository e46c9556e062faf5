package dma

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/gaudi-go/gaudi/internal/leak"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// munmapFailFile is an ioctl.File that creates kernel CBs and maps them,
// but fails every munmap.
type munmapFailFile struct {
	fakeFile
	mapped [][]byte
}

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
	b := make([]byte, length)
	f.mapped = append(f.mapped, b)
	return b, nil
}

func (f *munmapFailFile) Munmap(b []byte) error { return unix.EINVAL }

// TestMunmapErrors: a failed munmap of a kernel CB is returned by the
// pool's close, with the CB destroyed anyway.
func TestMunmapErrors(t *testing.T) {
	f := &munmapFailFile{}
	io := ioctl.New(f)
	defer io.Close()
	// The mappings stay on the record of live mappings, since their
	// munmap failed; they are Go memory, so the leak check (TestMain) is
	// told to forget them.
	defer func() {
		for _, b := range f.mapped {
			leak.Unmapped(b)
		}
	}()
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
