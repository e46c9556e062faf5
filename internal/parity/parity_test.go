package parity

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	tablePath     = "../../docs/hlthunk-parity.md"
	functionsPath = "testdata/hlthunk-functions.txt"
	moduleRoot    = "../.."
)

// row is one line of the parity table.
type row struct {
	line  int
	num   string
	fn    string // hl-thunk function
	group string
	goCol string // the Go column as written
	note  string
}

var (
	fnCell = regexp.MustCompile("^`(hlthunk_[a-z0-9_]+)`$")
	code   = regexp.MustCompile("`([^`]+)`")
	// goName matches the forms the table uses: pkg.Name, pkg.Type.Method
	// and pkg.(*Type).Method.
	goName = regexp.MustCompile(`^([a-z][a-z0-9]*)\.(?:\(\*([A-Z]\w*)\)\.([A-Z]\w*)|([A-Z]\w*)(?:\.([A-Z]\w*))?)$`)
)

// readTable parses the rows of the table: lines of six cells whose second
// cell is a backquoted hlthunk_ name.
func readTable(t *testing.T) []row {
	t.Helper()
	f, err := os.Open(tablePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []row
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") {
			continue
		}
		cells := splitCells(line)
		if len(cells) < 2 {
			continue
		}
		m := fnCell.FindStringSubmatch(cells[1])
		if m == nil {
			continue
		}
		if len(cells) != 5 {
			t.Errorf("line %d: %d cells, want 5 (#, hl-thunk, Group, Go, Note)", n, len(cells))
			continue
		}
		rows = append(rows, row{line: n, num: cells[0], fn: m[1], group: cells[2], goCol: cells[3], note: cells[4]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// splitCells splits a table line into trimmed cells, honouring \| escapes.
func splitCells(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// readFunctions returns the committed list of hl-thunk's public functions.
func readFunctions(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(functionsPath)
	if err != nil {
		t.Fatal(err)
	}
	var fns []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			fns = append(fns, l)
		}
	}
	return fns
}

// decls is what a package declares at top level: exported functions,
// types, constants and variables, and methods by receiver type, with
// whether the receiver is a pointer.
type decls struct {
	names   map[string]bool
	methods map[string]map[string]bool // type -> method -> pointer receiver
}

// modulePackages parses every non-test Go file of the module (outside
// testdata and hidden directories) and indexes the declarations by the
// package's directory relative to the module root, such as "device" or
// "tools/hltrace".
func modulePackages(t *testing.T) map[string]*decls {
	t.Helper()
	pkgs := make(map[string]*decls)
	fset := token.NewFileSet()
	err := filepath.WalkDir(moduleRoot, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			name := e.Name()
			if path != moduleRoot && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(moduleRoot, filepath.Dir(path))
		if err != nil {
			return err
		}
		d := pkgs[filepath.ToSlash(rel)]
		if d == nil {
			d = &decls{names: map[string]bool{}, methods: map[string]map[string]bool{}}
			pkgs[filepath.ToSlash(rel)] = d
		}
		d.add(f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

func (d *decls) add(f *ast.File) {
	for _, decl := range f.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if !decl.Name.IsExported() {
				continue
			}
			if decl.Recv == nil || len(decl.Recv.List) == 0 {
				d.names[decl.Name.Name] = true
				continue
			}
			typ, ptr := receiver(decl.Recv.List[0].Type)
			if d.methods[typ] == nil {
				d.methods[typ] = map[string]bool{}
			}
			d.methods[typ][decl.Name.Name] = ptr
		case *ast.GenDecl:
			for _, s := range decl.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					d.names[s.Name.Name] = s.Name.IsExported()
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							d.names[n.Name] = true
						}
					}
				}
			}
		}
	}
}

// receiver returns a method receiver's type name and whether it is a
// pointer; type parameters are dropped.
func receiver(e ast.Expr) (string, bool) {
	ptr := false
	if s, ok := e.(*ast.StarExpr); ok {
		ptr, e = true, s.X
	}
	switch x := e.(type) {
	case *ast.IndexExpr:
		e = x.X
	case *ast.IndexListExpr:
		e = x.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name, ptr
	}
	return "", ptr
}

// resolve reports why the Go name s does not exist in pkgs, or "" when it
// does. Method expressions follow Go's method sets: pkg.(*T).M accepts
// value and pointer receivers, pkg.T.M only value receivers.
func resolve(pkgs map[string]*decls, s string) string {
	m := goName.FindStringSubmatch(s)
	if m == nil {
		return "not of the form pkg.Name, pkg.Type.Method or pkg.(*Type).Method"
	}
	pkg, d := findPackage(pkgs, m[1])
	if d == nil {
		return fmt.Sprintf("no package %q in the module", m[1])
	}
	switch {
	case m[2] != "": // pkg.(*T).M
		if !d.names[m[2]] {
			return fmt.Sprintf("no exported type %s in %s", m[2], pkg)
		}
		if _, ok := d.methods[m[2]][m[3]]; !ok {
			return fmt.Sprintf("no exported method %s of %s in %s", m[3], m[2], pkg)
		}
	case m[5] != "": // pkg.T.M
		if !d.names[m[4]] {
			return fmt.Sprintf("no exported type %s in %s", m[4], pkg)
		}
		ptr, ok := d.methods[m[4]][m[5]]
		if !ok {
			return fmt.Sprintf("no exported method %s of %s in %s", m[5], m[4], pkg)
		}
		if ptr {
			return fmt.Sprintf("%s has a pointer receiver: write %s.(*%s).%s", m[5], m[1], m[4], m[5])
		}
	default:
		if !d.names[m[4]] {
			return fmt.Sprintf("no exported %s in %s", m[4], pkg)
		}
	}
	return ""
}

// findPackage finds the package a table name refers to: the top-level
// package of that name, or else the only package whose last path element
// it is.
func findPackage(pkgs map[string]*decls, name string) (string, *decls) {
	if d, ok := pkgs[name]; ok {
		return name, d // a top-level package wins over examples/name and tools/name
	}
	var found []string
	for dir := range pkgs {
		if dir == name || strings.HasSuffix(dir, "/"+name) {
			found = append(found, dir)
		}
	}
	if len(found) != 1 {
		return "", nil
	}
	return found[0], pkgs[found[0]]
}

func TestTableCoversEveryFunction(t *testing.T) {
	rows := readTable(t)
	want := readFunctions(t)
	if len(want) != 107 {
		t.Fatalf("%s lists %d functions, want 107", functionsPath, len(want))
	}
	seen := map[string]int{}
	var got []string
	for i, r := range rows {
		if prev, dup := seen[r.fn]; dup {
			t.Errorf("line %d: %s listed again (first at line %d)", r.line, r.fn, prev)
		}
		seen[r.fn] = r.line
		got = append(got, r.fn)
		if r.num != fmt.Sprint(i+1) {
			t.Errorf("line %d: row number %q, want %d", r.line, r.num, i+1)
		}
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("table functions differ from hl-thunk's (-want +got):\n%s", diff)
	}
}

// noneAllowed are the functions that may have no Go replacement, by the
// reason the table gives: the profiler shim needs dlopen (cgo), the hash
// helpers were never implemented, the deprecated stubs only fail, and
// malloc/free serve C callers only.
var noneAllowed = map[string]bool{
	"hlthunk_profiler_start": true, "hlthunk_profiler_stop": true,
	"hlthunk_profiler_get_trace": true, "hlthunk_profiler_destroy": true,
	"hlthunk_hash_create": true, "hlthunk_hash_destroy": true, "hlthunk_hash_lookup": true,
	"hlthunk_hash_insert": true, "hlthunk_hash_delete": true, "hlthunk_hash_next": true,
	"hlthunk_hash_first":       true,
	"hlthunk_deprecated_func1": true, "hlthunk_deprecated_func2": true, "hlthunk_deprecated_func3": true,
	"hlthunk_malloc": true, "hlthunk_free": true,
}

func TestRowsAnswered(t *testing.T) {
	pkgs := modulePackages(t)
	var pending []string
	for _, r := range readTable(t) {
		if !strings.Contains("ABCDEFGH", r.group) || len(r.group) != 1 {
			t.Errorf("line %d (%s): group %q, want one of A-H", r.line, r.fn, r.group)
		}
		switch r.goCol {
		case "none":
			if !noneAllowed[r.fn] {
				t.Errorf("line %d: %s has no Go replacement, but it is not one of the functions that may lack one", r.line, r.fn)
			}
			if len(r.note) < 20 {
				t.Errorf("line %d: %s has no Go replacement and no reason", r.line, r.fn)
			}
			continue
		case "not yet":
			if len(r.note) < 20 {
				t.Errorf("line %d: %s is not replaced yet and has no plan", r.line, r.fn)
			}
			pending = append(pending, r.fn)
			continue
		case "":
			t.Errorf("line %d: %s has an empty Go column", r.line, r.fn)
			continue
		}
		names := code.FindAllStringSubmatch(r.goCol, -1)
		if len(names) == 0 {
			t.Errorf("line %d: %s: the Go column %q cites no name", r.line, r.fn, r.goCol)
		}
		for _, n := range names {
			if why := resolve(pkgs, n[1]); why != "" {
				t.Errorf("line %d: %s: `%s`: %s", r.line, r.fn, n[1], why)
			}
		}
	}
	if len(pending) > 0 {
		t.Logf("%d functions not replaced yet: %s", len(pending), strings.Join(pending, ", "))
	}
}

// TestNotesCiteRealNames checks the Go names quoted in the notes too: a
// quoted pkg.Name whose package is in the module must exist.
func TestNotesCiteRealNames(t *testing.T) {
	pkgs := modulePackages(t)
	for _, r := range readTable(t) {
		for _, n := range code.FindAllStringSubmatch(r.note, -1) {
			m := goName.FindStringSubmatch(n[1])
			if m == nil {
				continue
			}
			if _, d := findPackage(pkgs, m[1]); d == nil {
				continue // not a module package: a C name or a field
			}
			if why := resolve(pkgs, n[1]); why != "" {
				t.Errorf("line %d: %s note: `%s`: %s", r.line, r.fn, n[1], why)
			}
		}
	}
}

// TestResolve checks the resolver itself on names that exist and names
// that do not, so the table checks above cannot pass vacuously.
func TestResolve(t *testing.T) {
	pkgs := modulePackages(t)
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"device.Open", true},
		{"device.(*Device).HWIPInfo", true},
		{"device.SysFS.Nodes", true},
		{"device.(*SysFS).Nodes", true},
		{"device.Status.String", true},
		{"device.Events", true},
		{"device.ErrNotFound", true},
		{"ioctl.(*Device).WaitCS", true},
		{"device.Device.HWIPInfo", false}, // pointer receiver
		{"device.OpenNothing", false},
		{"device.(*Device).NoSuchMethod", false},
		{"device.(*NoType).Close", false},
		{"nosuchpkg.Open", false},
		{"device.open", false},
		{"Open", false},
	} {
		why := resolve(pkgs, tc.name)
		if (why == "") != tc.ok {
			t.Errorf("resolve(%q) = %q, want ok=%v", tc.name, why, tc.ok)
		}
	}
}
