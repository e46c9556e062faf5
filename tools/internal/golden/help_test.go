package golden

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelpEnvironment: the Environment section of every command's -h
// names the variables it reads, in the same words: GAUDI_ROOT for every
// command that finds devices (served nodes), and every form of
// GAUDI_SIM (a chip, a count, the out-of-tree driver) where the
// simulator can stand in.
func TestHelpEnvironment(t *testing.T) {
	bin := build(t)
	root := "GAUDI_ROOT  DIR: find the devices under DIR instead of /sys and /dev"
	sim := []string{"GAUDI_SIM", "gaudi2:8", "gaudi3:4", "oot"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"hlinfo", "-h"}, append([]string{root}, sim...)},
		{[]string{"hlperf", "-h"}, append([]string{root}, sim...)},
		{[]string{"hlexporter", "-h"}, append([]string{root}, sim...)},
		{[]string{"hltrace", "-h"}, []string{root}},
		{[]string{"hlsim", "-h"}, sim},
		{[]string{"hlsim", "serve", "-h"}, append([]string{"GAUDI_SIM_DRIVER"}, sim...)},
		{[]string{"hlsim", "run", "-h"}, append([]string{"GAUDI_SIM_DRIVER"}, sim...)},
	} {
		out, err := exec.Command(filepath.Join(bin, tc.args[0]), tc.args[1:]...).Output()
		if err != nil {
			t.Errorf("%s: %v", strings.Join(tc.args, " "), err)
			continue
		}
		_, env, ok := strings.Cut(string(out), "\nEnvironment:\n")
		if !ok {
			t.Errorf("%s has no Environment section:\n%s", strings.Join(tc.args, " "), out)
			continue
		}
		env = strings.Join(strings.Fields(env), " ")
		for _, w := range tc.want {
			if !strings.Contains(env, strings.Join(strings.Fields(w), " ")) {
				t.Errorf("%s: Environment lacks %q:\n%s", strings.Join(tc.args, " "), w, out)
			}
		}
	}
}
