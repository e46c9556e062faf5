//go:build !amd64 && !arm64

package packet

// store24 writes three little-endian 64-bit words to t[0:24].
func store24(t []byte, a, b, c uint64) {
	le.PutUint64(t[0:8], a)
	le.PutUint64(t[8:16], b)
	le.PutUint64(t[16:24], c)
}
