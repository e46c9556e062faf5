package devstat

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// A Hex is a 64-bit value that names rather than counts: a bit mask
// (engines, ports, page sizes) or an address. Its JSON form is a string
// of hexadecimal digits, "0x1ffffff": as a JSON number a 64-bit value
// loses its low bits in tools that read numbers as doubles (jq 1.6 prints
// 18446744073709551615 as 18446744073709552000). Schema version 2 made
// every mask and address a Hex.
type Hex uint64

// MarshalJSON implements json.Marshaler: "0x" and lowercase hex digits.
func (m Hex) MarshalJSON() ([]byte, error) {
	return []byte(`"0x` + strconv.FormatUint(uint64(m), 16) + `"`), nil
}

// UnmarshalJSON implements json.Unmarshaler: a hexadecimal string as
// MarshalJSON writes it.
func (m *Hex) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("hex value: want a string such as \"0x1f\": %w", err)
	}
	hex, ok := strings.CutPrefix(s, "0x")
	if !ok {
		return fmt.Errorf("hex value %q: want a 0x prefix", s)
	}
	v, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		return fmt.Errorf("hex value %q: %w", s, err)
	}
	*m = Hex(v)
	return nil
}
