// Command genuapi generates the uapi packages (Go structs, constants and
// ioctl request numbers, plus the table the ABI proof walks) from the Linux
// kernel headers in Debian's linux-source-6.12 package.
//
// Usage, from the module root:
//
//	go run ./internal/cmd/genuapi          # write uapi/*/z*.go
//	go run ./internal/cmd/genuapi -check   # fail if they are not current
//
// It parses the headers itself (a small C declaration parser), lays types
// out with the LP64 C rules and writes explicit padding, so the bindings need
// no cgo; the ABI proof then checks every size, offset, constant and request
// number against gcc.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gaudi-go/gaudi/internal/kernelsrc"
)

func main() {
	check := flag.Bool("check", false, "compare with the files on disk instead of writing them")
	out := flag.String("out", ".", "module root to write into")
	flag.Parse()
	if err := run(*out, *check); err != nil {
		fmt.Fprintln(os.Stderr, "genuapi:", err)
		os.Exit(1)
	}
}

func run(root string, check bool) error {
	ksrc, err := kernelsrc.Dir()
	if err != nil {
		return err
	}
	stale := 0
	for _, spec := range specs {
		files, err := generate(spec, ksrc)
		if err != nil {
			return fmt.Errorf("%s: %w", spec.dir, err)
		}
		for name, data := range files {
			path := filepath.Join(root, spec.dir, name)
			old, rerr := os.ReadFile(path)
			if check {
				if rerr != nil || !bytes.Equal(old, data) {
					fmt.Fprintf(os.Stderr, "genuapi: %s is not current\n", path)
					stale++
				}
				continue
			}
			if rerr == nil && bytes.Equal(old, data) {
				continue
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				return err
			}
		}
	}
	if stale > 0 {
		return fmt.Errorf("%d generated files differ: run 'make generate'", stale)
	}
	return nil
}

// generate returns the generated files of one package by name.
func generate(spec *pkgSpec, ksrc string) (map[string][]byte, error) {
	g := newGen(spec)
	if err := g.load(ksrc); err != nil {
		return nil, err
	}
	if err := g.build(); err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	var err error
	if files["zconst.go"], err = g.emitConsts(); err != nil {
		return nil, err
	}
	if files["ztypes.go"], err = g.emitTypes(); err != nil {
		return nil, err
	}
	acc, err := g.emitAccessors()
	if err != nil {
		return nil, err
	}
	if acc != nil {
		files["zaccess_unsafe.go"] = acc
	}
	names, err := g.emitNames()
	if err != nil {
		return nil, err
	}
	if names != nil {
		files["znames.go"] = names
	}
	if files["zabi_test.go"], err = g.emitABITable(); err != nil {
		return nil, err
	}
	return files, nil
}
