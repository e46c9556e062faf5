package cli

import (
	"errors"
	"flag"
	"math"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
	}{
		{"0", 0},
		{"4096", 4096},
		{"4096B", 4096},
		{"4096b", 4096},
		{"4096 B", 4096},
		// Binary: single letters in either case, and IEC names.
		{"4K", 4096},
		{"4k", 4096},
		{"4KiB", 4096},
		{"4kib", 4096},
		{"4 KiB", 4096},
		{"64M", 64 << 20},
		{"64m", 64 << 20},
		{"64MiB", 64 << 20},
		{"1G", 1 << 30},
		{"16GiB", 16 << 30},
		{"2T", 2 << 40},
		{"2TiB", 2 << 40},
		// Decimal: SI names with a B.
		{"4KB", 4000},
		{"4kB", 4000},
		{"4kb", 4000},
		{"64MB", 64e6},
		{"1GB", 1e9},
		{"3TB", 3e12},
		// Fractions that come to whole bytes.
		{"1.5M", 1572864},
		{"1.5MiB", 1572864},
		{"1.5 MiB", 1572864},
		{"0.5K", 512},
		{"1.25KB", 1250},
		{"2.000", 2},
		{"1.0G", 1 << 30},
		// The limits.
		{"18446744073709551615", math.MaxUint64},
		{"16777215.999999940395355224609375T", math.MaxUint64 - (1<<16 - 1)}, // 2^64 - 2^16
	} {
		got, err := ParseSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestParseSizeRefuses(t *testing.T) {
	for _, in := range []string{
		"", " ", "lots", "K", "MiB", ".5K", "5.K", "1..5K", "1.2.3",
		"-1", "-4K", "+4K", "4K ", " 4K", "4  K", "4_096", "0x1000", "1e6", "4Ki", "4KIBB", "4 kB ",
		"4Kb/s", "4 bits", "4P", "4PiB", "4M4",
		"0.1K",                 // 102.4 bytes
		"1.5",                  // 1.5 bytes
		"0.0000001G",           // 107.3741824 bytes
		"18446744073709551616", // 2^64
		"16777216T",            // 2^64
		"17179869184G",         // 2^64
		"99999999999999999999999999999999999999999",
	} {
		got, err := ParseSize(in)
		if !errors.Is(err, ErrBadSize) {
			t.Errorf("ParseSize(%q) = %d, %v; want an error matching ErrBadSize", in, got, err)
		}
	}
}

func TestSizeFlag(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(nilWriter{})
	min, max := Size(4096), Size(64<<20)
	fs.Var(&min, "min", "")
	fs.Var(&max, "max", "")
	if err := fs.Parse([]string{"-min", "4KB", "-max", "1.5M"}); err != nil {
		t.Fatal(err)
	}
	if min != 4000 || max != 1572864 {
		t.Errorf("-min 4KB -max 1.5M = %d, %d", min, max)
	}
	// Package flag reports the value's error as text.
	if err := fs.Parse([]string{"-min", "4KX"}); err == nil || !strings.Contains(err.Error(), `bad size "4KX": unknown unit "KX"`) {
		t.Errorf("-min 4KX: %v", err)
	}
	if min.String() != "4000 B" {
		t.Errorf("String of 4000 = %q", min.String())
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[uint64]string{
		0:               "0 B",
		512:             "512 B",
		1000:            "1000 B",
		4096:            "4 KiB",
		1536:            "1.5 KiB",
		64 << 20:        "64 MiB",
		1572864:         "1.5 MiB",
		(1 << 30) + 1:   "1073741825 B",
		16 << 30:        "16 GiB",
		3 << 40:         "3 TiB",
		(5 << 40) / 4:   "1.25 TiB",
		math.MaxUint64:  "18446744073709551615 B",
		1<<20 + 1<<18:   "1.25 MiB",
		4<<10 + 4<<10/8: "4.5 KiB",
	} {
		got := FormatSize(n)
		if got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
		if back, err := ParseSize(got); err != nil || back != n {
			t.Errorf("ParseSize(FormatSize(%d) = %q) = %d, %v", n, got, back, err)
		}
	}
}

type nilWriter struct{}

func (nilWriter) Write(b []byte) (int, error) { return len(b), nil }

func TestHumanSize(t *testing.T) {
	for n, want := range map[uint64]string{
		0: "0 B", 1023: "1023 B", 1024: "1 KiB", 22345678848: "20.8 GiB", 64 << 20: "64 MiB", 1536: "1.5 KiB", math.MaxUint64: "16 EiB",
	} {
		if got := HumanSize(n); got != want {
			t.Errorf("HumanSize(%d) = %q, want %q", n, got, want)
		}
	}
}
