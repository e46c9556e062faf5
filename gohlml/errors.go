package gohlml

import (
	"errors"
	"fmt"
	"os"

	"github.com/gaudi-go/gaudi/ioctl"
	"golang.org/x/sys/unix"
)

// The errors of the gohlml API, with its names and texts (hlml_return_t's
// codes as gohlml maps them). A value the driver does not give is
// ErrNotSupported itself, so both err == ErrNotSupported and errors.Is
// work; failures of the driver are an *Error that matches one of these and
// keeps the driver's errno.
var (
	// ErrNotIntialized (gohlml's spelling) is returned by every call
	// before Initialize or after Shutdown.
	ErrNotIntialized      = errors.New("hlml not initialized")
	ErrInvalidArgument    = errors.New("invalid argument")
	ErrNotSupported       = errors.New("not supported")
	ErrAlreadyInitialized = errors.New("hlml already initialized")
	ErrNotFound           = errors.New("not found")
	ErrInsufficientSize   = errors.New("insufficient size")
	ErrDriverNotLoaded    = errors.New("driver not loaded")
	// ErrAipIsLost matches the failures of a device that is in reset, not
	// operational or gone.
	ErrAipIsLost   = errors.New("aip is lost")
	ErrMemoryError = errors.New("memory error")
	ErrNoData      = errors.New("no data")
	// ErrUnknownError matches the other failures of the driver.
	ErrUnknownError = errors.New("unknown error")
)

// Error is a failure of the driver: Kind is the gohlml sentinel it matches
// (errors.Is), Err the driver's error (an *ioctl.Error or a file system
// error), which keeps its errno for errors.Is and errors.As.
type Error struct {
	Op   string // what was asked, such as "power"
	Kind error  // ErrAipIsLost, ErrUnknownError, ...
	Err  error
}

// Error returns "hlml: OP: KIND: ERR".
func (e *Error) Error() string { return fmt.Sprintf("hlml: %s: %v: %v", e.Op, e.Kind, e.Err) }

// Unwrap returns the driver's error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the gohlml sentinel e matches.
func (e *Error) Is(target error) bool { return target == e.Kind }

// driverError maps an error of package device or ioctl to gohlml's: a
// query the driver does not serve is ErrNotSupported, a call on a node
// closed by Shutdown ErrNotIntialized, a device in reset or not
// operational an *Error matching ErrAipIsLost.
func driverError(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ioctl.ErrNotSupported), errors.Is(err, unix.EOPNOTSUPP):
		return ErrNotSupported
	case errors.Is(err, os.ErrClosed):
		return ErrNotIntialized
	case errors.Is(err, ioctl.ErrInReset), errors.Is(err, ioctl.ErrNotOperational),
		errors.Is(err, unix.EBUSY), errors.Is(err, unix.ENODEV), errors.Is(err, unix.EIO):
		return &Error{Op: op, Kind: ErrAipIsLost, Err: err}
	}
	return &Error{Op: op, Kind: ErrUnknownError, Err: err}
}
