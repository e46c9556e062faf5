// Package memlink connects packages memory, dma and rdma without public
// API.
//
// A transfer holds the device buffers and host mappings it uses, so that
// their Close waits for the device; holds are counted, and a count a
// program could decrement would let it free memory under a running DMA.
// So memory does not export Hold and Release: it sets the functions here
// in its init, and the packages that submit transfers over memory.Manager
// objects call them: dma for its copies, rdma for the whole of a transfer
// to or from a remote peer (the NIC's part included). Likewise dma
// attaches its Engine to a Manager, through Attach, as the mover its
// buffers' ReadAt and WriteAt use.
package memlink

// The functions memory sets in its init.
var (
	// Hold takes a hold on a *memory.Buffer or *memory.HostBuffer: its
	// Close is deferred until the matching Release. It fails once Close
	// was called.
	Hold func(x any) error
	// Release ends a Hold; the last one finishes a deferred Close and
	// returns its error.
	Release func(x any) error
	// Attach makes mover (a dma.Engine) the mover of a *memory.Manager,
	// unless it has one; Detach undoes it if mover is the one attached.
	Attach func(manager, mover any)
	Detach func(manager, mover any)
	// OnClose asks that f run when Close is called on a *memory.Buffer,
	// before Close checks for open dma-buf exports: a cache of
	// registrations (rdma's) closes its exports there, so that it never
	// keeps a buffer from closing and never outlives it. cancel withdraws
	// f. It fails once Close was called.
	OnClose func(x any, f func()) (cancel func(), err error)
)
