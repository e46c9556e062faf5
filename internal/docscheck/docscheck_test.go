package docscheck

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
)

// moduleRoot is the repository root, seen from this package's directory.
const moduleRoot = "../.."

// docs returns the markdown files the check covers: README.md and
// docs/*.md.
func docs(fsys fs.FS) ([]string, error) {
	names, err := fs.Glob(fsys, "docs/*.md")
	if err != nil {
		return nil, err
	}
	return append([]string{"README.md"}, names...), nil
}

// TestRepositoryLinks checks the real documentation.
func TestRepositoryLinks(t *testing.T) {
	fsys := os.DirFS(moduleRoot)
	names, err := docs(fsys)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, name := range names {
		md, err := fs.ReadFile(fsys, name)
		if err != nil {
			t.Fatal(err)
		}
		total += len(links(md))
		for _, err := range check(fsys, name, md) {
			t.Error(err)
		}
	}
	// The README links to docs/; finding none means the parser is broken,
	// not that the links are fine.
	if total == 0 {
		t.Errorf("no links found in %v", names)
	}
}

// TestCheck runs the check on an in-memory repository.
func TestCheck(t *testing.T) {
	fsys := fstest.MapFS{
		"README.md":    {Data: []byte("# readme\n")},
		"LICENSE":      {Data: []byte("MIT\n")},
		"docs/a.md":    {Data: []byte("# a\n")},
		"docs/a b.md":  {Data: []byte("# a b\n")},
		"docs/img.png": {Data: []byte{0x89}},
		"sim/doc.go":   {Data: []byte("package sim\n")},
	}
	tests := []struct {
		name string
		md   string
		want []string // substrings of the errors, in order; none for a clean file
	}{
		{"relative", "See [a](a.md).\n", nil},
		{"up but inside", "[license](../LICENSE) and [sim](../sim)\n", nil},
		{"fragment and title", "[a](a.md#top \"A\") [here](#layout)\n", nil},
		{"escaped space", "[ab](a%20b.md) [ab](<a b.md>)\n", nil},
		{"image", "![logo](img.png)\n", nil},
		{"code in link text", "[`docs/a.md`](a.md)\n", nil},
		{"external", "[go](https://go.dev/doc) <https://example.com> [m](mailto:x@example.com)\n",
			[]string{"https://go.dev/doc points outside", "mailto:x@example.com points outside", "https://example.com points outside"}},
		{"parentheses in target", "[a](a.md?x=(1))\n", nil},
		{"fenced code is not checked", "```\n[x](../../shared/x.md)\n```\n", nil},
		{"indented code is not checked", "text\n\n    [x](../../shared/x.md)\n", nil},
		{"code span is not a link", "`[x](y.md)`\n", nil},
		{"escaped bracket", "\\[not](a link.md)\n", nil},

		{"outside", "See [design](../../shared/docs/DESIGN.md).\n",
			[]string{"docs/x.md:1: link ../../shared/docs/DESIGN.md points outside the repository"}},
		{"missing", "one\n[gone](gone.md)\n",
			[]string{"docs/x.md:2: link gone.md: docs/gone.md does not exist"}},
		{"missing with fragment", "[gone](gone.md#top)\n",
			[]string{"docs/gone.md does not exist"}},
		{"absolute", "[passwd](/etc/passwd)\n",
			[]string{"link /etc/passwd is absolute"}},
		{"network path", "[p](//example.com/x)\n",
			[]string{"link //example.com/x is absolute"}},
		{"file scheme", "[f](file:///etc/passwd)\n",
			[]string{"link file:///etc/passwd points outside the repository (scheme file)"}},
		{"outside image", "![i](../../i.png)\n",
			[]string{"points outside the repository"}},
		{"outside in angle brackets", "[a](<../../a b.md>)\n",
			[]string{"points outside the repository"}},
		{"reference definition", "[d][design]\n\n[design]: ../../shared/docs/DESIGN.md\n",
			[]string{"docs/x.md:3: link ../../shared/docs/DESIGN.md points outside the repository"}},
		{"code span above the root", "Groups follow `../shared/docs/x.md`.\n",
			[]string{"docs/x.md:1: code span ../shared/docs/x.md names a path outside the repository"}},
		{"code span inside the root", "See `docs/a.md` and `sim/`.\n", nil},
		{"two on a line", "[a](a.md) [b](b.md) [c](../../c)\n",
			[]string{"docs/b.md does not exist", "points outside the repository"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := check(fsys, "docs/x.md", []byte(tt.md))
			if len(errs) != len(tt.want) {
				t.Fatalf("got %d errors %v, want %d: %q", len(errs), errs, len(tt.want), tt.want)
			}
			for i, err := range errs {
				if !strings.Contains(err.Error(), tt.want[i]) {
					t.Errorf("error %d = %q, want it to contain %q", i, err, tt.want[i])
				}
			}
		})
	}
}

// TestCheckReadme checks links from a file at the root, where "../" is
// already outside.
func TestCheckReadme(t *testing.T) {
	fsys := fstest.MapFS{"docs/ARCHITECTURE.md": {Data: []byte("#\n")}}
	if errs := check(fsys, "README.md", []byte("[map](docs/ARCHITECTURE.md)\n")); len(errs) != 0 {
		t.Errorf("check = %v, want no errors", errs)
	}
	errs := check(fsys, "README.md", []byte("[map](../shared/docs/DESIGN.md)\n"))
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "points outside the repository") {
		t.Errorf("check = %v, want one error about a link outside the repository", errs)
	}
}

// link is one link destination of a markdown file.
type link struct {
	line   int
	target string
	code   bool // a code span, not a link: only checked for leaving the root
}

// check returns the problems with the links of the markdown file name
// (slash-separated, relative to the root of fsys) whose content is md.
func check(fsys fs.FS, name string, md []byte) []error {
	var errs []error
	dir := path.Dir(name)
	for _, l := range links(md) {
		fail := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("%s:%d: %s", name, l.line, fmt.Sprintf(format, args...)))
		}
		if l.code {
			// Paths in code spans are written from the repository root
			// (`docs/x.md`, `sim/doc.go`), so "../" always leaves it.
			fail("code span %s names a path outside the repository", l.target)
			continue
		}
		if m := scheme.FindStringSubmatch(l.target); m != nil {
			// A web address leaves the repository as surely as "../"
			// does: name the source in the text instead.
			fail("link %s points outside the repository (scheme %s)", l.target, m[1])
			continue
		}
		p := l.target
		if i := strings.IndexAny(p, "#?"); i >= 0 {
			p = p[:i]
		}
		if p == "" {
			continue // a link within the same file
		}
		if strings.HasPrefix(p, "/") {
			fail("link %s is absolute; write it relative to %s", l.target, name)
			continue
		}
		u, err := url.PathUnescape(p)
		if err != nil {
			fail("link %s: %v", l.target, err)
			continue
		}
		full := path.Join(dir, u)
		if full == ".." || strings.HasPrefix(full, "../") {
			fail("link %s points outside the repository", l.target)
			continue
		}
		if _, err := fs.Stat(fsys, full); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				fail("link %s: %s does not exist", l.target, full)
			} else {
				fail("link %s: %v", l.target, err)
			}
		}
	}
	return errs
}

var (
	scheme = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*):`)
	// refDef is a link reference definition: [label]: destination.
	refDef = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	fence  = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})")
)

// links returns the link destinations of md: inline links and images
// ([text](dest), ![alt](dest)) and reference definitions ([label]: dest),
// plus every code span that starts with "../" (such a span is reported
// as a path outside the repository, wherever the file is). Fenced code blocks, indented
// code blocks (after a blank line) and code spans are not searched for
// links. It is a small subset of CommonMark, enough for this repository:
// a link must sit on one line.
func links(md []byte) []link {
	var out []link
	var open string // the fence of the open code block, or ""
	prevBlank, inIndented := true, false
	for i, line := range strings.Split(string(md), "\n") {
		n := i + 1
		if open != "" {
			if m := fence.FindStringSubmatch(line); m != nil && m[1][0] == open[0] && len(m[1]) >= len(open) && strings.TrimSpace(line[len(m[0]):]) == "" {
				open = ""
			}
			continue
		}
		if m := fence.FindStringSubmatch(line); m != nil {
			open = m[1]
			continue
		}
		blank := strings.TrimSpace(line) == ""
		indented := strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t")
		if !blank && indented && (prevBlank || inIndented) {
			inIndented = true
			prevBlank = false
			continue
		}
		if !blank {
			inIndented = false
		}
		prevBlank = blank
		if m := refDef.FindStringSubmatch(line); m != nil {
			out = append(out, link{line: n, target: strings.Trim(m[1], "<>")})
			continue
		}
		text, spans := stripCode(line)
		for _, s := range spans {
			if strings.HasPrefix(s, "../") {
				out = append(out, link{line: n, target: s, code: true})
			}
		}
		for _, d := range inlineDests(text) {
			out = append(out, link{line: n, target: d})
		}
		for _, m := range autolink.FindAllStringSubmatch(text, -1) {
			out = append(out, link{line: n, target: m[1]})
		}
	}
	return out
}

// autolink matches a CommonMark autolink, <scheme:...>.
var autolink = regexp.MustCompile(`<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*)>`)

// stripCode removes the code spans of a line and returns what is left and
// the spans' contents. A backtick run without a closing run of the same
// length is literal text.
func stripCode(line string) (string, []string) {
	var b strings.Builder
	var spans []string
	for i := 0; i < len(line); {
		if line[i] == '\\' && i+1 < len(line) {
			b.WriteString(line[i : i+2])
			i += 2
			continue
		}
		if line[i] != '`' {
			b.WriteByte(line[i])
			i++
			continue
		}
		j := i
		for j < len(line) && line[j] == '`' {
			j++
		}
		ticks := line[i:j]
		end := -1
		for k := j; k < len(line); {
			if line[k] != '`' {
				k++
				continue
			}
			m := k
			for m < len(line) && line[m] == '`' {
				m++
			}
			if m-k == len(ticks) {
				end = k
				break
			}
			k = m
		}
		if end < 0 {
			b.WriteString(ticks)
			i = j
			continue
		}
		spans = append(spans, strings.TrimSpace(line[j:end]))
		i = end + len(ticks)
	}
	return b.String(), spans
}

// inlineDests returns the destinations of the inline links and images of
// a line from which code spans were removed.
func inlineDests(s string) []string {
	var out []string
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++ // an escaped character is literal
			continue
		case '[':
		default:
			continue
		}
		// Find the matching ], honouring nesting and escapes.
		depth, j := 0, i
		for ; j < len(s); j++ {
			if s[j] == '\\' {
				j++
				continue
			}
			if s[j] == '[' {
				depth++
			} else if s[j] == ']' {
				depth--
				if depth == 0 {
					break
				}
			}
		}
		if j >= len(s) || j+1 >= len(s) || s[j+1] != '(' {
			continue
		}
		d, end, ok := destination(s[j+2:])
		if !ok {
			continue
		}
		out = append(out, d)
		i = j + 2 + end - 1
	}
	return out
}

// destination parses a link destination at the start of s (after the
// opening parenthesis), with an optional title, and returns it and the
// length consumed up to and including the closing parenthesis.
func destination(s string) (dest string, n int, ok bool) {
	i := 0
	for i < len(s) && s[i] == ' ' {
		i++
	}
	if i < len(s) && s[i] == '<' {
		k := strings.IndexByte(s[i:], '>')
		if k < 0 {
			return "", 0, false
		}
		dest = s[i+1 : i+k]
		i += k + 1
	} else {
		start, depth := i, 0
		for ; i < len(s); i++ {
			c := s[i]
			if c == '\\' {
				i++
				continue
			}
			if c == ' ' {
				break
			}
			if c == '(' {
				depth++
			}
			if c == ')' {
				if depth == 0 {
					break
				}
				depth--
			}
		}
		if i > len(s) {
			i = len(s)
		}
		dest = s[start:i]
	}
	// Skip an optional title up to the closing parenthesis.
	k := strings.IndexByte(s[i:], ')')
	if k < 0 {
		return "", 0, false
	}
	return dest, i + k + 1, true
}
