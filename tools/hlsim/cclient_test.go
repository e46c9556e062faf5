package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gaudi-go/gaudi/internal/hlsimtest"
	"github.com/gaudi-go/gaudi/internal/kernelsrc"
)

// TestCClient compiles testdata/accel_client.c with gcc against the 6.12
// uapi headers (and the driver's packet header) and runs it inside
// "hlsim run": a program in another language opens /dev/accel/accel0 and
// runs INFO, MEMORY ALLOC and MAP, USERPTR, CB create and mmap, a CS with
// LIN_DMA both ways and WAIT_CS, and checks the bytes itself. A missing
// compiler or missing headers fail the test.
func TestCClient(t *testing.T) {
	hlsimtest.Skip(t)
	ksrc, err := kernelsrc.Dir()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		spec  string
		flags []string
	}{
		{"gaudi2:1", nil},
		{"gaudi:1", []string{"-DHLSIM_GAUDI"}},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "accel_client")
			args := append([]string{"-std=gnu11", "-Wall", "-Werror", "-O1",
				"-I", filepath.Join(ksrc, "include", "uapi"),
				"-I", filepath.Join(ksrc, "drivers", "accel", "habanalabs", "include"),
				"-o", bin, filepath.Join("testdata", "accel_client.c")}, tc.flags...)
			if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
				t.Fatalf("gcc (is it installed?): %v\n%s", err, out)
			}
			out, code := hlsimtest.Run(t, tc.spec, nil, bin)
			t.Logf("accel_client:\n%s", out)
			if code != 0 || !strings.HasSuffix(strings.TrimSpace(out), "PASS") {
				t.Fatalf("accel_client exited %d:\n%s", code, out)
			}
			for _, step := range []string{"info device_id", "alloc handle", "userptr src", "cb handle", "wait_cs status 0", "verified 1048576 bytes"} {
				if !strings.Contains(out, step) {
					t.Errorf("no %q step in the output", step)
				}
			}
		})
	}
}
