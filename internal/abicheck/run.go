package abicheck

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gaudi-go/gaudi/internal/kernelsrc"
)

// TB is the part of testing.TB the proof uses; the self-test passes a
// recorder to show that wrong bindings fail.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	TempDir() string
}

// Counts says how much a run compared.
type Counts struct {
	Types, Fields, Consts, Requests, Bits, Mismatches int
}

// Run proves tbl against the kernel headers. Missing headers or a missing
// compiler fail the test: they never skip it.
func Run(t TB, tbl *Table) {
	t.Helper()
	ksrc, err := kernelsrc.Dir()
	if err != nil {
		t.Fatalf("%v", err)
		return
	}
	c := RunWith(t, tbl, ksrc)
	if err := Complete(tbl, "."); err != nil {
		t.Errorf("%s: %v", tbl.Package, err)
	}
	t.Logf("%s: proved %d types, %d fields, %d constants, %d request numbers, %d packet bitfield encodings; %d mismatches",
		tbl.Package, c.Types, c.Fields, c.Consts, c.Requests, c.Bits, c.Mismatches)
}

// RunWith proves tbl against headers below root and returns the counts.
func RunWith(t TB, tbl *Table, root string) Counts {
	t.Helper()
	var cnt Counts
	src := Program(tbl)
	dir := t.TempDir()
	cfile := filepath.Join(dir, "abi.c")
	bin := filepath.Join(dir, "abi")
	if err := os.WriteFile(cfile, []byte(src), 0o644); err != nil {
		t.Fatalf("%v", err)
		return cnt
	}
	args := []string{"-std=gnu11", "-O0", "-w", "-o", bin, cfile}
	for _, d := range tbl.IncludeDirs {
		args = append(args, "-I", filepath.Join(root, d))
	}
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: compile the C side (is gcc installed?): %v\n%s", tbl.Package, err, out)
		return cnt
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("%s: run the C side: %v", tbl.Package, err)
		return cnt
	}
	lines := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		key, val, _ := strings.Cut(sc.Text(), "=")
		lines[key] = val
	}
	get := func(key string) string {
		v, ok := lines[key]
		if !ok {
			t.Errorf("%s: the C side printed no %s", tbl.Package, key)
		}
		return v
	}
	fail := func(format string, args ...any) {
		cnt.Mismatches++
		t.Errorf(tbl.Package+": "+format, args...)
	}
	for i, ty := range tbl.Types {
		cnt.Types++
		name := describe(ty)
		size, align := splitPair(get(fmt.Sprintf("T%d", i)))
		if uint64(ty.Go.Size()) != size || uint64(ty.Go.Align()) != align {
			fail("%s (Go %s): size/align C %d/%d, Go %d/%d", name, ty.Go.Name(), size, align, ty.Go.Size(), ty.Go.Align())
		}
		for j, f := range ty.Fields {
			cnt.Fields++
			off, sz := splitPair(get(fmt.Sprintf("F%d.%d", i, j)))
			goOff, goSize, err := fieldLayout(ty, f)
			if err != nil {
				fail("%s.%s: %v", name, f.C, err)
				continue
			}
			if goOff != off || goSize != sz {
				fail("%s.%s (Go %s): offset/size C %d/%d, Go %d/%d", name, f.C, f.Go, off, sz, goOff, goSize)
			}
		}
		for j, fl := range ty.Flex {
			cnt.Fields++
			off, esz := splitPair(get(fmt.Sprintf("X%d.%d", i, j)))
			// Go has no storage for a flexible array: it starts at Off, within
			// the struct's tail padding or at its end.
			if uint64(fl.Off) != off || uint64(fl.Off) > uint64(ty.Go.Size()) || uint64(fl.Elem.Size()) != esz {
				fail("%s.%s[]: C offset %d element %d, Go offset %d element %d (size %d)", name, fl.C, off, esz, fl.Off, fl.Elem.Size(), ty.Go.Size())
			}
		}
	}
	for _, set := range []struct {
		prefix string
		list   []Const
		n      *int
	}{{"C", tbl.Consts, &cnt.Consts}, {"R", tbl.Requests, &cnt.Requests}} {
		for i, c := range set.list {
			*set.n++
			cv := get(fmt.Sprintf("%s%d", set.prefix, i))
			if gv := fmt.Sprint(c.Value); gv != cv {
				fail("%s = %s in C (%s), %s in Go", c.Go, cv, c.C, gv)
			}
		}
	}
	for i, b := range tbl.Bits {
		for k, p := range patterns {
			cnt.Bits++
			want := get(fmt.Sprintf("B%d.%d", i, k))
			obj := reflectNew(b.Go)
			b.Set(obj, (p<<b.Shift)&b.Mask)
			if got := hexBytes(obj, b.Go.Size()); got != want {
				fail("%s in %s.%s with pattern %#x: C bytes %s, Go bytes %s", b.Field, b.C, b.Member, p, want, got)
			}
		}
	}
	return cnt
}

func describe(ty Type) string {
	if ty.Path == "" {
		return ty.C
	}
	return ty.C + " member " + ty.Path
}

func splitPair(s string) (uint64, uint64) {
	a, b, _ := strings.Cut(s, " ")
	x, _ := strconv.ParseUint(a, 10, 64)
	y, _ := strconv.ParseUint(b, 10, 64)
	return x, y
}
