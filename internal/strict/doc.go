// Package strict holds what the simulator's strict mode and the stack-move
// test share to catch addresses in ioctl arguments that point into a
// goroutine stack: decoding the memory an argument names (Regions), the
// bounds of the calling goroutine's stack (StackBounds), and moving that
// stack and filling the memory it left (MoveStack, Poison).
//
// The driver copies what an argument names from the caller's memory while
// it serves the call, and may do so again on every retry. An address that
// points into a goroutine stack and is kept as an integer goes stale when
// the runtime copies the stack elsewhere, which it may do at any function
// call: the next attempt reads whatever took the stack's place. The
// simulator runs on the caller's goroutine, so for it even one call is
// exposed: its own calls may move the stack under the address.
package strict
