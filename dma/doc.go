// Package dma moves bytes with a Gaudi's DMA engines: it encodes LIN_DMA
// packets into command buffers, submits them as command submissions (CS)
// on the queues that suit the direction, and waits for their completion.
//
// An Engine belongs to one memory.Manager (and so to one open compute
// node). Addresses given to Copy and Memset are device addresses of
// buffers or host mappings, or host pointers of mapped host memory; the
// Manager's address index decides which, and so the direction and the
// queues. Memory a transfer uses is held (memory.Buffer.Hold) until the
// transfer completes, so closing a buffer during a transfer defers its
// release instead of pulling memory from under the DMA engine.
//
// # Queues and command buffers
//
// Gaudi: jobs go to the external PCI DMA queues (DMA_0 host to device,
// DMA_1 device to host and device to device), whose completion the driver
// tracks; command buffers are kernel CBs (CB CREATE, mmap), which the
// driver copies at submission, so they are reused as soon as the CS ioctl
// returns. Gaudi2: jobs go to PDMA_0 streams 0 and 1 (host to device),
// PDMA_1 stream 0 (device to host; the only PDMA streams the driver gives
// users, so large reads are striped onto PDMA_0 stream 1 too) and the
// enabled EDMA engines (device to device); command buffers are user CBs in
// mapped host memory (HL_CS_CHUNK_FLAGS_USER_ALLOC_CB), or kernel CBs
// mapped into the device MMU with Options.MappedKernelCBs, kept until the
// CS completes. Large copies are striped over several queues of one CS.
//
// # Gaudi3
//
// A Gaudi3 takes no user work through CS. An Engine there claims
// Options.Streams of the PDMA channels hw_ip_info's pdma_user_owned_ch_mask
// gives users (never one another Engine of the process holds), maps their
// register blocks (MEMORY MAP_BLOCK) and points each channel's message
// queue at a ring in pinned host memory mapped to the device. A transfer
// is then LIN_PDMA packets written into those rings, one job per channel,
// large copies striped over the channels; the last packet of a job
// advances the channel's completion queue, as Habana's runtime completes
// its direct-mode PDMA streams: the queue counts the job in a 64-bit
// counter in the same host memory, then raises a user interrupt through
// the MSI-X doorbell, which Wait blocks on (WAIT_CS in interrupt mode on
// the counter). The API, the holds, the contexts, the
// reapers and Close are the same; what differs is listed at the
// Transfer's and the Options' fields: no sequence numbers (Seqs is
// empty) and no timestamps, and since no driver times a channel's job out,
// a transfer past its timeout fails with an error matching
// ioctl.ErrTimeout but keeps its memory held until the channel finished
// it. Engine.Close waits for the channels as long as that timeout, then
// reports ErrInFlight and leaves the rings, the channels and the memory
// allocated; otherwise it resets the channels, unmaps their blocks and
// frees the rings. A device reset aborts the channels' jobs (ErrAborted).
// A channel error (a descriptor it cannot execute) stops the channel, and
// the driver resets the device, or, when the process registered an
// eventfd, waits to be released first: meanwhile the transfers wait,
// within their context, and fail with an error matching
// ioctl.ErrNotOperational, their memory held.
//
// # Completion
//
// Waits take a context and are issued in slices by the ioctl layer; a
// CS the device timed out is an error matching ioctl.ErrTimeout, an
// aborted one (a reset) matches unix.EIO and ErrAborted, and a device that
// is in reset when a CS is submitted answers an error matching
// ioctl.ErrNotOperational. The driver also aborts the waits in progress
// when it postpones a reset until the device is released (with an eventfd
// registered, as a device.Notifier does, after a CS timeout or an engine
// error), while the engines run on: an abort is taken for the CS's end only
// when the device's reset count moved; otherwise the wait fails with an
// error matching ioctl.ErrNotOperational and the CS stays held, as on a
// Gaudi3. A wait the driver answers with EBUSY (a reset
// under way) asks again, with a pause doubling from 1 ms to 100 ms, until
// the driver gives the CS's verdict, the context ends or 10 s passed; then
// its error matches ioctl.ErrNotOperational, and the CS stays held
// (internal/submit's retry policy, the same in package stream).
//
// # Errors of releases
//
// A transfer's result is its own: a command buffer or a held buffer that
// fails to be released when the transfer finishes does not change it.
// Such errors are kept and returned by the Engine's Close; Prepared.Close
// returns those of what it releases. A call on a closed Engine or Prepared
// fails with an error matching ErrClosed, which is os.ErrClosed.
//
// # Lifetime of a submission
//
// Every CS goes through one submission path: EAGAIN (queues full, too
// many CSs in flight) is retried with exponential backoff from 10 µs to
// 10 ms, at most Options.MaxRetries times and within the caller's context,
// and the driver's status is checked. A submission that fails queued
// nothing, and its resources are released at once. A CS the driver
// accepted belongs to the device until WAIT_CS reports it completed, timed
// out or aborted: until then its command buffers stay out of the pool and
// the memory it reads and writes stays held, whatever the caller does. A
// Wait, Copy, Memset or Prepared.Run whose context ends returns that
// context's error at once and leaves the CS running; the Engine keeps
// waiting for it in the background and releases its resources when the
// device is done. Prepared.Close and the Close of a buffer return at once
// and defer the release in the same way; Engine.Close waits for the device
// (bounded by the CS timeout; see Engine.Close). A final result (Wait,
// Done) comes after the release: a buffer closed while a transfer used it
// is freed when a waiter hears that transfer's result, unless the device
// may still use it (a Gaudi3 transfer past its timeout).
//
// An Engine is safe for concurrent use; so is a Transfer.
package dma
