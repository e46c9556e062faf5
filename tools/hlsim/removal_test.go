package main

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/internal/hlsimtest"
	"golang.org/x/sys/unix"
)

// TestStopRemovesDevices: a server stopped with SIGTERM while clients
// hold its files removes its devices as the driver does: the open files'
// ioctls answer ENODEV (hl_ioctl_control, drm_ioctl on an unplugged
// device), new opens fail with ENODEV, and the server exits once the last
// file is closed, without waiting out its grace. Before, the stopping
// server dropped its side of the files first, so the clients' INFO
// answered ENOTTY.
func TestStopRemovesDevices(t *testing.T) {
	s := hlsimtest.Serve(t, "gaudi2:1")
	var files []*os.File
	for _, control := range []bool{true, false} {
		f, err := os.OpenFile(s.Node(0, control), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		if got := hwIPInfo(int(f.Fd())); got != "ok" {
			t.Fatalf("INFO on %s before: %s", f.Name(), got)
		}
	}
	closed := false
	closeAll := func() {
		if !closed {
			closed = true
			for _, f := range files {
				f.Close()
			}
		}
	}
	defer closeAll()
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop() }()
	if !s.WaitLog("devices removed", 30*time.Second) {
		t.Fatalf("no removal 30 s after SIGTERM:\n%s", s.Log())
	}
	want := strconv.Itoa(int(unix.ENODEV))
	for _, f := range files {
		if got := hwIPInfo(int(f.Fd())); got != want {
			t.Errorf("INFO on %s after SIGTERM: errno %s, want ENODEV (%s)", f.Name(), got, want)
		}
	}
	if _, err := os.OpenFile(s.Node(0, true), os.O_RDWR, 0); !errors.Is(err, unix.ENODEV) {
		t.Errorf("open after SIGTERM: %v, want ENODEV", err)
	}
	closeAll()
	if err := <-stopped; err != nil {
		t.Fatalf("stop: %v\n%s", err, s.Log())
	}
	if strings.Contains(s.Log(), "still open after") {
		t.Errorf("the server waited out its grace although every file was closed:\n%s", s.Log())
	}
}
