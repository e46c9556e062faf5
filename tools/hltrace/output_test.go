package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/uapi/hl"
)

// synth builds an event as the BPF side would: pid 100, tid 101, comm
// "app", fd 3.
func synth[T any](call bpfCall, cmd uint32, ret int64, start, end uint64, body *T) *Event {
	e := &Event{}
	h := &e.raw.Hdr
	h.Call, h.Cmd, h.Ret, h.StartNs, h.EndNs = call, cmd, ret, start, end
	h.Pid, h.Tid, h.Fd = 100, 101, 3
	copy(h.Comm[:], "app")
	if body != nil {
		setBody(e, body)
	}
	return e
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)

func TestLine(t *testing.T) {
	cs := &bpfCsBody{Flags: hl.HL_CS_FLAGS_STAGED_SUBMISSION | hl.HL_CS_FLAGS_STAGED_SUBMISSION_FIRST | 1<<30, NumExecute: 1, Nchunks: 1, Seq: 17}
	cs.Chunk[0] = bpfChunk{CbHandle: 0x1000, Queue: 2, CbSize: 64, Flags: hl.HL_CS_CHUNK_FLAGS_USER_ALLOC_CB}
	for _, tc := range []struct {
		e    *Event
		want string
	}{
		{synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 1000, 3500, cs),
			"03:04:05.000006     100     101 app             CS       fd=3 flags=STAGED_SUBMISSION|STAGED_SUBMISSION_FIRST|0x40000000 restore=0 exec=1 chunk0={queue=2 cb=0x1000 size=64 flags=USER_ALLOC_CB} -> seq=17 status=0 = 0 (2.50µs)\n"},
		{synth(bpfCallCALL_HL_WAIT_CS, hl.HL_LEGACY_IOCTL_WAIT_CS, 0, 0, 2_000_000, &bpfWaitBody{Seq: 17, TimeoutUs: 100, Status: hl.HL_WAIT_CS_STATUS_BUSY}),
			"WAIT_CS (legacy) fd=3 seq=17 timeout_us=100 flags=0 -> status=BUSY = 0 (2.0ms)\n"},
		{synth(bpfCallCALL_HL_MEMORY, hl.DRM_IOCTL_HL_MEMORY, -int64(unix.ENOMEM), 0, 40_000, &bpfMemBody{Op: hl.HL_MEM_OP_ALLOC, In: [3]uint64{4096}}),
			"MEMORY   fd=3 op=ALLOC size=4096 page_size=0 flags=0 = -1 ENOMEM (40.0µs)\n"},
		{synth(bpfCallCALL_HL_MEMORY, hl.DRM_IOCTL_HL_MEMORY, 0, 0, 1, &bpfMemBody{Op: hl.HL_MEM_OP_EXPORT_DMABUF_FD, In: [3]uint64{0x20, 4096, 0}, Out: [2]uint64{7}}),
			"op=EXPORT_DMABUF_FD addr=0x20 size=4096 offset=0x0 flags=0 -> fd=7 = 0"},
		{synth(bpfCallCALL_HL_INFO, hl.DRM_IOCTL_HL_INFO, 0, 0, 1, &bpfInfoBody{Op: 0x7777}),
			"INFO     fd=3 op=OP_30583 size=0 buf=0x0 = 0"},
		{synth(bpfCallCALL_DMABUF_SYNC, 0x40086200, 0, 0, 1, &bpfDmabufBody{Flags: 3}),
			"DMA_BUF_IOCTL_SYNC fd=3 flags=START|READ|WRITE = 0"},
		{synth(bpfCallCALL_MMAP, 0, 0x7f0000000000, 0, 1, &bpfMmapBody{Len: 4096, Off: 0x5000}),
			"mmap     fd=3 addr=0x0 len=4096 prot=0x0 flags=0x0 off=0x5000 = 0x7f0000000000"},
	} {
		got := string(tc.e.Line(nil, t0))
		if !strings.Contains(got, tc.want) {
			t.Errorf("line\n%q\nwant it to contain\n%q", got, tc.want)
		}
	}
}

func TestJSON(t *testing.T) {
	cs := &bpfCsBody{NumExecute: 1, Nchunks: 1, Seq: 9}
	cs.Chunk[0] = bpfChunk{CbHandle: 0xffff_ffff_ffff_0000, Queue: 1, CbSize: 8}
	e := synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 10, 20, cs)
	var buf bytes.Buffer
	if err := writeJSON(&buf, e.JSON(t0)); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, buf.Bytes())
	}
	args := got["args"].(map[string]any)
	chunk := args["chunk0"].(map[string]any)
	if got["call"] != "CS" || got["encoding"] != "drm" || got["dur_ns"] != 10.0 || chunk["cb"] != "0xffffffffffff0000" ||
		got["results"].(map[string]any)["seq"] != 9.0 || got["errno"] != nil {
		t.Errorf("JSON %s", buf.Bytes())
	}
}

// TestPrinter runs a CS and its waits through every view.
func TestPrinter(t *testing.T) {
	evs := []*Event{
		synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 1_000, 2_000, &bpfCsBody{NumExecute: 1, Seq: 5}),
		synth(bpfCallCALL_HL_CS, hl.DRM_IOCTL_HL_CS, 0, 1_500, 2_500, &bpfCsBody{NumExecute: 1, Seq: 6}),
		synth(bpfCallCALL_HL_WAIT_CS, hl.DRM_IOCTL_HL_WAIT_CS, 0, 3_000, 4_000, &bpfWaitBody{Seq: 5, Status: hl.HL_WAIT_CS_STATUS_BUSY}),
		synth(bpfCallCALL_HL_WAIT_CS, hl.DRM_IOCTL_HL_WAIT_CS, 0, 5_000, 81_000, &bpfWaitBody{Seq: 5, Status: hl.HL_WAIT_CS_STATUS_COMPLETED}),
		synth(bpfCallCALL_HL_WAIT_CS, hl.DRM_IOCTL_HL_WAIT_CS, -int64(unix.EINTR), 5_000, 6_000, &bpfWaitBody{Seq: 6}),
	}
	wall := func(ns uint64) time.Time { return t0.Add(time.Duration(ns)) }
	for _, tc := range []struct {
		opts outputOptions
		want []string
	}{
		{outputOptions{}, []string{"CS       fd=3", "-> seq=5", "= -1 EINTR"}},
		{outputOptions{Transfers: true}, []string{
			"CS fd=3 seq=5 chunks=1 flags=0 -> COMPLETED after 80.0µs (2 wait(s), last by tid 101)",
			"transfers: 1 completed, 0 aborted, 1 outstanding",
			"outstanding: pid 100 app fd=3 seq=6 chunks=1 waits=0",
			"submit-to-completion latency (1 samples",
			"[  64µs,  128µs)        1 |@@@@",
		}},
		{outputOptions{Summary: true}, []string{"CALL", "CS", "WAIT_CS", "EINTR:1", "5 events, 0 lost"}},
		{outputOptions{Summary: true, Transfers: true, JSON: true}, []string{
			`"type":"transfer"`, `"latency_ns":80000`, `"type":"transfers"`, `"outstanding":[{"pid":100,"fd":3,"seq":6}]`,
			`"type":"summary","call":"WAIT_CS","count":3,"errors":{"EINTR":1}`, `"type":"stats","events":5,"lost":0`,
		}},
	} {
		var buf bytes.Buffer
		p := newPrinter(&buf, tc.opts, wall)
		for _, e := range evs {
			if err := p.event(e); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.finish(Counters{}); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%+v: output lacks %q:\n%s", tc.opts, w, out)
			}
		}
		if tc.opts.JSON {
			sc := bufio.NewScanner(strings.NewReader(out))
			for sc.Scan() {
				if !json.Valid(sc.Bytes()) {
					t.Errorf("invalid JSON line %s", sc.Bytes())
				}
			}
		}
		if (tc.opts.Summary || tc.opts.Transfers) && strings.Contains(out, "WAIT_CS  fd=3") {
			t.Errorf("%+v printed calls:\n%s", tc.opts, out)
		}
	}
}

func TestFlagString(t *testing.T) {
	for _, tc := range []struct {
		v    uint64
		want string
	}{
		{0, "0"},
		{hl.HL_CS_FLAGS_SIGNAL | hl.HL_CS_FLAGS_TIMESTAMP, "SIGNAL|TIMESTAMP"},
		{1 << 40, "0x10000000000"},
	} {
		if got := flagString(tc.v, hl.CSFlagNames); got != tc.want {
			t.Errorf("flagString(%#x) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
