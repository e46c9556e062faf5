package ib

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gaudi-go/gaudi/uapi/rdma"
)

func TestDecodeIoctl(t *testing.T) {
	r := request{obj: uint16(rdma.UVERBS_OBJECT_DEVICE), method: uint16(rdma.UVERBS_METHOD_QUERY_PORT)}
	r.inline(uint16(rdma.UVERBS_ATTR_QUERY_PORT_PORT_NUM), 8, 1)
	r.ptrOut(uint16(rdma.UVERBS_ATTR_QUERY_PORT_RESP), queryPortRespExSize)
	head := r.encode(uint32(DriverRXE))
	h, attrs, err := DecodeIoctl(r.buf)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(IoctlHeader{Length: uint16(head), Object: 0, Method: 2, NumAttrs: 2, DriverID: DriverRXE}, h); d != "" {
		t.Errorf("header (-want +got):\n%s", d)
	}
	if attrs[0] != (Attr{ID: 0, Len: 8, Flags: 1, Data: 1}) || attrs[1].Len != 48 || payloadAt(r.buf, attrs[1].Data, 48) == nil {
		t.Errorf("attributes %v", attrs)
	}
	if got := attrs[0].String(); got != "id=0x0 len=8 flags=M data=0x1" {
		t.Errorf("Attr.String = %q", got)
	}
	if got := (Attr{Flags: 3 | 8}).String(); got != "id=0x0 len=0 flags=MV|0x8 data=0x0" {
		t.Errorf("Attr.String = %q", got)
	}
	// Framing errors.
	for name, b := range map[string][]byte{
		"short":         r.buf[:20],
		"cut attrs":     r.buf[:head-1],
		"length lies":   func() []byte { b := append([]byte(nil), r.buf...); b[0]++; return b }(),
		"num_attrs big": func() []byte { b := append([]byte(nil), r.buf...); b[6] = 200; return b }(),
	} {
		if _, _, err := DecodeIoctl(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
}

func TestMethodName(t *testing.T) {
	tests := []struct {
		obj, meth uint16
		want      string
	}{
		{7, 4, "MR.REG_DMABUF_MR"},
		{0, 3, "DEVICE.GET_CONTEXT"},
		{1, 0, "PD.PD_DESTROY"},
		{3, 9, "CQ.method(9)"},
		{900, 1, "object(900).method(1)"},
	}
	for _, tt := range tests {
		if got := MethodName(tt.obj, tt.meth); got != tt.want {
			t.Errorf("MethodName(%d, %d) = %q, want %q", tt.obj, tt.meth, got, tt.want)
		}
	}
}

func FuzzDecodeIoctl(f *testing.F) {
	r := request{obj: uint16(rdma.UVERBS_OBJECT_MR), method: uint16(rdma.UVERBS_METHOD_REG_DMABUF_MR)}
	r.idrNew(0)
	r.idr(1, 3)
	r.inline(2, 8, 0)
	r.ptrOut(7, 4)
	r.encode(14)
	f.Add(r.buf)
	f.Add([]byte{24, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, attrs, err := DecodeIoctl(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not match ErrMalformed", err)
			}
			return
		}
		if int(h.NumAttrs) != len(attrs) || int(h.Length) != hdrSize+attrSize*len(attrs) || len(b) < int(h.Length) {
			t.Fatalf("header %+v with %d attributes from %d bytes", h, len(attrs), len(b))
		}
		for _, a := range attrs {
			_ = a.String()
			payloadAt(b, a.Data, int(a.Len))
		}
		_ = MethodName(h.Object, h.Method)
	})
}
