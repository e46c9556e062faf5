package layers

import (
	"go/build"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	module     = "github.com/gaudi-go/gaudi"
	moduleRoot = "../.."
)

// library lists the packages a program that uses hardware only imports.
var library = []string{"device", "memory", "dma", "stream", "control", "ipc", "ib", "ib/cm", "ioctl", "packet", "gohlml"}

// deps returns the packages of this module that pkg (a directory relative
// to the module root) imports, directly or not, in its non-test files as
// ctx builds them, with the chain of imports that reaches each.
func deps(t *testing.T, ctx *build.Context, pkg string) map[string][]string {
	t.Helper()
	chains := map[string][]string{}
	var visit func(dir string, chain []string)
	visit = func(dir string, chain []string) {
		p, err := ctx.ImportDir(filepath.Join(moduleRoot, filepath.FromSlash(dir)), 0)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, imp := range p.Imports {
			rel, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			if _, seen := chains[rel]; seen {
				continue
			}
			chains[rel] = append(slices.Clone(chain), rel)
			visit(rel, chains[rel])
		}
	}
	visit(pkg, []string{pkg})
	return chains
}

// TestNoSimulatorInLibrary fails when a library package depends on sim:
// the simulator is opened through package simdevice, which tools,
// examples and tests import.
func TestNoSimulatorInLibrary(t *testing.T) {
	for _, cgo := range []bool{false, true} {
		ctx := build.Default
		ctx.CgoEnabled = cgo
		for _, pkg := range library {
			for dep, chain := range deps(t, &ctx, pkg) {
				if dep == "sim" || strings.HasPrefix(dep, "sim/") || dep == "simdevice" || dep == "internal/simtest" {
					t.Errorf("cgo=%v: %s depends on %s: %s", cgo, pkg, dep, strings.Join(chain, " -> "))
				}
			}
		}
	}
}

// TestCheckSeesSimulator proves the check can fail: simdevice does depend
// on sim.
func TestCheckSeesSimulator(t *testing.T) {
	if _, ok := deps(t, &build.Default, "simdevice")["sim"]; !ok {
		t.Fatal("simdevice's dependencies lack sim: the check is blind")
	}
}

// toolOnly are the libraries only tools may link: the FUSE server of
// tools/hlsim, Prometheus' client of tools/hlexporter, cilium/ebpf of
// tools/hltrace.
var toolOnly = []string{"github.com/hanwen/go-fuse", "github.com/prometheus/", "github.com/cilium/ebpf"}

// toolImports returns the imports of tool-only libraries by pkg and the
// module packages it reaches, as "importer: import".
func toolImports(t *testing.T, pkg string) []string {
	t.Helper()
	ctx := build.Default
	pkgs := []string{pkg}
	for dep := range deps(t, &ctx, pkg) {
		pkgs = append(pkgs, dep)
	}
	var found []string
	for _, p := range pkgs {
		bp, err := ctx.ImportDir(filepath.Join(moduleRoot, filepath.FromSlash(p)), 0)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, imp := range bp.Imports {
			for _, bad := range toolOnly {
				if strings.HasPrefix(imp, bad) {
					found = append(found, p+": "+imp)
				}
			}
		}
	}
	return found
}

// TestLibraryImportsNoTools fails when a library package, or a module
// package it reaches, imports a tool-only library.
func TestLibraryImportsNoTools(t *testing.T) {
	for _, pkg := range library {
		for _, f := range toolImports(t, pkg) {
			t.Errorf("%s reaches %s", pkg, f)
		}
	}
}

// TestCheckSeesTools proves the check can fail: tools/hlsim links go-fuse.
func TestCheckSeesTools(t *testing.T) {
	if len(toolImports(t, "tools/hlsim")) == 0 {
		t.Fatal("tools/hlsim's imports lack go-fuse: the check is blind")
	}
}
