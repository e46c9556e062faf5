// Package errclosed makes the errors of calls on closed objects. Every
// package of the module reports a call on a closed object with an error
// matching os.ErrClosed, the one sentinel they share (their ErrClosed
// variables are os.ErrClosed); this package lets the message say what was
// closed.
package errclosed

import "os"

// New returns an error reading "<what> closed", such as "dma engine
// closed", that matches os.ErrClosed with errors.Is.
func New(what string) error { return &closedError{what: what} }

type closedError struct{ what string }

func (e *closedError) Error() string { return e.what + " closed" }
func (e *closedError) Unwrap() error { return os.ErrClosed }
