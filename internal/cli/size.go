package cli

import (
	"errors"
	"math/big"
	"strconv"
	"strings"
)

// ErrBadSize reports a size that ParseSize refuses. Every error of
// ParseSize, and of Size.Set, matches it (they are *SizeError values).
var ErrBadSize = errors.New("bad size")

// SizeError describes a size that does not parse.
type SizeError struct {
	// Input is the text as given.
	Input string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *SizeError) Error() string {
	return "bad size " + strconv.Quote(e.Input) + ": " + e.Reason
}

// Is reports whether target is ErrBadSize.
func (e *SizeError) Is(target error) bool { return target == ErrBadSize }

// sizeUnits maps every unit ParseSize accepts to its multiplier. The
// binary units (1024^n) are the single letters, in either case, and the
// IEC names (KiB, in any case); the decimal ones (1000^n) are the SI names
// with a B (KB, kB, MB, in any case). This is the convention of GNU dd,
// head -c and truncate -s.
var sizeUnits = map[string]uint64{
	"":  1,
	"B": 1,
	"K": 1 << 10, "KIB": 1 << 10, "KB": 1e3,
	"M": 1 << 20, "MIB": 1 << 20, "MB": 1e6,
	"G": 1 << 30, "GIB": 1 << 30, "GB": 1e9,
	"T": 1 << 40, "TIB": 1 << 40, "TB": 1e12,
}

// ParseSize reads a byte count: a decimal number, optionally with a
// fraction, then optionally one space and a unit. The whole string must
// parse; there is no sign, exponent, hexadecimal or digit separator.
//
//	4096, 4096B      4096 bytes
//	4K, 4k, 4KiB     4 × 1024 bytes (binary: K, M, G, T and KiB, MiB, GiB, TiB)
//	4KB, 4kB, 4kb    4 × 1000 bytes (decimal: KB, MB, GB, TB)
//	1.5M, 1.5 MiB    1572864 bytes
//
// Units are case-insensitive ("mib", "Mb" and "MB" all read as above), so
// "b" is a byte, not a bit. A fraction is allowed only when the result is
// a whole number of bytes ("1.5K" is 1536; "0.1K" is refused). A result
// beyond 2^64-1 bytes is refused, not wrapped. Errors match ErrBadSize.
func ParseSize(s string) (uint64, error) {
	bad := func(reason string) (uint64, error) {
		return 0, &SizeError{Input: s, Reason: reason}
	}
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, unit := s[:i], s[i:]
	if rest, ok := strings.CutPrefix(unit, " "); ok && rest != "" {
		unit = rest
	}
	if num == "" {
		switch {
		case s == "":
			return bad("empty")
		case s[0] == '-':
			return bad("negative")
		}
		return bad("want a number, then a unit such as K, MiB or GB")
	}
	whole, frac, dotted := strings.Cut(num, ".")
	if whole == "" || strings.Contains(frac, ".") || dotted && frac == "" {
		return bad("malformed number")
	}
	mult, ok := sizeUnits[strings.ToUpper(unit)]
	if !ok {
		return bad("unknown unit " + strconv.Quote(unit) + " (want B, K, M, G, T, KiB ... TiB for powers of 1024 or KB ... TB for powers of 1000)")
	}
	// value = (whole.frac) × mult, exact: (whole·10^f + frac) × mult / 10^f.
	n, _ := new(big.Int).SetString(whole+frac, 10)
	n.Mul(n, new(big.Int).SetUint64(mult))
	den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac))), nil)
	q, r := new(big.Int).QuoRem(n, den, new(big.Int))
	if r.Sign() != 0 {
		return bad("not a whole number of bytes")
	}
	if !q.IsUint64() {
		return bad("more than 2^64-1 bytes")
	}
	return q.Uint64(), nil
}

// FormatSize writes n bytes in the largest binary unit that keeps at most
// two decimals exact: "512 B", "4 KiB", "64 MiB", "1.5 GiB", and in bytes
// when no unit divides it well ("1000 B"). ParseSize reads it back.
func FormatSize(n uint64) string {
	units := []struct {
		shift uint
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}}
	for _, u := range units {
		if n < 1<<u.shift {
			continue
		}
		// Exact with at most two decimals: n × 100 divisible by 2^shift.
		unit := uint64(1) << u.shift
		if n%unit == 0 {
			return strconv.FormatUint(n/unit, 10) + " " + u.name
		}
		if hi, lo := n/unit, n%unit; (lo*100)%unit == 0 && hi < 1<<50 {
			f := strconv.FormatFloat(float64(hi)+float64(lo)/float64(unit), 'f', -1, 64)
			return f + " " + u.name
		}
	}
	return strconv.FormatUint(n, 10) + " B"
}

// Size is a byte count as a command-line flag (flag.Value), read by
// ParseSize and printed by FormatSize.
type Size uint64

// Set implements flag.Value.
func (s *Size) Set(v string) error {
	n, err := ParseSize(v)
	if err != nil {
		return err
	}
	*s = Size(n)
	return nil
}

// String implements flag.Value.
func (s *Size) String() string {
	if s == nil {
		return "0 B"
	}
	return FormatSize(uint64(*s))
}

// Bytes returns the size as a number of bytes.
func (s Size) Bytes() uint64 { return uint64(s) }

// HumanSize writes n bytes for people, rounded to at most one decimal in
// the largest binary unit it reaches: "20.8 GiB", "512 B". Unlike
// FormatSize it may round; use it for amounts measured, not given.
func HumanSize(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + units[i]
}
