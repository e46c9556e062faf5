package golden

import (
	"os"
	"strings"
	"testing"
)

// Example is a command of the README, indented as a code block ("    $
// ..."), with the output printed below it.
type Example struct {
	// Env holds the VAR=value words before the command.
	Env map[string]string
	// Prog is the command's name, and Args its arguments.
	Prog string
	Args []string
	// Out is what the README shows below the command, ending in one
	// newline.
	Out string
}

// READMEExamples returns the examples of prog in the README at path.
func READMEExamples(t testing.TB, path, prog string) []Example {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []Example
	var cur *Example
	for _, line := range strings.Split(string(b), "\n") {
		code, isCode := strings.CutPrefix(line, "    ")
		if cmd, ok := strings.CutPrefix(code, "$ "); isCode && ok {
			cur = nil
			e := Example{Env: map[string]string{}}
			words := strings.Fields(cmd)
			for len(words) > 0 && strings.Contains(words[0], "=") {
				k, v, _ := strings.Cut(words[0], "=")
				e.Env[k] = v
				words = words[1:]
			}
			if len(words) > 0 && words[0] == prog {
				e.Prog, e.Args = words[0], words[1:]
				out = append(out, e)
				cur = &out[len(out)-1]
			}
			continue
		}
		if cur == nil {
			continue
		}
		if !isCode && line != "" {
			cur = nil
			continue
		}
		cur.Out += code + "\n"
	}
	for i := range out {
		out[i].Out = strings.TrimRight(out[i].Out, "\n") + "\n"
	}
	return out
}
