// Package layers holds the test that keeps the simulator out of the
// library: no package a hardware-only program imports (device, memory,
// dma, stream, control, ipc, ib and what they import) may depend on
// package sim, so such a program does not link it. The package has no
// API of its own.
package layers
