package main

import (
	"bufio"
	"bytes"
	"context"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/ib/cm"
	"github.com/gaudi-go/gaudi/internal/rxetest"
)

// argsEnv makes the test binary run the example with the arguments it
// holds (TestMain), so that TestKernelTwoProcesses runs each end in a
// process of its own, each with its own simulated Gaudi.
const argsEnv = "RDMA_SEND_ARGS"

// runArgs runs the example with the arguments in argsEnv, as main does,
// and returns the exit code.
func runArgs() int {
	var cfg config
	cmd := newCommand(&cfg)
	if err := cmd.Parse(strings.Fields(os.Getenv(argsEnv))); err != nil {
		return cmd.Report(err)
	}
	if err := run(context.Background(), cmd, &cfg, os.Stdout); err != nil {
		return cmd.Report(err)
	}
	return 0
}

// end starts the example as a process with args on a simulated chip; its
// output lines come on the channel, closed when the process ends.
func end(ctx context.Context, t *testing.T, chip, args string) (*exec.Cmd, <-chan string, *bytes.Buffer) {
	t.Helper()
	p := exec.CommandContext(ctx, os.Args[0], "-test.run", "^$")
	p.Env = append(os.Environ(), argsEnv+"="+args,
		"GAUDI_DEVICE=sim", "GAUDI_SIM="+chip+":1", "GAUDI_SIM_LOCKDIR="+t.TempDir())
	stderr := new(bytes.Buffer)
	p.Stderr = stderr
	out, err := p.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return p, lines, stderr
}

// TestKernelTwoProcesses runs the example's two ends in two processes over
// the Soft-RoCE device of the VM harness, on the simulated Gaudi, Gaudi2
// and Gaudi3: device memory on both sides, every byte verified by the
// receiver, the path each side took printed. Without rxe it skips, except
// under the harness (GAUDI_VMTEST=1), where it fails.
func TestKernelTwoProcesses(t *testing.T) {
	ip := rxetest.Addr(t, cm.DevicePath)
	for i, chip := range []string{"gaudi", "gaudi2", "gaudi3"} {
		t.Run(chip, func(t *testing.T) {
			addr := netip.AddrPortFrom(ip, uint16(27000+os.Getpid()%1000*3+i))
			ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
			defer cancel()
			recv, rlines, rerr := end(ctx, t, chip, "-listen "+addr.String()+" -size 12M")
			var recvOut, sendOut strings.Builder
			for l := range rlines { // until the receiver listens
				recvOut.WriteString(l + "\n")
				if strings.Contains(l, "listening on") {
					break
				}
			}
			send, slines, serr := end(ctx, t, chip, "-connect "+addr.String()+" -size 12M")
			for l := range slines {
				sendOut.WriteString(l + "\n")
			}
			sendErr := send.Wait()
			for l := range rlines {
				recvOut.WriteString(l + "\n")
			}
			recvErr := recv.Wait()
			t.Logf("sender:\n%s%sreceiver:\n%s%s", sendOut.String(), serr, recvOut.String(), rerr)
			if sendErr != nil || recvErr != nil {
				t.Fatalf("sender: %v; receiver: %v", sendErr, recvErr)
			}
			for _, w := range []struct{ out, want string }{
				{recvOut.String(), "receiver: verified: 12582912 bytes of device memory identical to the sender's"},
				{recvOut.String(), "receiver: 12582912 bytes in 4 chunks, path pipelined (sender's: pipelined)"},
				{sendOut.String(), "sent in 4 chunks, path pipelined (receiver's: pipelined)"},
			} {
				if !strings.Contains(w.out, w.want) {
					t.Errorf("output lacks %q", w.want)
				}
			}
		})
	}
}
