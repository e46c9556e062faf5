package abicheck

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestBytes(t *testing.T) {
	root := t.TempDir()
	hdr := `#include <linux/types.h>
#define T_HI_SHIFT 4
#define T_HI_MASK 0xF0
struct t_pkt { __u32 a; __u32 b; __u64 c[]; };
`
	if err := os.WriteFile(filepath.Join(root, "t.h"), []byte(hdr), 0o644); err != nil {
		t.Fatal(err)
	}
	tbl := &Table{Package: "selftest", IncludeDirs: []string{"."}, Includes: []string{"t.h"}}
	got := BytesWith(t, tbl, root, []Snippet{
		{Name: "zero", Type: "struct t_pkt"},
		{Name: "hi", Type: "struct t_pkt", Code: "p->b = (0x3u << T_HI_SHIFT) & T_HI_MASK;"},
		{Name: "flex.1", Type: "struct t_pkt", Extra: 8, Code: "p->a = 1;\np->c[0] = 0x0102030405060708ULL;"},
	})
	want := map[string][]byte{
		"zero":   make([]byte, 8),
		"hi":     {0, 0, 0, 0, 0x30, 0, 0, 0},
		"flex.1": {1, 0, 0, 0, 0, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1},
	}
	for k, w := range want {
		if !bytes.Equal(got[k], w) {
			t.Errorf("%s = %x, want %x", k, got[k], w)
		}
	}
}
