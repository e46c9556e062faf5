package abicheck

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gaudi-go/gaudi/internal/kernelsrc"
)

// Snippet is C code that fills one object, for Bytes. The program gives it
// zeroed, 16-byte aligned storage for one Type plus Extra bytes, reached
// through the pointer p (of type Type *), runs Code, and prints the
// storage.
type Snippet struct {
	Name  string // key of the result; letters, digits, '_' and '.'
	Type  string // C type of *p, such as "struct packet_lin_dma"
	Extra int    // bytes after the object, for flexible array members
	Code  string // C statements that fill *p
}

// Bytes compiles snippets against the kernel headers (kernelsrc.Dir), with
// the IncludeDirs, Includes and Prelude of tbl (its other members are
// ignored), runs the program and returns each snippet's bytes by name.
// Missing headers or a missing compiler fail the test: they never skip it.
func Bytes(t TB, tbl *Table, snippets []Snippet) map[string][]byte {
	t.Helper()
	ksrc, err := kernelsrc.Dir()
	if err != nil {
		t.Fatalf("%v", err)
		return nil
	}
	return BytesWith(t, tbl, ksrc, snippets)
}

// BytesWith is Bytes with headers below root.
func BytesWith(t TB, tbl *Table, root string, snippets []Snippet) map[string][]byte {
	t.Helper()
	var b strings.Builder
	b.WriteString("#include <stdio.h>\n#include <string.h>\n")
	b.WriteString(tbl.Prelude)
	for _, h := range tbl.Includes {
		fmt.Fprintf(&b, "#include <%s>\n", h)
	}
	b.WriteString(`
static void dump(const char *key, const void *p, size_t n)
{
	const unsigned char *c = p;
	printf("%s=", key);
	for (size_t i = 0; i < n; i++)
		printf("%02x", c[i]);
	printf("\n");
}

int main(void)
{
`)
	for _, s := range snippets {
		fmt.Fprintf(&b, "\t{\n\t\tstatic unsigned char buf[sizeof(%s) + %d] __attribute__((aligned(16)));\n", s.Type, s.Extra)
		fmt.Fprintf(&b, "\t\t%s *p = (%s *)buf;\n\t\tmemset(buf, 0, sizeof(buf));\n", s.Type, s.Type)
		for _, line := range strings.Split(strings.TrimSpace(s.Code), "\n") {
			fmt.Fprintf(&b, "\t\t%s\n", line)
		}
		fmt.Fprintf(&b, "\t\tdump(%q, buf, sizeof(buf));\n\t}\n", s.Name)
	}
	b.WriteString("\treturn 0;\n}\n")

	dir := t.TempDir()
	cfile := filepath.Join(dir, "bytes.c")
	bin := filepath.Join(dir, "bytes")
	if err := os.WriteFile(cfile, []byte(b.String()), 0o644); err != nil {
		t.Fatalf("%v", err)
		return nil
	}
	args := []string{"-std=gnu11", "-O0", "-Wall", "-Werror", "-Wno-unused-variable", "-o", bin, cfile}
	for _, d := range tbl.IncludeDirs {
		args = append(args, "-I", filepath.Join(root, d))
	}
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: compile the C side (is gcc installed?): %v\n%s", tbl.Package, err, out)
		return nil
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("%s: run the C side: %v", tbl.Package, err)
		return nil
	}
	res := make(map[string][]byte, len(snippets))
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		key, val, _ := strings.Cut(sc.Text(), "=")
		v, err := hex.DecodeString(val)
		if err != nil {
			t.Fatalf("%s: C output for %s: %v", tbl.Package, key, err)
			return nil
		}
		res[key] = v
	}
	for _, s := range snippets {
		if _, ok := res[s.Name]; !ok {
			t.Errorf("%s: the C side printed no %s", tbl.Package, s.Name)
		}
	}
	return res
}
