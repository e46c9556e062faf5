package stream_test

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/packet"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/stream"
	"golang.org/x/sys/unix"
)

// TestFaultsBadPacket is the fault table's row for a queue halted by a bad
// packet: a command buffer whose packet has an opcode no ASIC defines (31;
// MAX_PACKET_ID is 32 and the highest defined is 0x13).
//   - Gaudi: the driver parses external queues' command buffers and
//     refuses an unknown packet id (gaudi_validate_cb: EINVAL), so the
//     submission fails, typed, and nothing runs.
//   - Gaudi2: the driver does not parse them; the queue meets the opcode,
//     the QMAN error asks for a reset, and the CS is aborted: its wait
//     returns EIO within its context (Wait asks again while the driver
//     answers EBUSY during the reset).
//
// On both, the stream works again afterwards.
func TestFaultsBadPacket(t *testing.T) {
	for _, a := range asics() {
		t.Run(a.String(), func(t *testing.T) {
			r := newRig(t, a)
			b := r.build(t, func(b *packet.Builder) { b.Nop(packet.Nop{}) })
			ctl := binary.LittleEndian.Uint32(b[4:8]) // a NOP: reserved word, then ctl
			binary.LittleEndian.PutUint32(b[4:8], ctl&^0x1F000000|31<<24)
			c := r.newCB(t, b)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			seq, err := r.s.Submit(ctx, []stream.Chunk{r.chunk(c, r.down(), len(b))}, stream.SubmitOptions{})
			switch {
			case a == sim.Gaudi:
				if !errors.Is(err, unix.EINVAL) {
					t.Fatalf("submit a CB with opcode 31: %v, want EINVAL (gaudi_validate_cb)", err)
				}
			case err != nil:
				t.Fatalf("submit a CB with opcode 31: %v", err)
			default:
				_, err := r.s.Wait(ctx, seq)
				// EIO once the reset aborted it (Wait asks again while
				// the driver answers EBUSY during the reset).
				if !errors.Is(err, unix.EIO) {
					t.Errorf("wait for the CS the bad packet halted: %v, want EIO (aborted by the reset the QMAN error asks for)", err)
				}
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("the bad packet's calls took %v, past their 2 s context plus 1 s", d)
			}
			// The queue runs again once the device is operational (the
			// driver answers EBUSY while its reset is under way).
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				st, err := r.dev.Status()
				if err == nil && st == device.StatusOperational {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the device is not operational 30 s after the bad packet: %v, %v", st, err)
				}
			}
			r.wait(t, r.run(t, r.down(), r.build(t, func(b *packet.Builder) { b.Nop(packet.Nop{}) })))
		})
	}
}
