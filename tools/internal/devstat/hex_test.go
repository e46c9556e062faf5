package devstat

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestHexJSON checks that masks and addresses are JSON strings that keep
// every bit: a number above 2^53 read as a double (as jq 1.6 and
// JavaScript read numbers) loses its low bits.
func TestHexJSON(t *testing.T) {
	all := ^uint64(0)
	d := Device{BusyEngineMask: []Hex{Hex(all), 0x1ffffff}}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"busy_engine_mask":["0xffffffffffffffff","0x1ffffff"]`) {
		t.Errorf("JSON %s: want the masks as hex strings", b)
	}
	var back Device
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.BusyEngineMask) != 2 || uint64(back.BusyEngineMask[0]) != all || back.BusyEngineMask[1] != 0x1ffffff {
		t.Errorf("round trip: %v", back.BusyEngineMask)
	}
	for _, bad := range []string{`18446744073709551615`, `"ffff"`, `"0xg"`, `"0x1ffffffffffffffff"`} {
		var h Hex
		if err := json.Unmarshal([]byte(bad), &h); err == nil {
			t.Errorf("Unmarshal(%s) accepted: %#x", bad, uint64(h))
		}
	}
}
