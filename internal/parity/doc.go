// Package parity holds the test that keeps docs/hlthunk-parity.md honest:
// every public hl-thunk function has exactly one row, no row is empty, and
// every Go name the table cites exists in this module. The package has no
// API of its own.
package parity
