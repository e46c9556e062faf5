// Package deploy holds what an operator installs beside the tools: alert
// rules and a dashboard for hlexporter (tested in tools/hlexporter against
// a real Prometheus), a systemd unit (tested there too) and bash
// completion (tested here, in a real bash).
package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// complete runs the completion for the words in a bash with the tools
// in bin first on PATH and returns what it offers.
func complete(t *testing.T, bin string, env []string, words ...string) []string {
	t.Helper()
	script := `source ./bash-completion/gaudi-tools
COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 ))
_gaudi_tools
printf '%s\n' "${COMPREPLY[@]}"`
	cmd := exec.Command("bash", append([]string{"-c", script, "bash"}, words...)...)
	cmd.Env = append(append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH")), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash completion of %q: %v\n%s", words, err, out)
	}
	return strings.Fields(string(out))
}

// TestBashCompletion completes flags from each tool's own help, a
// subcommand's flags for hlsim, and -device from the devices a sysfs
// tree (GAUDI_ROOT) shows plus the simulator's selectors.
func TestBashCompletion(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("bash:", err)
	}
	bin := t.TempDir()
	for _, tool := range []string{"hlinfo", "hlsim"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, tool), "../tools/"+tool).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", tool, err, out)
		}
	}
	root := t.TempDir()
	for _, n := range []string{"accel0", "accel1"} {
		if err := os.MkdirAll(filepath.Join(root, "sys/class/accel", n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		words []string
		want  []string // among the offers
		not   []string // not among them
	}{
		{[]string{"hlinfo", "-dev"}, []string{"-device"}, []string{"-json"}},
		{[]string{"hlinfo", "-"}, []string{"-device", "-json", "-query-device", "-version"}, nil},
		{[]string{"hlsim", ""}, []string{"serve", "run", "ctl"}, nil},
		{[]string{"hlsim", "serve", "-"}, []string{"-dir"}, nil},
		{[]string{"hlinfo", "-device", ""}, []string{"sim", "0", "1", "sim:1", "gaudi2"}, []string{"2"}},
	} {
		got := complete(t, bin, []string{"GAUDI_ROOT=" + root}, tc.words...)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("%q: offers %q, want %q among them", tc.words, got, w)
			}
		}
		for _, w := range tc.not {
			if slices.Contains(got, w) {
				t.Errorf("%q: offers %q, which should not hold %q", tc.words, got, w)
			}
		}
	}
}
