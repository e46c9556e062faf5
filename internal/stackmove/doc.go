// Package stackmove holds the test that every address the library hands
// the driver survives goroutine stack moves: a File between the library and
// the simulator interrupts each call, moves the calling goroutine's stack
// (growth, then a garbage collection that may shrink it), poisons the stack
// memory the runtime freed, and checks on every later attempt that each
// address in the arguments still holds the bytes it held at the first.
//
// The package has no code of its own; see stackmove_unsafe_test.go. The
// argument decoding, stack move and poisoning live in internal/strict,
// which the simulator's strict mode uses too.
package stackmove
