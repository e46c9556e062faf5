package rdma

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		in, want Options
		err      bool
	}{
		{in: Options{}, want: Options{ChunkSize: DefaultChunkSize, Depth: 3, KeepAlive: DefaultKeepAlive}},
		{in: Options{Path: PathPipelined, ChunkSize: 4096, Depth: 2, KeepAlive: -1}, want: Options{Path: PathPipelined, ChunkSize: 4096, Depth: 2, KeepAlive: -1}},
		{in: Options{KeepAlive: time.Millisecond}, want: Options{ChunkSize: DefaultChunkSize, Depth: 3, KeepAlive: time.Millisecond}},
		{in: Options{ChunkSize: 4095}, err: true},
		{in: Options{ChunkSize: maxChunk + 1}, err: true},
		{in: Options{Depth: 1}, err: true},
		{in: Options{Depth: 65}, err: true},
		{in: Options{Path: PathPipelined + 1}, err: true},
	} {
		o := tc.in
		err := o.normalize()
		if tc.err {
			if !errors.Is(err, ErrBadOptions) {
				t.Errorf("%+v: %v, want ErrBadOptions", tc.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%+v: %v", tc.in, err)
		} else if diff := cmp.Diff(tc.want, o); diff != "" {
			t.Errorf("%+v normalized (-want +got):\n%s", tc.in, diff)
		}
	}
}

// TestPeerError: a peer's abort matches ErrPeerCancelled and, by its
// code, the error the peer failed with; abortCode picks that code.
func TestPeerError(t *testing.T) {
	for _, tc := range []struct {
		cause error
		also  error
	}{
		{ErrAborted, ErrAborted},
		{ErrLength, ErrLength},
		{ErrProtocol, ErrProtocol},
		{errors.New("context canceled"), nil},
	} {
		e := &PeerError{Code: abortCode(tc.cause)}
		if !errors.Is(e, ErrPeerCancelled) {
			t.Errorf("%v: %v does not match ErrPeerCancelled", tc.cause, e)
		}
		for _, s := range []error{ErrAborted, ErrLength, ErrProtocol} {
			if got := errors.Is(e, s); got != (s == tc.also) {
				t.Errorf("%v: errors.Is(%v, %v) = %v", tc.cause, e, s, got)
			}
		}
	}
	if g := (&goneError{errors.New("x")}); !errors.Is(g, ErrPeerGone) || errors.Is(g, ErrPeerCancelled) {
		t.Errorf("goneError matches wrongly: %v", g)
	}
}

// TestTransferChunk: a transfer shorter than splitPieces of the
// connection's chunks is cut into chunks of whole 64 KiB, at least
// minSplitChunk, at most splitPieces of them; longer ones and small
// connection chunks keep the connection's.
func TestTransferChunk(t *testing.T) {
	const k, m = 1 << 10, 1 << 20
	for _, tc := range []struct {
		n     uint64
		chunk uint32
		want  uint64
	}{
		{1 * m, DefaultChunkSize, 1 * m},
		{1*m + 1, DefaultChunkSize, 1 * m},
		{3 * m, DefaultChunkSize, 1 * m},
		{4 * m, DefaultChunkSize, 1 * m},
		{6 * m, DefaultChunkSize, 1536 * k},
		{6*m + 1, DefaultChunkSize, 1600 * k}, // rounded up to 64 KiB
		{15 * m, DefaultChunkSize, 15 * m / 4},
		{16 * m, DefaultChunkSize, 4 * m},
		{64 * m, DefaultChunkSize, 4 * m},
		{64 * k, DefaultChunkSize, 1 * m}, // one chunk of its length
		{0, DefaultChunkSize, 1 * m},
		{4 * m, 2 * m, 1 * m},
		{1 * m, 1 * m, 1 * m},
		{4 * m, 512 * k, 512 * k},
		{1 * m, 64 * k, 64 * k},
		{200 * m, maxChunk, 50 * m},
	} {
		if got := transferChunk(tc.n, tc.chunk); got != tc.want {
			t.Errorf("transferChunk(%d, %d) = %d, want %d", tc.n, tc.chunk, got, tc.want)
		}
	}
}
