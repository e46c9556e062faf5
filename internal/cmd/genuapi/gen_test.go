package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEval(t *testing.T) {
	g := newGen(&pkgSpec{})
	h, err := parseHeader(`
#define A 0x10
#define B (A << 4)
#define NEG (-3)
#define BIG 0xFFFFFFFFFFFFFFFFull
#define NOT32 (~0U)
#define MASK (~(0x1 | 0x2))
#define CHR 'd'
struct s { unsigned int x; unsigned long long y; };
#define REQ _IOWR('d', 0x40 + 1, struct s)
#define REQ0 _IO('b', 2)
enum e { E0, E1 = B + 1, E2 };
`)
	if err != nil {
		t.Fatal(err)
	}
	g.headers = []*header{h}
	for _, a := range h.aggs {
		g.aggByName[a.cName()] = a
	}
	for _, d := range h.defines {
		g.defines[d.name] = d
	}
	for _, e := range h.enums {
		for _, c := range e.consts {
			g.enumOf[c.name] = e
		}
	}
	want := map[string]string{
		"A": "16", "B": "256", "NEG": "-3", "BIG": "18446744073709551615", "NOT32": "4294967295",
		"MASK": "-4", "CHR": "100", "REQ": "3222299713", "REQ0": "25090", "E0": "0", "E1": "257", "E2": "258",
	}
	got := map[string]string{}
	for name := range want {
		v, err := g.lookup(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got[name] = v.v.String()
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("values (-want +got):\n%s", d)
	}
}

func TestLayout(t *testing.T) {
	g := newGen(&pkgSpec{})
	h, err := parseHeader(`
struct inner { __u8 a; __u64 b; };
struct outer {
	__u16 x;
	struct inner in;
	union { __u32 u; struct { __u8 p; __u16 q; }; };
	__u8 tail[3];
	__u32 flex[];
};`)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range h.aggs {
		g.aggByName[a.cName()] = a
	}
	o := g.aggByName["struct outer"]
	if err := g.layout(o); err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for _, m := range o.members {
		offs = append(offs, m.off)
	}
	if d := cmp.Diff([]int64{0, 8, 24, 28, 32}, offs); d != "" {
		t.Errorf("offsets (-want +got):\n%s", d)
	}
	if o.size != 32 || o.align != 8 || !o.members[4].flex {
		t.Errorf("size %d align %d flex %v", o.size, o.align, o.members[4].flex)
	}
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{
		"struct s { __u32 a : 3; };",
		"#if FOO\n#endif",
		"struct s { __u32 a; ",
		"#else",
		"int x;",
		"enum { A = 'ab' };",
	} {
		if h, err := parseHeader(src); err == nil {
			g := newGen(&pkgSpec{})
			g.headers = []*header{h}
			for _, e := range h.enums {
				if err = g.evalEnum(e); err != nil {
					break
				}
			}
			if err == nil {
				t.Errorf("%q: no error", src)
			}
		}
	}
}

func TestCamel(t *testing.T) {
	for in, want := range map[string]string{
		"ctx_id": "CtxID", "return_pointer": "ReturnPointer", "device_va": "DeviceVA",
		"__reserved": "Reserved", "cs_completion_map": "CSCompletionMap", "pad": "Pad",
	} {
		if got := camel(in); got != want {
			t.Errorf("camel(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParseHeader checks that no input makes the parser panic or hang.
func FuzzParseHeader(f *testing.F) {
	f.Add("struct a { __u32 b; union { __u64 c; struct { __u8 d; } e; }; };\n#define X (1 << 3)\n")
	f.Add("enum q { A = 1, B, C = A + 7 };")
	f.Add("/* c */ // d\n#ifndef G\n#define G\n#endif\n")
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 {
			return
		}
		h, err := parseHeader(src)
		if err != nil {
			return
		}
		g := newGen(&pkgSpec{})
		g.headers = []*header{h}
		for _, a := range h.aggs {
			if a.tag != "" {
				g.aggByName[a.cName()] = a
			}
		}
		for _, d := range h.defines {
			g.defines[d.name] = d
		}
		for _, a := range h.aggs {
			_ = g.layout(a)
		}
		for _, d := range h.defines {
			if !strings.HasPrefix(d.name, "_") {
				_, _ = g.lookup(d.name)
			}
		}
	})
}

// TestDeclareFlexArray checks __DECLARE_FLEX_ARRAY(type, name), which
// linux/stddef.h spells for flexible arrays (rdma_user_rxe.h uses it).
func TestDeclareFlexArray(t *testing.T) {
	g := newGen(&pkgSpec{})
	h, err := parseHeader("struct s { __u32 n; __DECLARE_FLEX_ARRAY(__u64, data); };")
	if err != nil {
		t.Fatal(err)
	}
	s := h.aggs[0]
	if err := g.layout(s); err != nil {
		t.Fatal(err)
	}
	if m := s.members[1]; m.name != "data" || !m.flex || m.off != 8 || s.size != 8 {
		t.Errorf("member %+v, struct size %d; want flexible data at 8, size 8", m, s.size)
	}
	for _, src := range []string{
		"struct s { __DECLARE_FLEX_ARRAY(__u8 data); };",
		"struct s { __DECLARE_FLEX_ARRAY(__u8, 3); };",
		"struct s { __DECLARE_FLEX_ARRAY(__u8, data) };",
	} {
		if _, err := parseHeader(src); err == nil {
			t.Errorf("%q: no error", src)
		}
	}
}
