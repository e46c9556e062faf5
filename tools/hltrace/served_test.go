package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/internal/hlsimtest"
)

// TestIntegrationServedNode traces examples/dma on a node tools/hlsim
// serves: with no Gaudi and no habanalabs driver, the program's ioctls are
// still system calls on a device node, so hltrace -transfers pairs each CS
// with the wait that saw it complete, and -decode-cb decodes its LIN_DMA
// packets.
func TestIntegrationServedNode(t *testing.T) {
	requireRoot(t)
	s := hlsimtest.Serve(t, "gaudi2:1")
	dir := t.TempDir()
	const comm = "hltrace-served" // the example under a name to filter on (at most 15 bytes, as comm)
	example := filepath.Join(dir, comm)
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to build examples/dma: %v", err)
	}
	if out, err := exec.Command(gocmd, "build", "-o", example, "github.com/gaudi-go/gaudi/examples/dma").CombinedOutput(); err != nil {
		t.Fatalf("go build examples/dma: %v\n%s", err, out)
	}

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tr := exec.Command(exe, "-transfers", "-decode-cb", "-c", comm)
	tr.Env = append(os.Environ(), "HLTRACE_TEST_MAIN=1")
	var out bytes.Buffer
	tr.Stdout = &out
	stderr, err := tr.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	defer tr.Process.Kill()
	banner := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var all []string
		for sc.Scan() {
			all = append(all, sc.Text())
			if strings.Contains(sc.Text(), "Ctrl-C to stop") {
				banner <- strings.Join(all, "\n")
			}
		}
		banner <- strings.Join(all, "\n")
	}()
	select {
	case b := <-banner:
		if !strings.Contains(b, "Ctrl-C to stop") {
			t.Fatalf("hltrace did not start:\n%s", b)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("hltrace did not start within a minute")
	}

	run := exec.Command(example, "-size", "4194304")
	run.Env = s.Env()
	if b, err := run.CombinedOutput(); err != nil || !bytes.Contains(b, []byte("verified")) {
		t.Fatalf("examples/dma on the served node: %v\n%s", err, b)
	}
	time.Sleep(200 * time.Millisecond) // the last events cross the ring buffer
	tr.Process.Signal(syscall.SIGINT)
	if err := tr.Wait(); err != nil {
		t.Fatalf("hltrace: %v\n%s", err, out.String())
	}
	got := out.String()
	t.Logf("hltrace:\n%s", got)
	// Every CS of the copies completed, paired with its wait.
	cs := regexp.MustCompile(`(?m)^\S+\s+\d+\s+` + regexp.QuoteMeta(comm) + `\s+CS fd=\d+ seq=(\d+) .*-> COMPLETED after .* \(\d+ wait\(s\)`)
	if n := len(cs.FindAllString(got, -1)); n < 3 {
		t.Errorf("%d CSs paired with their waits, want one per copy (3 at least)", n)
	}
	if !regexp.MustCompile(`seq=\d+ chunk0 q=\d+ \+0x0 LIN_DMA src=0x[0-9a-f]+ dst=0x[0-9a-f]+.* size=\d+`).MatchString(got) {
		t.Error("no decoded LIN_DMA packet")
	}
	if !regexp.MustCompile(`transfers: [1-9]\d* completed, 0 aborted, 0 outstanding`).MatchString(got) {
		t.Error("no transfer summary with completed transfers and none outstanding")
	}
}
