package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/internal/hlsimtest"
	"github.com/gaudi-go/gaudi/memory"
)

// TestServedCopyAfterReset: through a served node, copy to the device and
// back, reset the device (hlsim ctl reset), and do it again: the copy after
// the reset completes with its bytes on each ASIC (on a Gaudi3 its PDMA
// channels run again once the library sets them up again).
func TestServedCopyAfterReset(t *testing.T) {
	for _, spec := range []string{"gaudi:1", "gaudi2:1", "gaudi3:1"} {
		t.Run(spec, func(t *testing.T) {
			s := hlsimtest.Serve(t, spec)
			d, err := device.Open(s.Node(0, false))
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			m, err := memory.New(d, memory.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			e, err := dma.New(m, dma.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			const n = 1 << 20
			h, err := m.AllocHost(n, memory.HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			out, err := m.AllocHost(n, memory.HostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			buf, err := m.Alloc(n, memory.AllocOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer buf.Close()
			dev := buf.Range(0, n)
			for round := 0; round < 2; round++ {
				if round == 1 {
					if msg, err := ctl(t, s.Dir, "reset", "0"); err != nil {
						t.Fatalf("ctl reset: %v\n%s", err, msg)
					}
				}
				for i := range h.Bytes() {
					h.Bytes()[i] = byte(i*7 + round*13)
				}
				clear(out.Bytes())
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				err := e.CopyToDevice(ctx, dev, h.All())
				if err == nil {
					err = e.CopyToHost(ctx, out.All(), dev)
				}
				cancel()
				if err != nil {
					t.Fatalf("round %d (after the reset: %v): %v", round, round == 1, err)
				}
				if !bytes.Equal(out.Bytes(), h.Bytes()) {
					t.Fatalf("round %d: the round trip corrupted the data", round)
				}
			}
		})
	}
}
