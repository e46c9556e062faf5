package cli

import (
	"errors"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrorText is err's message as every command prints it: on one line
// (line breaks become "; "), with each errno's name beside its text
// ("ETIMEDOUT (connection timed out)") for every unix.Errno err wraps,
// through joined errors too, whose name the message does not already
// give.
func ErrorText(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	list := errnos(err, nil)
	// An error with an As method (none in this module's chains today)
	// still gives its errno as errors.As sees it.
	if errno := unix.Errno(0); len(list) == 0 && errors.As(err, &errno) {
		list = append(list, errno)
	}
	for _, errno := range list {
		if name := unix.ErrnoName(errno); name != "" && !strings.Contains(s, name) {
			text := errno.Error()
			s = strings.ReplaceAll(s, text, name+" ("+text+")")
		}
	}
	s = strings.Join(strings.Fields(strings.ReplaceAll(strings.ReplaceAll(s, "\r", "\n"), "\n", "; ")), " ")
	return s
}

// errnos appends to out, once each, the errnos of err's tree, in the
// order errors.As would meet them.
func errnos(err error, out []unix.Errno) []unix.Errno {
	if errno, ok := err.(unix.Errno); ok {
		if !slices.Contains(out, errno) {
			out = append(out, errno)
		}
		return out
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if next := u.Unwrap(); next != nil {
			out = errnos(next, out)
		}
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if e != nil {
				out = errnos(e, out)
			}
		}
	}
	return out
}
