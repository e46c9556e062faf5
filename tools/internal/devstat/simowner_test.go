package devstat

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/simdevice"
)

// holderEnv makes the test binary own sim:0 instead of running the tests
// (see TestMain): it allocates 2 x 64 MiB, says "ready" and holds the
// device until it is killed.
const holderEnv = "DEVSTAT_TEST_HOLDER"

// holdDevice is the holder's main.
func holdDevice() {
	d, err := simdevice.Open("sim:0")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	for range 2 {
		if _, err := m.Alloc(64<<20, memory.AllocOptions{}); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
	}
	fmt.Println("ready")
	time.Sleep(time.Hour) // the test kills it
}

// TestHeldElsewhereIsAbsent: a device of this process's simulator that
// another process owns (and holds 2 x 64 MiB of) has its memory in that
// process: the snapshot reports memory used and free absent, saying why
// in Errors, rather than the empty copy this process's simulator sees.
// Before, memory_used_bytes was 0.
func TestHeldElsewhereIsAbsent(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holderEnv+"=1")
	startReady(t, cmd, "the holder")
	s, err := Collect(Options{Selection: mustSelect(t, "sim")})
	if err != nil {
		t.Fatal(err)
	}
	held, free := s.Devices[0], s.Devices[1]
	if held.MemoryUsedBytes != nil || held.MemoryFreeBytes != nil {
		t.Errorf("sim:0, owned by pid %d: memory used %v, free %v; want absent",
			cmd.Process.Pid, val(held.MemoryUsedBytes), val(held.MemoryFreeBytes))
	}
	if i := indexOfQuery(held, "dram_usage"); i < 0 {
		t.Errorf("sim:0: no error for dram_usage: %+v", held.Errors)
	} else if want := fmt.Sprintf("held by pid %d (", cmd.Process.Pid); !strings.Contains(held.Errors[i].Message, want) {
		t.Errorf("sim:0: dram_usage: %q does not say %q", held.Errors[i].Message, want)
	}
	if free.MemoryUsedBytes == nil || free.EnergyMJ == nil || len(free.Errors) != 0 {
		t.Errorf("sim:1, which no one owns: memory used %v, energy %v, errors %+v", val(free.MemoryUsedBytes), val(free.EnergyMJ), free.Errors)
	}
}

func val(p *uint64) any {
	if p == nil {
		return nil
	}
	return *p
}

func indexOfQuery(d Device, query string) int {
	for i, e := range d.Errors {
		if e.Query == query {
			return i
		}
	}
	return -1
}

// energyEnv makes the test binary print sim:0's energy as Collect reads
// it (see TestMain) instead of running the tests.
const energyEnv = "DEVSTAT_TEST_ENERGY"

// printEnergy is that child's main.
func printEnergy() {
	sel, err := cli.ParseSelection("-device", "sim:0")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	s, err := Collect(Options{Selection: sel})
	if err != nil || s.Devices[0].EnergyMJ == nil {
		fmt.Println("no energy", err)
		os.Exit(1)
	}
	fmt.Println(*s.Devices[0].EnergyMJ)
}

// TestEnergyAgreesAcrossProcesses: two processes that read one device of
// their in-process simulators (hlinfo and hlexporter, say) read the same
// energy counter, as two readers of a Gaudi's firmware do: the other
// process's reading falls between two of this one's. Before, each
// process's simulator counted from its own start (hlinfo 0 mJ, hlexporter
// 96330 mJ).
func TestEnergyAgreesAcrossProcesses(t *testing.T) {
	read := func() uint64 {
		t.Helper()
		s, err := Collect(Options{Selection: mustSelect(t, "sim:0")})
		if err != nil || s.Devices[0].EnergyMJ == nil {
			t.Fatalf("energy: %v, %+v", err, s)
		}
		return *s.Devices[0].EnergyMJ
	}
	before := read()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), energyEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	after := read()
	var child uint64
	if _, err := fmt.Sscan(string(out), &child); err != nil {
		t.Fatalf("child printed %q", out)
	}
	if child < before || child > after {
		t.Errorf("the other process read %d mJ; this one %d mJ before and %d mJ after", child, before, after)
	}
}
