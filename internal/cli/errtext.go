package cli

import (
	"errors"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrorText is err's message as every command prints it: on one line
// (line breaks become "; "), with the errno's name beside its text
// ("ETIMEDOUT (connection timed out)") where err wraps a unix.Errno
// whose name the message does not already give.
func ErrorText(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	var errno unix.Errno
	if errors.As(err, &errno) {
		if name := unix.ErrnoName(errno); name != "" && !strings.Contains(s, name) {
			if text := errno.Error(); strings.Contains(s, text) {
				s = strings.Replace(s, text, name+" ("+text+")", 1)
			}
		}
	}
	s = strings.Join(strings.Fields(strings.ReplaceAll(strings.ReplaceAll(s, "\r", "\n"), "\n", "; ")), " ")
	return s
}
