package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gaudi-go/gaudi/device"
)

// outputOptions choose what hltrace prints.
type outputOptions struct {
	JSON      bool // JSON lines instead of text
	Summary   bool // per call and op counts and percentiles at the end
	Transfers bool // CS/WAIT_CS pairing
	DecodeCB  bool // LIN_DMA packets of submitted command buffers

	// Errors and Slower select the calls printed and summarised: those
	// that failed, those that took longer than Slower (0: all).
	Errors bool
	Slower time.Duration

	// ASIC names the queues and engines of devices hltrace cannot
	// identify (device.Gaudi or device.Gaudi2; ASICUnknown: none).
	ASIC device.ASIC
	// SysFS is where sysfs is, to identify devices ("" for "/").
	SysFS string
}

// filtered reports whether Errors or Slower select calls.
func (o *outputOptions) filtered() bool { return o.Errors || o.Slower > 0 }

// match reports whether the call passes Errors and Slower.
func (o *outputOptions) match(e *Event) bool {
	if o.Errors && e.OK() {
		return false
	}
	return o.Slower <= 0 || e.Duration() > o.Slower
}

// filters spells the filters as their flags, such as "-errors -slower 1ms".
func (o *outputOptions) filters() string {
	var f []string
	if o.Errors {
		f = append(f, "-errors")
	}
	if o.Slower > 0 {
		f = append(f, "-slower "+o.Slower.String())
	}
	return strings.Join(f, " ")
}

// printer turns events into output. Each call that passes the filters is
// printed unless -summary or -transfers asks for those views alone. Not
// safe for concurrent use.
type printer struct {
	w     *bufio.Writer
	opts  outputOptions
	wall  func(mono uint64) time.Time
	asics *asicResolver

	sum   *summary
	xfers *transferView
	cbs   *cbDecoder

	line  []byte
	xbuf  []transfer
	pbuf  []dmaPacket
	ebuf  []cbError
	qbuf  []pqmPacket
	qerrs []pqmError

	calls   uint64 // events seen
	ioctls  uint64 // of which ioctls
	matched uint64 // events that passed the filters
	// unnamed counts the CS and MEMORY calls on devices whose ASIC
	// nothing identified, printed with raw queue, engine and block
	// numbers (asicHint says what to do about it).
	unnamed uint64
}

// asicHint returns the line that tells the user how to get names for the
// raw queue numbers in the trace, or "" when every CS was named.
func (p *printer) asicHint() string {
	if p.unnamed == 0 {
		return ""
	}
	return fmt.Sprintf("%d command submission(s) show raw queue and engine numbers: nothing told hltrace the device's ASIC "+
		"(it reads it from the program's INFO HW_IP_INFO call, which a program makes when it opens the device, before -p or -c attached, "+
		"or from sysfs); pass -asic gaudi, gaudi2 or gaudi3 to name them", p.unnamed)
}

func newPrinter(w io.Writer, opts outputOptions, wall func(uint64) time.Time) *printer {
	root := opts.SysFS
	if root == "" {
		root = "/"
	}
	p := &printer{w: bufio.NewWriterSize(w, 64<<10), opts: opts, wall: wall, asics: newASICResolver(root, opts.ASIC)}
	if opts.Summary {
		p.sum = newSummary()
	}
	if opts.Transfers {
		p.xfers = newTransferView()
	}
	if opts.DecodeCB {
		p.cbs = newCBDecoder()
	}
	return p
}

func (p *printer) printCalls() bool { return !p.opts.Summary && !p.opts.Transfers }

// isIoctl reports whether the event is one of the traced ioctls (not an
// openat, mmap, close or function event).
func (e *Event) isIoctl() bool {
	return e.Call() >= bpfCallCALL_HL_INFO && e.Call() <= bpfCallCALL_DMABUF_IMPORT_SYNC_FILE
}

func (p *printer) event(e *Event) error {
	p.calls++
	if e.isIoctl() {
		p.ioctls++
	}
	p.asics.observe(e)
	switch e.Call() {
	case bpfCallCALL_HL_CS:
		e.asic = p.asics.ofCall(e, e.CS().Rdev)
		if e.asic == device.ASICUnknown {
			p.unnamed++
		}
	case bpfCallCALL_HL_MEMORY:
		e.asic = p.asics.ofCall(e, e.Mem().Rdev)
	}
	match := p.opts.match(e)
	if match {
		p.matched++
	}
	if match && p.printCalls() {
		if p.opts.JSON {
			if err := writeJSON(p.w, e.JSON(p.wall(e.Start()))); err != nil {
				return err
			}
		} else {
			p.line = e.Line(p.line[:0], p.wall(e.Start()))
			if _, err := p.w.Write(p.line); err != nil {
				return err
			}
		}
	}
	if p.cbs != nil {
		p.pbuf, p.ebuf = p.cbs.observe(e, p.pbuf[:0], p.ebuf[:0])
		if !match { // the packets follow the call they belong to
			p.pbuf, p.ebuf = p.pbuf[:0], p.ebuf[:0]
		}
		for i := range p.pbuf {
			if err := p.packet(&p.pbuf[i], e); err != nil {
				return err
			}
		}
		for _, ce := range p.ebuf {
			if p.opts.JSON {
				if err := writeJSON(p.w, map[string]any{"type": "cb_error", "pid": ce.PID, "seq": ce.Seq, "chunk": ce.Chunk, "error": ce.Err}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(p.w, "    seq=%d chunk%d: %s\n", ce.Seq, ce.Chunk, ce.Err)
			}
		}
		if err := p.pqm(e, match); err != nil {
			return err
		}
	}
	if p.sum != nil && match {
		p.sum.add(e)
	}
	if p.xfers != nil {
		p.xbuf = p.xfers.observe(e, p.xbuf[:0])
		for i := range p.xbuf {
			t := &p.xbuf[i]
			if p.opts.JSON {
				if err := writeJSON(p.w, t.json(p.wall(t.End))); err != nil {
					return err
				}
			} else {
				p.line = t.line(p.line[:0], p.wall(t.End))
				if _, err := p.w.Write(p.line); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// pqm prints the Gaudi3 ring packets and errors the decoder found at e.
func (p *printer) pqm(e *Event, match bool) error {
	p.qbuf, p.qerrs = p.cbs.observePQM(e, p.qbuf[:0], p.qerrs[:0])
	if !match { // the packets follow the call they belong to
		return nil
	}
	for i := range p.qbuf {
		q := &p.qbuf[i]
		if p.opts.JSON {
			if err := writeJSON(p.w, q.json(p.wall(e.Start()))); err != nil {
				return err
			}
			continue
		}
		p.line = q.line(p.line[:0])
		if _, err := p.w.Write(p.line); err != nil {
			return err
		}
	}
	for _, qe := range p.qerrs {
		var err error
		if p.opts.JSON {
			err = writeJSON(p.w, map[string]any{"type": "pqm_error", "pid": qe.PID, "channel": qe.Ch, "error": qe.Err})
		} else {
			_, err = fmt.Fprintf(p.w, "    PDMA ch %d: %s\n", qe.Ch, qe.Err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *printer) packet(d *dmaPacket, e *Event) error {
	if p.opts.JSON {
		return writeJSON(p.w, d.json(p.wall(e.Start())))
	}
	p.line = d.line(p.line[:0])
	_, err := p.w.Write(p.line)
	return err
}

func (p *printer) flush() error { return p.w.Flush() }

// finish prints the views kept until the end and the counters. When no
// event arrived and none was lost it prints nothing in text (the caller
// says why nothing was seen), and the counters in JSON.
func (p *printer) finish(c Counters) error {
	if p.opts.JSON {
		if p.xfers != nil {
			if err := writeJSON(p.w, p.xfers.json()); err != nil {
				return err
			}
		}
		if p.sum != nil {
			for _, r := range p.sum.json() {
				if err := writeJSON(p.w, r); err != nil {
					return err
				}
			}
		}
		stats := jsonStats{Type: "stats", Events: p.calls, Matched: p.matched, Lost: c.Lost, Untraced: c.InflightFull, Unreadable: c.Faults, Unfollowed: c.FollowFull}
		if err := writeJSON(p.w, stats); err != nil {
			return err
		}
		return p.flush()
	}
	if p.calls == 0 && c.Lost == 0 {
		return p.flush()
	}
	if p.xfers != nil {
		fmt.Fprintln(p.w)
		p.xfers.writeText(p.w)
	}
	if p.sum != nil {
		fmt.Fprintln(p.w)
		p.sum.writeText(p.w)
	}
	if p.sum != nil || p.xfers != nil {
		fmt.Fprintf(p.w, "\n%d events, %d lost\n", p.calls, c.Lost)
		if p.opts.filtered() {
			fmt.Fprintf(p.w, "%d matched %s\n", p.matched, p.opts.filters())
		}
	}
	return p.flush()
}

// jsonStats closes a JSON stream: events printed, and the BPF counters.
type jsonStats struct {
	Type       string `json:"type"`
	Events     uint64 `json:"events"`
	Lost       uint64 `json:"lost"`
	Untraced   uint64 `json:"untraced_inflight_full"`
	Unreadable uint64 `json:"unreadable_args"`
	Matched    uint64 `json:"matched"` // events that passed -errors and -slower
	Unfollowed uint64 `json:"unfollowed_processes"`
}
