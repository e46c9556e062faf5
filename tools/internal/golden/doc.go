// Package golden holds the golden-output test of the module's commands:
// for each command and bad input, the exit status and the line on
// standard error, so that every command words its refusals and its errors
// alike (issue #24). Check is the commands' tests' comparison with their
// golden files (testdata/NAME, rewritten by go test -update).
package golden
