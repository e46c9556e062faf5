// Package golden holds the golden-output test of the module's commands:
// for each command and bad input, the exit status and the line on
// standard error, so that every command words its refusals and its errors
// alike (issue #24).
package golden
