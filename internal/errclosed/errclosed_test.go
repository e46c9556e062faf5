package errclosed

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

func TestNew(t *testing.T) {
	err := fmt.Errorf("run: %w", New("dma engine"))
	if !errors.Is(err, os.ErrClosed) {
		t.Errorf("%v does not match os.ErrClosed", err)
	}
	if got, want := err.Error(), "run: dma engine closed"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}
