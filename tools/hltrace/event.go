package main

import (
	"bytes"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/device"
)

// Event is one finished call as the BPF programs report it: the header
// (who, when, which call, the result) and the body the call's decoder
// filled. The body accessors (Info, CB, CS, ...) reinterpret it; each is
// meaningful only for its call.
type Event struct {
	raw    bpfEvent
	tracer *Tracer // for timestamps and function names; nil in tests

	// asic is the ASIC family (device.Gaudi or device.Gaudi2) of the
	// device a CS went to, when the printer knows it: queues and engines
	// are named by it.
	asic device.ASIC
}

// decodeRaw copies a ring buffer sample into e. Samples carry the header
// and as much of the body as the call fills; the rest reads as zero.
func (e *Event) decodeRaw(b []byte) error {
	if len(b) < sizeofHdr {
		return fmt.Errorf("short event: %d bytes, want at least %d", len(b), sizeofHdr)
	}
	copyEvent(&e.raw, b)
	return nil
}

// Call says which call this is.
func (e *Event) Call() bpfCall { return e.raw.Hdr.Call }

// PID is the process (thread group) id, TID the thread id.
func (e *Event) PID() uint32 { return e.raw.Hdr.Pid }
func (e *Event) TID() uint32 { return e.raw.Hdr.Tid }

// Comm is the task's command name.
func (e *Event) Comm() string {
	c := e.raw.Hdr.Comm[:]
	if i := bytes.IndexByte(c, 0); i >= 0 {
		c = c[:i]
	}
	return string(c)
}

// Cmd is the ioctl request number (the function id for fentry events).
func (e *Event) Cmd() uint32 { return e.raw.Hdr.Cmd }

// FD is the file descriptor the call used.
func (e *Event) FD() int32 { return e.raw.Hdr.Fd }

// Arg is the call's pointer argument.
func (e *Event) Arg() uint64 { return e.raw.Hdr.Arg }

// Ret is the raw return value.
func (e *Event) Ret() int64 { return e.raw.Hdr.Ret }

// Start and End are the CLOCK_MONOTONIC times of entry and exit.
func (e *Event) Start() uint64 { return e.raw.Hdr.StartNs }
func (e *Event) End() uint64   { return e.raw.Hdr.EndNs }

// Duration is the time from entry to exit.
func (e *Event) Duration() time.Duration { return time.Duration(e.raw.Hdr.EndNs - e.raw.Hdr.StartNs) }

// Errno is the error the call returned, or 0. Function events report
// kernel error pointers the same way.
func (e *Event) Errno() unix.Errno {
	r := e.raw.Hdr.Ret
	if r < 0 && r >= -4095 {
		return unix.Errno(-r)
	}
	return 0
}

// OK reports whether the call succeeded.
func (e *Event) OK() bool { return e.Errno() == 0 }

// EnterFault and ExitFault report that the caller's struct could not be
// read at entry or exit: the body's fields from that side are zero.
func (e *Event) EnterFault() bool { return e.raw.Hdr.Flags&bpfEventFlagEVF_ENTER_FAULT != 0 }
func (e *Event) ExitFault() bool  { return e.raw.Hdr.Flags&bpfEventFlagEVF_EXIT_FAULT != 0 }

// Body accessors.
func (e *Event) Info() *bpfInfoBody     { return bodyAs[bpfInfoBody](e) }
func (e *Event) CB() *bpfCbBody         { return bodyAs[bpfCbBody](e) }
func (e *Event) CS() *bpfCsBody         { return bodyAs[bpfCsBody](e) }
func (e *Event) CSIDs() *bpfCsIdsBody   { return bodyAs[bpfCsIdsBody](e) } // engine and engine core commands
func (e *Event) Wait() *bpfWaitBody     { return bodyAs[bpfWaitBody](e) }
func (e *Event) Mem() *bpfMemBody       { return bodyAs[bpfMemBody](e) }
func (e *Event) Debug() *bpfDebugBody   { return bodyAs[bpfDebugBody](e) }
func (e *Event) Uverbs() *bpfUverbsBody { return bodyAs[bpfUverbsBody](e) }
func (e *Event) Dmabuf() *bpfDmabufBody { return bodyAs[bpfDmabufBody](e) }
func (e *Event) Open() *bpfOpenBody     { return bodyAs[bpfOpenBody](e) }
func (e *Event) Mmap() *bpfMmapBody     { return bodyAs[bpfMmapBody](e) }
func (e *Event) Func() *bpfFuncBody     { return bodyAs[bpfFuncBody](e) }

// cstr returns the NUL-terminated string at the start of b.
func cstr(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
