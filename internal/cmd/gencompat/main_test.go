package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestShimUpToDate fails when gohlml/compat/gohlml.go is not what the
// generator writes for package gohlml (run make generate).
func TestShimUpToDate(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	got, err := generate(filepath.Join(root, pkgDir))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(root, outFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run make generate", outFile)
	}
	for _, name := range []string{"func Initialize() error", "func WaitForEvent(es gohlml.EventSet, timeout uint) (gohlml.Event, error)",
		"const HlmlCriticalError = gohlml.HlmlCriticalError", "type Device = gohlml.Device", "var ErrNotSupported = gohlml.ErrNotSupported"} {
		if !bytes.Contains(got, []byte(name)) {
			t.Errorf("shim lacks %q", name)
		}
	}
}
