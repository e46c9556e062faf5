package cli

import (
	"errors"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// TestErrorText: the errno's name beside its text, once, and one line.
func TestErrorText(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("wait CS 3: %w", unix.ETIMEDOUT), "wait CS 3: ETIMEDOUT (connection timed out)"},
		{fmt.Errorf("read: %w", unix.ECONNABORTED), "read: ECONNABORTED (software caused connection abort)"},
		{fmt.Errorf("open: EBUSY: %w", unix.EBUSY), "open: EBUSY: device or resource busy"},
		{fmt.Errorf("CS aborted:\nqueue PDMA_0_0\n  stuck: %w", unix.EIO), "CS aborted:; queue PDMA_0_0; stuck: EIO (input/output error)"},
		// Every errno of a joined error, as the close of a run the server
		// abandoned gives.
		{errors.Join(fmt.Errorf("wait: %w", unix.ECONNABORTED), fmt.Errorf("unmap: %w", unix.ENOTCONN), fmt.Errorf("free: %w", unix.ENOTCONN)),
			"wait: ECONNABORTED (software caused connection abort); unmap: ENOTCONN (transport endpoint is not connected); free: ENOTCONN (transport endpoint is not connected)"},
		{nil, ""},
	} {
		if got := ErrorText(tc.err); got != tc.want {
			t.Errorf("ErrorText(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
