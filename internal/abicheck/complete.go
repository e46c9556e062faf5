package abicheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Complete parses the generated (z*.go, non-test) files in dir and reports
// every exported type, constant or union accessor that tbl does not cover.
func Complete(tbl *Table, dir string) error {
	types := map[string]bool{}
	fields := map[string]bool{} // "Type.Field" and "Type.Method()"
	for _, ty := range tbl.Types {
		types[ty.Go.Name()] = true
		for _, f := range ty.Fields {
			fields[ty.Go.Name()+"."+f.Go] = true
		}
	}
	consts := map[string]bool{}
	for _, c := range append(append([]Const{}, tbl.Consts...), tbl.Requests...) {
		consts[c.Go] = true
	}
	files, err := filepath.Glob(filepath.Join(dir, "z*.go"))
	if err != nil {
		return err
	}
	var missing []string
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						st, isStruct := s.Type.(*ast.StructType)
						if !isStruct {
							continue // enum types: proven through their constants
						}
						if !types[s.Name.Name] {
							missing = append(missing, "type "+s.Name.Name)
						}
						for _, fl := range st.Fields.List {
							for _, n := range fl.Names {
								if n.IsExported() && !fields[s.Name.Name+"."+n.Name] {
									missing = append(missing, "field "+s.Name.Name+"."+n.Name)
								}
							}
						}
					case *ast.ValueSpec:
						if d.Tok != token.CONST {
							continue // name tables: keyed by the constants themselves
						}
						for _, n := range s.Names {
							if !consts[n.Name] {
								missing = append(missing, "const "+n.Name)
							}
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv == nil || len(d.Recv.List) != 1 {
					missing = append(missing, "func "+d.Name.Name)
					continue
				}
				recv := d.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				id, _ := recv.(*ast.Ident)
				if id == nil {
					continue
				}
				// A setter is covered by its getter; an unexported setter
				// (setX) is the one a read-only user address keeps for the
				// proof alone.
				name := strings.TrimPrefix(d.Name.Name, "Set")
				if rest, ok := strings.CutPrefix(d.Name.Name, "set"); ok && rest != "" {
					name = rest
				}
				if !fields[id.Name+"."+d.Name.Name+"()"] && !fields[id.Name+"."+name+"()"] {
					missing = append(missing, "method "+id.Name+"."+d.Name.Name)
				}
			}
		}
	}
	if len(files) == 0 {
		return fmt.Errorf("no generated files in %s", dir)
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("not covered by the ABI table: %s", strings.Join(missing, ", "))
	}
	return nil
}
