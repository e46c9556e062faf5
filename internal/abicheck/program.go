package abicheck

import (
	"fmt"
	"strings"
)

// Program returns the C source that prints, one "key=value" line per
// entry, what the compiler knows about every entry of tbl.
func Program(tbl *Table) string {
	var b strings.Builder
	b.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include <string.h>\n#include <linux/ioctl.h>\n")
	b.WriteString(tbl.Prelude)
	for _, h := range tbl.Includes {
		fmt.Fprintf(&b, "#include <%s>\n", h)
	}
	b.WriteString(`
#define PV(key, x) do { if ((x) < 0) printf("%s=-%llu\n", key, -(unsigned long long)(long long)(x)); else printf("%s=%llu\n", key, (unsigned long long)(x)); } while (0)
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
	for i, ty := range tbl.Types {
		// obj is an expression of the type: the C type itself, or a member
		// of it for types C gives no name.
		obj := fmt.Sprintf("(*(%s *)0)", ty.C)
		if ty.Path != "" {
			obj = fmt.Sprintf("((%s *)0)->%s", ty.C, ty.Path)
		}
		fmt.Fprintf(&b, "\tprintf(\"T%d=%%zu %%zu\\n\", sizeof(%s), (size_t)__alignof__(%s));\n", i, obj, obj)
		base := func(member string) string {
			if ty.Path == "" {
				return fmt.Sprintf("offsetof(%s, %s)", ty.C, member)
			}
			return fmt.Sprintf("(offsetof(%s, %s.%s) - offsetof(%s, %s))", ty.C, ty.Path, member, ty.C, ty.Path)
		}
		for j, f := range ty.Fields {
			fmt.Fprintf(&b, "\tprintf(\"F%d.%d=%%zu %%zu\\n\", (size_t)%s, sizeof((%s).%s));\n", i, j, base(f.C), obj, f.C)
		}
		for j, f := range ty.Flex {
			fmt.Fprintf(&b, "\tprintf(\"X%d.%d=%%zu %%zu\\n\", (size_t)%s, sizeof((%s).%s[0]));\n", i, j, base(f.C), obj, f.C)
		}
	}
	for i, c := range tbl.Consts {
		fmt.Fprintf(&b, "\tPV(\"C%d\", %s);\n", i, c.C)
	}
	for i, c := range tbl.Requests {
		fmt.Fprintf(&b, "\tPV(\"R%d\", %s);\n", i, c.C)
	}
	for i, bt := range tbl.Bits {
		for k, p := range patterns {
			fmt.Fprintf(&b, "\t{ %s s; memset(&s, 0, sizeof(s)); s.%s = (0x%xULL << %s_SHIFT) & %s_MASK; dump(\"B%d.%d\", &s, sizeof(s)); }\n",
				bt.C, bt.Member, p, bt.Field, bt.Field, i, k)
		}
	}
	b.WriteString("\treturn 0;\n}\n")
	return b.String()
}
