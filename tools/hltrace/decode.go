package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/uapi/dmabuf"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"github.com/gaudi-go/gaudi/uapi/rdma"
)

// A Field is one decoded argument or result. Hex fields print as 0x...
// in text and as a "0x..." string in JSON (addresses do not fit in a
// JSON number). Names, when set, name the value (a uint64) or each value
// (a []uint64; "" where one has no name): text prints them instead of the
// numbers, and JSON keeps the numbers and adds them as "<key>_name" or
// "<key>_names".
type Field struct {
	Key   string
	Val   any // uint64, int64, string, []uint64 or []Field
	Hex   bool
	Names []string
}

func u(k string, v uint64) Field    { return Field{Key: k, Val: v} }
func x(k string, v uint64) Field    { return Field{Key: k, Val: v, Hex: true} }
func i(k string, v int64) Field     { return Field{Key: k, Val: v} }
func s(k string, v string) Field    { return Field{Key: k, Val: v} }
func xs(k string, v []uint64) Field { return Field{Key: k, Val: v, Hex: true} }

// named is u with the value's name, when name has one for it.
func named(k string, v uint32, name func(uint32) string) Field {
	f := u(k, uint64(v))
	if n := name(v); n != "" {
		f.Names = []string{n}
	}
	return f
}

// namedList is a list of ids with the names name has for them.
func namedList(k string, ids []uint32, name func(uint32) string) Field {
	f := Field{Key: k, Val: make([]uint64, len(ids))}
	found := false
	names := make([]string, len(ids))
	for i, id := range ids {
		f.Val.([]uint64)[i] = uint64(id)
		names[i] = name(id)
		found = found || names[i] != ""
	}
	if found {
		f.Names = names
	}
	return f
}

// flagString names the bits of v with table, in bit order; bits without a
// name print in hex. Zero prints as "0".
func flagString(v uint64, table map[uint32]string) string {
	if v == 0 {
		return "0"
	}
	var parts []string
	var rest uint64
	for w := v; w != 0; w &= w - 1 {
		bit := uint64(1) << bits.TrailingZeros64(w)
		if name, ok := table[uint32(bit)]; ok && bit <= 1<<31 {
			parts = append(parts, name)
		} else {
			rest |= bit
		}
	}
	if rest != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(rest, 16))
	}
	return strings.Join(parts, "|")
}

// opName looks up an op code, falling back to its number.
func opName(table map[uint32]string, op uint32) string {
	if n, ok := table[op]; ok {
		return n
	}
	return "OP_" + strconv.FormatUint(uint64(op), 10)
}

// csKinds are the CS flags that choose the kind of a submission, in the
// order the driver tests them (hl_cs_get_cs_type).
var csKinds = []uint32{
	hl.HL_CS_FLAGS_SIGNAL,
	hl.HL_CS_FLAGS_WAIT,
	hl.HL_CS_FLAGS_COLLECTIVE_WAIT,
	hl.HL_CS_FLAGS_RESERVE_SIGNALS_ONLY,
	hl.HL_CS_FLAGS_UNRESERVE_SIGNALS_ONLY,
	hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND,
	hl.HL_CS_FLAGS_ENGINES_COMMAND,
	hl.HL_CS_FLAGS_FLUSH_PCI_HBW_WRITES,
}

// waitKinds choose the kind of a wait (hl_wait_ioctl).
var waitKinds = []uint32{hl.HL_WAIT_CS_FLAGS_INTERRUPT, hl.HL_WAIT_CS_FLAGS_MULTI_CS}

func kindOf(flags uint32, kinds []uint32, names map[uint32]string) string {
	for _, k := range kinds {
		if flags&k != 0 {
			return names[k]
		}
	}
	return ""
}

// engineCommandNames name the command of an engine or engine core CS
// (enum hl_engine_command).
var engineCommandNames = map[uint32]string{
	uint32(hl.HL_ENGINE_CORE_HALT): "CORE_HALT",
	uint32(hl.HL_ENGINE_CORE_RUN):  "CORE_RUN",
	uint32(hl.HL_ENGINE_STALL):     "STALL",
	uint32(hl.HL_ENGINE_RESUME):    "RESUME",
}

// dmabufSyncNames names the dma_buf_sync flag bits; DMA_BUF_SYNC_START is
// the absence of DMA_BUF_SYNC_END.
var dmabufSyncNames = map[uint32]string{
	dmabuf.DMA_BUF_SYNC_READ:  "READ",
	dmabuf.DMA_BUF_SYNC_WRITE: "WRITE",
	dmabuf.DMA_BUF_SYNC_END:   "END",
}

// CallName names the call: the habanalabs request from the uapi tables,
// the uverbs and dma-buf requests by their uapi constant, the syscall, or
// the kernel function.
func (e *Event) CallName() string {
	switch e.Call() {
	case bpfCallCALL_OPENAT:
		return "openat"
	case bpfCallCALL_MMAP:
		return "mmap"
	case bpfCallCALL_CLOSE:
		return "close"
	case bpfCallCALL_FUNC:
		if e.tracer != nil {
			return e.tracer.FuncName(e.Cmd())
		}
		return fmt.Sprintf("func#%d", e.Cmd())
	}
	if n, ok := hl.RequestNames[e.Cmd()]; ok {
		return n
	}
	if n, ok := hl.LegacyRequestNames[e.Cmd()]; ok {
		return n
	}
	for _, r := range otherRequests {
		if r.req == e.Cmd() {
			return r.name
		}
	}
	return fmt.Sprintf("ioctl(%#x)", e.Cmd())
}

// Encoding says which request encoding a habanalabs call used: "drm"
// ('d', /dev/accel) or "legacy" ('H', /dev/hlN); "" for other calls.
func (e *Event) Encoding() string {
	if _, ok := hl.RequestNames[e.Cmd()]; ok && e.isHL() {
		return "drm"
	}
	if _, ok := hl.LegacyRequestNames[e.Cmd()]; ok && e.isHL() {
		return "legacy"
	}
	return ""
}

func (e *Event) isHL() bool {
	c := e.Call()
	return c >= bpfCallCALL_HL_INFO && c <= bpfCallCALL_HL_DEBUG
}

// OpName names the sub-operation, for the summary: the INFO, CB, MEMORY
// and DEBUG op, the kind of a CS or wait, the uverbs object and method.
func (e *Event) OpName() string {
	switch e.Call() {
	case bpfCallCALL_HL_INFO:
		return opName(hl.InfoOpNames, e.Info().Op)
	case bpfCallCALL_HL_CB:
		return opName(hl.CBOpNames, e.CB().Op)
	case bpfCallCALL_HL_MEMORY:
		return opName(hl.MemOpNames, e.Mem().Op)
	case bpfCallCALL_HL_DEBUG:
		return opName(hl.DebugOpNames, e.Debug().Op)
	case bpfCallCALL_HL_CS:
		return kindOf(e.CS().Flags, csKinds, hl.CSFlagNames)
	case bpfCallCALL_HL_WAIT_CS:
		return kindOf(e.Wait().Flags, waitKinds, hl.WaitCSFlagNames)
	case bpfCallCALL_UVERBS:
		b := e.Uverbs()
		return fmt.Sprintf("%s method %d", uverbsObject(uint32(b.ObjectId)), b.MethodId)
	}
	return ""
}

// Args are the decoded arguments, read at entry.
func (e *Event) Args() []Field {
	switch e.Call() {
	case bpfCallCALL_HL_INFO:
		b := e.Info()
		f := []Field{s("op", opName(hl.InfoOpNames, b.Op)), u("size", uint64(b.ReturnSize)), x("buf", b.ReturnPointer)}
		if b.CtxId != 0 {
			f = append(f, u("ctx", uint64(b.CtxId)))
		}
		return f
	case bpfCallCALL_HL_CB:
		b := e.CB()
		f := []Field{s("op", opName(hl.CBOpNames, b.Op))}
		if b.Op == hl.HL_CB_OP_CREATE {
			f = append(f, u("size", uint64(b.Size)))
		} else {
			f = append(f, x("handle", b.Handle))
		}
		return append(f, s("flags", flagString(uint64(b.Flags), hl.CBFlagNames)))
	case bpfCallCALL_HL_CS:
		return e.csArgs()
	case bpfCallCALL_HL_WAIT_CS:
		b := e.Wait()
		var f []Field
		switch {
		case b.Flags&hl.HL_WAIT_CS_FLAGS_INTERRUPT != 0:
			f = []Field{x("addr", b.Seq), u("target", b.TimeoutUs)}
		case b.Flags&hl.HL_WAIT_CS_FLAGS_MULTI_CS != 0:
			n := min(int(b.Nseqs), len(b.Seqs))
			f = []Field{Field{Key: "seqs", Val: append([]uint64(nil), b.Seqs[:n]...)}, u("n", uint64(b.Nseqs)), u("timeout_us", b.TimeoutUs)}
		default:
			f = []Field{u("seq", b.Seq), u("timeout_us", b.TimeoutUs)}
		}
		return append(f, s("flags", flagString(uint64(b.Flags), hl.WaitCSFlagNames)))
	case bpfCallCALL_HL_MEMORY:
		return memArgs(e.Mem())
	case bpfCallCALL_HL_DEBUG:
		b := e.Debug()
		return []Field{s("op", opName(hl.DebugOpNames, b.Op)), u("reg", uint64(b.RegIdx)), u("enable", uint64(b.Enable)),
			u("in", uint64(b.InputSize)), u("out", uint64(b.OutputSize))}
	case bpfCallCALL_UVERBS:
		b := e.Uverbs()
		ids := make([]uint64, 0, b.Nattrs)
		for k := 0; k < int(b.Nattrs) && k < len(b.AttrId); k++ {
			ids = append(ids, uint64(b.AttrId[k]))
		}
		return []Field{s("object", uverbsObject(uint32(b.ObjectId))), u("method", uint64(b.MethodId)), u("attrs", uint64(b.NumAttrs)),
			u("driver", uint64(b.DriverId)), u("len", uint64(b.Length)), Field{Key: "attr_ids", Val: ids}}
	case bpfCallCALL_DMABUF_SYNC:
		b := e.Dmabuf()
		return []Field{s("flags", syncFlags(b.Flags))}
	case bpfCallCALL_DMABUF_SET_NAME:
		return []Field{s("name", cstr(e.Dmabuf().Name[:]))}
	case bpfCallCALL_DMABUF_EXPORT_SYNC_FILE:
		return []Field{s("flags", flagString(e.Dmabuf().Flags, dmabufSyncNames))}
	case bpfCallCALL_DMABUF_IMPORT_SYNC_FILE:
		b := e.Dmabuf()
		return []Field{s("flags", flagString(b.Flags, dmabufSyncNames)), i("sync_fd", int64(b.Fd))}
	case bpfCallCALL_OPENAT:
		b := e.Open()
		return []Field{s("path", cstr(b.Path[:])), x("flags", uint64(b.Flags))}
	case bpfCallCALL_MMAP:
		b := e.Mmap()
		return []Field{x("addr", b.Addr), u("len", b.Len), x("prot", uint64(b.Prot)), x("flags", uint64(b.Flags)), x("off", b.Off)}
	case bpfCallCALL_CLOSE:
		return nil
	case bpfCallCALL_FUNC:
		b := e.Func()
		if b.ArgKind != bpfFuncArgFARG_NONE {
			return []Field{u("size", b.DmabufSize), s("exporter", cstr(b.ExpName[:]))}
		}
		return []Field{xs("args", b.Args[:])}
	}
	return nil
}

// csArgs decodes a CS: its chunks, with the queue (and a collective
// wait's engine) named when the device's ASIC is known; or the engines or
// engine cores of an engine command; or the queue a signal reservation
// is for.
func (e *Event) csArgs() []Field {
	b := e.CS()
	queue := func(id uint32) string { return queueName(e.asic, id) }
	f := []Field{s("flags", flagString(uint64(b.Flags), hl.CSFlagNames))}
	if b.Flags&(hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND|hl.HL_CS_FLAGS_ENGINES_COMMAND) != 0 {
		ib := e.CSIDs()
		key, name := "engines", func(id uint32) string { return engineName(e.asic, id) }
		if b.Flags&hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND != 0 {
			key, name = "cores", func(id uint32) string { return engineCoreName(e.asic, id) }
		}
		n := min(int(ib.Nids), len(ib.Id))
		f = append(f, namedList(key, ib.Id[:n], name), u("n", uint64(ib.NumIds)), s("command", opName(engineCommandNames, ib.Command)))
		if b.Timeout != 0 {
			f = append(f, u("timeout", uint64(b.Timeout)))
		}
		return f
	}
	f = append(f, u("restore", uint64(b.NumRestore)), u("exec", uint64(b.NumExecute)))
	if b.Timeout != 0 {
		f = append(f, u("timeout", uint64(b.Timeout)))
	}
	switch {
	case b.Flags&hl.HL_CS_FLAGS_RESERVE_SIGNALS_ONLY != 0:
		// encaps_signals_count and encaps_signals_q_idx share seq.
		f = append(f, u("signals", uint64(uint32(b.InSeq))), named("queue", uint32(b.InSeq>>32), queue))
	case b.Flags&hl.HL_CS_FLAGS_UNRESERVE_SIGNALS_ONLY != 0:
		f = append(f, u("handle", uint64(uint32(b.InSeq)))) // encaps_sig_handle_id
	case b.Flags&hl.HL_CS_FLAGS_STAGED_SUBMISSION != 0 && b.Flags&hl.HL_CS_FLAGS_STAGED_SUBMISSION_FIRST == 0:
		f = append(f, u("staged_seq", b.InSeq))
	}
	for k := 0; k < int(b.Nchunks) && k < len(b.Chunk); k++ {
		c := b.Chunk[k]
		cf := []Field{
			named("queue", c.Queue, queue),
			x("cb", c.CbHandle),
			u("size", uint64(c.CbSize)),
			s("flags", flagString(uint64(c.Flags), hl.CSChunkFlagNames)),
		}
		if b.Flags&hl.HL_CS_FLAGS_COLLECTIVE_WAIT != 0 {
			cf = append(cf, named("engine", c.Engine, func(id uint32) string { return engineName(e.asic, id) }))
		}
		f = append(f, Field{Key: "chunk" + strconv.Itoa(k), Val: cf})
	}
	return f
}

// syncFlags names the flags of DMA_BUF_IOCTL_SYNC: START or END, then the
// access bits, such as "START|READ", or "END" when no bit is set.
func syncFlags(v uint64) string {
	dir := "START"
	if v&dmabuf.DMA_BUF_SYNC_END != 0 {
		dir = "END"
	}
	if rw := v &^ dmabuf.DMA_BUF_SYNC_END; rw != 0 {
		return dir + "|" + flagString(rw, dmabufSyncNames)
	}
	return dir
}

func memArgs(b *bpfMemBody) []Field {
	f := []Field{s("op", opName(hl.MemOpNames, b.Op))}
	switch b.Op {
	case hl.HL_MEM_OP_ALLOC:
		f = append(f, u("size", b.In[0]), u("page_size", b.In[1]))
	case hl.HL_MEM_OP_FREE:
		f = append(f, x("handle", b.In[0]))
	case hl.HL_MEM_OP_MAP:
		if b.Flags&hl.HL_MEM_USERPTR != 0 {
			f = append(f, x("host", b.In[0]), x("hint", b.In[1]), u("size", b.In[2]))
		} else {
			f = append(f, x("hint", b.In[0]), x("handle", b.In[1]))
		}
	case hl.HL_MEM_OP_UNMAP:
		f = append(f, x("va", b.In[0]))
	case hl.HL_MEM_OP_MAP_BLOCK:
		f = append(f, x("block", b.In[0]))
	case hl.HL_MEM_OP_EXPORT_DMABUF_FD:
		f = append(f, x("addr", b.In[0]), u("size", b.In[1]), x("offset", b.In[2]))
	case hl.HL_MEM_OP_TS_ALLOC:
		f = append(f, u("elements", uint64(b.NumElements)))
	}
	return append(f, s("flags", flagString(uint64(b.Flags), hl.MemFlagNames)))
}

// Results are the decoded outputs, read at exit; only for calls that
// succeeded.
func (e *Event) Results() []Field {
	if !e.OK() || e.ExitFault() {
		return nil
	}
	switch e.Call() {
	case bpfCallCALL_HL_CB:
		b := e.CB()
		switch b.Op {
		case hl.HL_CB_OP_CREATE:
			return []Field{x("handle", b.Out)}
		case hl.HL_CB_OP_INFO:
			if b.Flags&hl.HL_CB_FLAGS_GET_DEVICE_VA != 0 {
				return []Field{x("va", b.Out)}
			}
			return []Field{u("usage", uint64(uint32(b.Out)))}
		}
	case bpfCallCALL_HL_CS:
		b := e.CS()
		return []Field{u("seq", b.Seq), u("status", uint64(b.Status))}
	case bpfCallCALL_HL_WAIT_CS:
		b := e.Wait()
		f := []Field{s("status", opName(hl.WaitCSStatusNames, b.Status))}
		if b.OutFlags != 0 {
			f = append(f, s("flags", flagString(uint64(b.OutFlags), hl.WaitCSStatusFlagNames)))
		}
		if b.OutFlags&hl.HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD != 0 {
			f = append(f, i("ts_ns", b.TimestampNs))
		}
		if b.Flags&hl.HL_WAIT_CS_FLAGS_MULTI_CS != 0 {
			f = append(f, x("completed", uint64(b.CompletionMap)))
		}
		return f
	case bpfCallCALL_HL_MEMORY:
		b := e.Mem()
		switch b.Op {
		case hl.HL_MEM_OP_ALLOC, hl.HL_MEM_OP_TS_ALLOC:
			return []Field{x("handle", b.Out[0])}
		case hl.HL_MEM_OP_MAP:
			return []Field{x("va", b.Out[0])}
		case hl.HL_MEM_OP_MAP_BLOCK:
			return []Field{x("handle", b.Out[0]), u("size", uint64(uint32(b.Out[1])))}
		case hl.HL_MEM_OP_EXPORT_DMABUF_FD:
			return []Field{i("fd", int64(int32(b.Out[0])))}
		}
	case bpfCallCALL_DMABUF_EXPORT_SYNC_FILE:
		return []Field{i("sync_fd", int64(e.Dmabuf().Fd))}
	}
	return nil
}

// Result is the return value as text: "0", "3", "0x7f..." for mmap, or
// "-1 ENOTTY".
func (e *Event) Result() string {
	if errno := e.Errno(); errno != 0 {
		return "-1 " + errnoName(errno)
	}
	if e.Call() == bpfCallCALL_MMAP || (e.Call() == bpfCallCALL_FUNC && e.Ret() != 0 && e.Func().ArgKind != bpfFuncArgFARG_NONE) {
		return "0x" + strconv.FormatUint(uint64(e.Ret()), 16)
	}
	return strconv.FormatInt(e.Ret(), 10)
}

func errnoName(errno unix.Errno) string {
	if n := unix.ErrnoName(errno); n != "" {
		return n
	}
	return "errno " + strconv.Itoa(int(errno))
}

// appendFields writes fields as k=v separated by spaces.
func appendFields(b []byte, fields []Field) []byte {
	for n, f := range fields {
		if n > 0 {
			b = append(b, ' ')
		}
		b = append(b, f.Key...)
		b = append(b, '=')
		b = appendValue(b, f)
	}
	return b
}

func appendValue(b []byte, f Field) []byte {
	if len(f.Names) > 0 {
		if v, ok := f.Val.([]uint64); ok && len(v) == len(f.Names) {
			b = append(b, '[')
			for n, name := range f.Names {
				if n > 0 {
					b = append(b, ' ')
				}
				if name == "" {
					name = strconv.FormatUint(v[n], 10)
				}
				b = append(b, name...)
			}
			return append(b, ']')
		}
		return append(b, f.Names[0]...)
	}
	switch v := f.Val.(type) {
	case uint64:
		if f.Hex {
			return strconv.AppendUint(append(b, "0x"...), v, 16)
		}
		return strconv.AppendUint(b, v, 10)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case string:
		if f.Key == "name" || f.Key == "path" || f.Key == "exporter" {
			return strconv.AppendQuote(b, v)
		}
		return append(b, v...)
	case []uint64:
		b = append(b, '[')
		for n, w := range v {
			if n > 0 {
				b = append(b, ' ')
			}
			if f.Hex {
				b = strconv.AppendUint(append(b, "0x"...), w, 16)
			} else {
				b = strconv.AppendUint(b, w, 10)
			}
		}
		return append(b, ']')
	case []Field:
		b = append(b, '{')
		b = appendFields(b, v)
		return append(b, '}')
	}
	return fmt.Append(b, f.Val)
}

// Line formats the event as one text line:
//
//	TIME PID TID COMM CALL args... -> results = RESULT (DURATION)
func (e *Event) Line(b []byte, wall time.Time) []byte {
	b = wall.AppendFormat(b, "15:04:05.000000")
	b = fmt.Appendf(b, " %7d %7d %-15s %-8s", e.PID(), e.TID(), e.Comm(), e.CallName())
	if enc := e.Encoding(); enc == "legacy" {
		b = append(b, "(legacy)"...)
	}
	if e.FD() >= 0 && e.Call() != bpfCallCALL_FUNC && e.Call() != bpfCallCALL_OPENAT {
		b = fmt.Appendf(b, " fd=%d", e.FD())
	}
	if args := e.Args(); len(args) > 0 {
		b = append(b, ' ')
		b = appendFields(b, args)
	}
	if e.EnterFault() {
		b = append(b, " <args unreadable>"...)
	}
	if res := e.Results(); len(res) > 0 {
		b = append(b, " -> "...)
		b = appendFields(b, res)
	}
	b = append(b, " = "...)
	b = append(b, e.Result()...)
	b = append(b, " ("...)
	b = append(b, formatDuration(e.Duration())...)
	b = append(b, ")\n"...)
	return b
}

// formatDuration prints d in µs with a precision that suits it.
func formatDuration(d time.Duration) string {
	us := float64(d) / 1e3
	switch {
	case us < 10:
		return strconv.FormatFloat(us, 'f', 2, 64) + "µs"
	case us < 1e3:
		return strconv.FormatFloat(us, 'f', 1, 64) + "µs"
	default:
		return strconv.FormatFloat(us/1e3, 'f', 1, 64) + "ms"
	}
}

// jsonFields encodes fields as a JSON object.
func jsonFields(fields []Field) json.RawMessage {
	b := []byte{'{'}
	for n, f := range fields {
		if n > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, f.Key) // keys are plain ASCII
		b = append(b, ':')
		b = appendJSONValue(b, f)
		switch {
		case len(f.Names) == 1 && !isList(f.Val):
			b = strconv.AppendQuote(append(b, ','), f.Key+"_name")
			b = strconv.AppendQuote(append(b, ':'), f.Names[0])
		case len(f.Names) > 0:
			b = strconv.AppendQuote(append(b, ','), f.Key+"_names")
			b = append(b, ':')
			names, _ := json.Marshal(f.Names)
			b = append(b, names...)
		}
	}
	return append(b, '}')
}

func isList(v any) bool { _, ok := v.([]uint64); return ok }

func appendJSONValue(b []byte, f Field) []byte {
	switch v := f.Val.(type) {
	case uint64:
		if f.Hex {
			return append(strconv.AppendUint(append(b, `"0x`...), v, 16), '"')
		}
		return strconv.AppendUint(b, v, 10)
	case []uint64:
		b = append(b, '[')
		for n, w := range v {
			if n > 0 {
				b = append(b, ',')
			}
			b = appendJSONValue(b, Field{Val: w, Hex: f.Hex})
		}
		return append(b, ']')
	case []Field:
		return append(b, jsonFields(v)...)
	}
	m, err := json.Marshal(f.Val)
	if err != nil {
		return append(b, "null"...)
	}
	return append(b, m...)
}

// jsonCall is the JSON form of an event.
type jsonCall struct {
	Type     string          `json:"type"`
	Time     time.Time       `json:"time"`
	MonoNs   uint64          `json:"mono_ns"`
	PID      uint32          `json:"pid"`
	TID      uint32          `json:"tid"`
	Comm     string          `json:"comm"`
	Call     string          `json:"call"`
	Encoding string          `json:"encoding,omitempty"`
	Op       string          `json:"op,omitempty"`
	FD       int32           `json:"fd"`
	Args     json.RawMessage `json:"args"`
	Results  json.RawMessage `json:"results,omitempty"`
	Ret      int64           `json:"ret"`
	Errno    string          `json:"errno,omitempty"`
	DurNs    int64           `json:"dur_ns"`
	Faults   []string        `json:"faults,omitempty"`
}

// JSON encodes the event as one JSON object.
func (e *Event) JSON(wall time.Time) jsonCall {
	j := jsonCall{
		Type: "call", Time: wall, MonoNs: e.Start(), PID: e.PID(), TID: e.TID(), Comm: e.Comm(),
		Call: e.CallName(), Encoding: e.Encoding(), Op: e.OpName(), FD: e.FD(),
		Args: jsonFields(e.Args()), Ret: e.Ret(), DurNs: int64(e.Duration()),
	}
	if res := e.Results(); len(res) > 0 {
		j.Results = jsonFields(res)
	}
	if errno := e.Errno(); errno != 0 {
		j.Errno = errnoName(errno)
	}
	if e.EnterFault() {
		j.Faults = append(j.Faults, "enter")
	}
	if e.ExitFault() {
		j.Faults = append(j.Faults, "exit")
	}
	return j
}

// writeJSON writes v as one JSON line.
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// uverbsObject names a uverbs object id from the generated uapi table, or
// prints the number when the table has no name for it.
func uverbsObject(id uint32) string {
	if n, ok := rdma.UverbsObjectNames[id]; ok {
		return n
	}
	return fmt.Sprintf("object(%d)", id)
}
