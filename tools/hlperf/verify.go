package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/gaudi-go/gaudi/memory"
)

// chunk is how much device memory -verify moves through host memory at
// a time.
const chunk = 16 << 20

// word returns the pattern's 8 bytes at word index i for seed: a
// splitmix64 step, so every word of every seed differs from its
// neighbours and a copy that moved the wrong bytes, or none, shows.
func word(seed, i uint64) uint64 {
	z := seed*0x9e3779b97f4a7c15 + i*0xbf58476d1ce4e5b9
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// fillPattern writes the pattern of seed for offsets [off, off+len(b))
// into b; off must be a multiple of 8.
func fillPattern(b []byte, seed, off uint64) {
	i := off / 8
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, word(seed, i))
		b, i = b[8:], i+1
	}
	if len(b) > 0 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], word(seed, i))
		copy(b, w[:])
	}
}

// fill writes the pattern of seed into the first n bytes of e.
func fill(ctx context.Context, e endpoint, n, seed uint64) error {
	if e.host != nil {
		fillPattern(e.host.Bytes()[:n], seed, 0)
		return nil
	}
	return fillDevice(ctx, e.dev, n, seed)
}

// fillDevice writes the pattern of seed into the first n bytes of b.
func fillDevice(ctx context.Context, b *memory.Buffer, n, seed uint64) error {
	buf := make([]byte, min(n, chunk))
	for off := uint64(0); off < n; off += chunk {
		p := buf[:min(chunk, n-off)]
		fillPattern(p, seed, off)
		if _, err := b.WriteAtContext(ctx, p, int64(off)); err != nil {
			return err
		}
	}
	return nil
}

// check compares the first n bytes of e with the pattern of seed and
// names the first byte that differs.
func check(ctx context.Context, e endpoint, n, seed uint64) error {
	want := make([]byte, min(n, chunk))
	var got []byte
	if e.dev != nil {
		got = make([]byte, len(want))
	}
	for off := uint64(0); off < n; off += chunk {
		k := min(chunk, n-off)
		w := want[:k]
		fillPattern(w, seed, off)
		var g []byte
		if e.host != nil {
			g = e.host.Bytes()[off : off+k]
		} else {
			g = got[:k]
			if _, err := e.dev.ReadAtContext(ctx, g, int64(off)); err != nil {
				return fmt.Errorf("read back: %w", err)
			}
		}
		if !bytes.Equal(g, w) {
			for i := range g {
				if g[i] != w[i] {
					where := "host"
					if e.dev != nil {
						where = "device"
					}
					return fmt.Errorf("%s destination differs from the source at byte %d (%#02x, want %#02x)", where, off+uint64(i), g[i], w[i])
				}
			}
		}
	}
	return nil
}
