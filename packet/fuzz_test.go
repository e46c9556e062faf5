package packet

import (
	"bytes"
	"errors"
	"testing"
)

// fuzzFormats are the formats FuzzDecode's first argument selects.
var fuzzFormats = [...]Format{Gaudi, Gaudi2, Gaudi3, Gaudi3PQM}

// fuzzFormat returns the format of FuzzDecode's first argument, and
// formatArg the argument for a format.
func fuzzFormat(a uint8) Format { return fuzzFormats[int(a)%len(fuzzFormats)] }

func formatArg(fm Format) uint8 { return uint8(fm - 1) }

// FuzzDecode checks, for every format, that decoding arbitrary bytes never
// panics or reads out of bounds, that every error is a *DecodeError, and
// that a decoded packet re-encodes to the same bytes (with reserved bits
// cleared when Decode reported them).
func FuzzDecode(f *testing.F) {
	for _, fm := range []Format{Gaudi3, Gaudi3PQM} {
		var cb []byte
		for _, p := range samples3(fm) {
			cb, _ = p.Append(fm, cb)
			one, _ := p.Append(fm, nil)
			f.Add(formatArg(fm), one)
		}
		f.Add(formatArg(fm), cb)
	}
	f.Add(formatArg(Gaudi3PQM), raw(0, ctlOf(OpLinPDMA)|2, 0, 0, 0, 0))
	f.Add(formatArg(Gaudi3PQM), raw(0, ctlOf(OpLinPDMA)|1<<5, 0, 0, 0, 0, 0xffffffff, 0xffffffff))
	f.Add(formatArg(Gaudi3PQM), raw(0, ctlOf(OpLinPDMA)|1, 0, 0, 0, 0, 0, 0, 0, 0))
	f.Add(formatArg(Gaudi3PQM), raw(0xffff, ctlOf(OpChWRegBulk)))
	f.Add(formatArg(Gaudi3), raw(0, ctlOf(OpLinDMA)|0x7ff, 0, 0, 0, 0))
	for _, fm := range []Format{Gaudi, Gaudi2} {
		var cb []byte
		for _, p := range samples(fm) {
			cb, _ = p.Append(fm, cb)
			one, _ := p.Append(fm, nil)
			f.Add(formatArg(fm), one)
		}
		f.Add(formatArg(fm), cb)
		s, _ := fm.Signal(5, true)
		arm, _ := fm.ArmMonitor(0x800, 8, 0x3, 2)
		b := NewBuilder(fm, nil)
		b.MsgShort(fm.MonitorWrite(0, 0x1000))
		b.MsgShort(fm.MonitorWrite(0x200, 0))
		b.MsgShort(fm.MonitorWrite(0x400, 1))
		b.MsgShort(arm)
		b.Fence(fm.FenceWait())
		b.MsgShort(s)
		f.Add(formatArg(fm), b.Bytes())
	}
	f.Add(formatArg(Gaudi), raw(0, ctlOf(OpLinDMA), 0, 0, 0, 0))
	f.Add(formatArg(Gaudi2), raw(0xffff, ctlOf(OpWRegBulk)))
	f.Add(formatArg(Gaudi2), raw(2, ctlOf(OpWRegBulk), 1, 2, 3))
	f.Add(formatArg(Gaudi2), raw(0, ctlOf(OpWReg64Long), 0, 0))
	f.Add(formatArg(Gaudi), raw(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff))
	f.Add(formatArg(Gaudi2), raw(0xffffffff, 0xe9ffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff))
	f.Add(formatArg(Gaudi), []byte{1, 2, 3})

	f.Fuzz(func(t *testing.T, format uint8, data []byte) {
		fm := fuzzFormat(format)
		// Longer inputs add nothing a 512-byte one cannot reach (a
		// WREG_BULK of 63 values), and they make minimization, which is
		// quadratic in the input length, take the whole fuzzing time.
		if len(data) > 512 {
			return
		}
		packets := 0
		var stopErr error
		for off := 0; off < len(data); {
			p, n, err := fm.Decode(data[off:])
			var de *DecodeError
			if err != nil && (!errors.As(err, &de) || de.Error() == "") {
				t.Fatalf("offset %d: error %#v is not a *DecodeError", off, err)
			}
			if err != nil && !errors.Is(err, ErrReservedBits) {
				if p != nil || n != 0 {
					t.Fatalf("offset %d: %v returned packet %v, %d", off, err, p, n)
				}
				stopErr = err
				break
			}
			if p == nil || n <= 0 || n > len(data)-off || n != p.Len() {
				t.Fatalf("offset %d: packet %v, n %d, Len %d, %d bytes left", off, p, n, lenOf(p), len(data)-off)
			}
			if p.Opcode() != Opcode(data[off+7]&0x1f) {
				t.Fatalf("offset %d: opcode %v, byte %#x", off, p.Opcode(), data[off+7])
			}
			orig := data[off : off+n]
			enc, eerr := p.Append(fm, nil)
			if eerr != nil {
				t.Fatalf("offset %d: decoded %v does not encode: %v", off, p, eerr)
			}
			if err == nil && !bytes.Equal(enc, orig) {
				t.Fatalf("offset %d: %v\n in  %x\n out %x", off, p, orig, enc)
			}
			if err != nil {
				// Only reserved bits differ: re-encoding sets no bit the
				// input lacks (but the Gaudi LIN_DMA lin bit and the Gaudi3
				// LIN_DMA and LIN_PDMA en_desc_commit, ctl bit 11) and
				// decodes cleanly to the same packet.
				for i := range enc {
					extra := enc[i] &^ orig[i]
					if fm == Gaudi && p.Opcode() == OpLinDMA && i == 4 {
						extra &^= 0x08
					}
					if fm.g3() && p.Opcode() == OpLinDMA && i == 5 {
						extra &^= 0x08
					}
					if extra != 0 {
						t.Fatalf("offset %d: re-encoding set bits %#x in byte %d: in %x out %x", off, extra, i, orig, enc)
					}
				}
				q, m, qerr := fm.Decode(enc)
				if qerr != nil || m != n || q.String() != p.String() {
					t.Fatalf("offset %d: re-encoded %x decodes to %v, %d, %v; want %v", off, enc, q, m, qerr, p)
				}
				if enc2, _ := q.Append(fm, nil); !bytes.Equal(enc2, enc) {
					t.Fatalf("offset %d: %v encodes to %x, then %x", off, p, enc, enc2)
				}
			}
			_ = p.String()
			packets++
			off += n
		}
		// Walk agrees with the Decode loop.
		walked := 0
		werr := fm.Walk(data, func(int, Packet) error { walked++; return nil })
		if werr == nil && stopErr != nil || walked > packets {
			t.Fatalf("Walk: %d packets, %v; Decode loop: %d packets, %v", walked, werr, packets, stopErr)
		}
		_ = fm.ValidateUser(data)
	})
}

func lenOf(p Packet) int {
	if p == nil {
		return -1
	}
	return p.Len()
}
