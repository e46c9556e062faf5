package holders

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFind: a file this process holds open is found under its pid and
// command, through another path to the same file too; a file of the same
// name that nobody holds has no holder.
func TestFind(t *testing.T) {
	dir := t.TempDir()
	held := filepath.Join(dir, "held")
	f, err := os.Create(held)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	link := filepath.Join(dir, "link")
	if err := os.Link(held, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "held")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	me := Process{PID: os.Getpid(), Command: string(comm[:len(comm)-1])}
	got := Find("", []string{held, link, other})
	want := map[string][]Process{held: {me}, link: {me}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Find (-want +got):\n%s", diff)
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct {
		ps   []Process
		want string
	}{
		{nil, ""},
		{[]Process{{PID: 12, Command: "hlperf"}}, "held by pid 12 (hlperf)"},
		{[]Process{{PID: 12, Command: "a"}, {PID: 13}}, "held by pid 12 (a), pid 13"},
	} {
		if got := Text(tc.ps); got != tc.want {
			t.Errorf("Text(%v) = %q, want %q", tc.ps, got, tc.want)
		}
	}
}
