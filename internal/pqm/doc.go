// Package pqm drives the queue managers of Gaudi3 PDMA channels (PQM)
// from user space: the submission path of package dma on Gaudi3, where no
// user command buffer can go through the CS ioctl (the driver's only CS
// queue is its own CPU queue).
//
// # One channel
//
// A Pool claims some of the channels hw_ip_info's pdma_user_owned_ch_mask
// gives users and, for each, owns:
//
//   - the channel's CH_A register block, mapped with MEMORY MAP_BLOCK and
//     mmap; the CPU programs it with aligned 32-bit stores;
//   - its message queue (MSQ): a ring, a power of two bytes, in host
//     memory the caller pinned and mapped to the device (MEMORY MAP
//     USERPTR), which the channel reads packets from between MSQ_CI and
//     MSQ_PI, two free-running 32-bit byte counters;
//   - its HBW completion queue (the ECMPLTN_Q registers at 0x400 of the
//     CH_A block), set up as Habana's runtime sets it up in direct mode
//     (SCAL's DirectModePDMAStream::initChannelCQ): one 64-bit counter
//     beside the rings, and an LBW message of the Pool's user interrupt
//     number to the PCIe MSI-X doorbell after each count.
//
// A Job is a run of LIN_PDMA packets for one channel. Submit copies it
// into the ring, its last packet with advcnt_hbw_complq, and advances
// MSQ_PI. When that packet's transfer is done the channel counts it in
// the queue (ECMPLTN_Q_BASE_PI), writes the count to the counter, then
// sends the interrupt; the Ticket Submit returns is done when the counter
// reaches the count with the job. Only the last packet completes: a
// channel's LIN_PDMAs complete in order (Synapse completes a chunk of
// them with its last alone). Wait blocks in WAIT_CS's interrupt mode on
// the counter's address with the Pool's interrupt (the driver compares the
// 64-bit value there with the target each time the interrupt fires, as
// SCAL's waits do), in bounded slices so that a missed or early interrupt
// only delays it.
//
// What the sources leave open, and how the package stays on the safe
// side: SCAL sets a queue up once and never writes ECMPLTN_Q_BASE_PI, but
// a Pool sets it up again after a reset and before the 32-bit count would
// wrap; it then disables the queue, writes ECMPLTN_Q_BASE_PI 0 and seeds
// the counter in memory with what the register reads back, so that the
// counter reads the seed plus the jobs done whether the channel writes its
// count or adds to the memory.
//
// # Device resets
//
// A reset stops the channels and clears their registers; the rings and
// counters in host memory stay. The Pool learns of it from the reset
// count (Config.Resets, read when a wait slice ends empty), from the
// driver's answer to a wait (HL_WAIT_CS_STATUS_ABORTED or EIO), or from
// the channel's FIFO_CFG reading back without the mode Open wrote (each
// Submit reads it). A job not done by then is killed: its wait reports an
// error matching unix.EIO, and stays so after the next Submit has set the
// channel up again (a restart: an empty ring, the completion queue set up
// afresh), for every restart records where the counter had got to, so a
// ticket of before it is done only if its target was reached. Work
// submitted after the restart runs normally: the first Submit after a
// reset is the one that sets the channel up. A reset from before the Pool
// opened is no reset of its jobs: tickets carry the reset count they were
// submitted in, waits for ring room and drains too.
//
// An aborted wait is a reset only if the reset count moved (or cannot be
// read): the driver also aborts the waits in progress when it postpones a
// reset until the device is released (hl_device_cond_reset with an eventfd
// registered, as after a channel error), and the channels then run on. Such
// a wait fails with ErrResetPending (matching ioctl.ErrNotOperational),
// its job neither done nor killed.
//
// # Blocking and closing
//
// Submit lets the channel's lock go while it waits for room or for a
// drain, so another Submit (with its own context), Resume and Idle are
// not held up; each call ends with its own context or deadline, a wait at
// most one 100 ms slice later. Close takes each counter's last value
// under a lock every look at a counter holds (each wait slice,
// Ticket.Done), so it waits for a wait slice under way to end, and a wait
// or Done after Close answers from that value: nothing loads a counter
// from memory the caller frees after Close.
//
// # Register order
//
// The ring's bytes must reach the device before MSQ_PI, its doorbell, says
// they are there; the kernel writes dma_wmb() then writel. On amd64 the
// atomic store of MSQ_PI is an XCHG, a full fence, stronger than both (see
// doorbell_amd64.go). Other architectures, arm64 among them (where the
// store is a store-release, not the DMB OSHST dma_wmb is), are not
// reasoned about: Open refuses there with an error matching
// errors.ErrUnsupported, and the package builds only so that its
// importers do.
//
// # What the device may still use
//
// The ring, the counter and the memory a job names are read and written
// by the device until the job's ticket is done. The Pool never releases
// them: Close resets the channels and unmaps the register blocks, and the
// caller frees the host memory afterwards, only once every ticket it got
// is done. A Pool whose work never completed must be left open (its
// channels stay claimed and its memory allocated) rather than closed.
//
// # Sources
//
// Facts, not code, from: Habana's SCAL direct-mode PDMA stream
// (github.com/HabanaAI/Intel_Gaudi3_Software at
// adff76ca6ca1b1cadec482250202bf5bdb8dcf1f,
// scal/src/platform/gaudi3/direct_mode_pdma_stream.cpp setBuffer and
// initChannelCQ, called from scal_init_gaudi3.cpp
// initDirectModeSinglePdmaChannel with the counter's device address, and
// scal_cfg_gaudi3.cpp createSingleDirectModePdmaChannel with
// mmD0_PCIE_MSIX_BASE and first_available_interrupt_id plus a running
// index; scal/src/common/scal_rt.cpp completionGroupWait, which waits in
// WAIT_CS's interrupt mode for the counter to reach a count, and
// scal_qman_gaudi3.cpp, whose configuration channel waits with
// hlthunk_wait_for_interrupt on a counter in host memory it mapped
// itself; SCAL's tests (scal/tests, pdma_host_sync_internal and
// PqmPktUtils::buildPqmLpdmaPacket: a LIN_PDMA of 0 bytes with
// advcnt_hbw_complq and no write completion ends a transfer, and the
// completion group's wait takes target 1 after one); the CH_A
// layout of specs_h9/gaudi3/asic_reg_structs/pdma_ch_a_regs.h and
// pqm_ch_a_regs.h; Synapse's
// synapse/src/runtime/scal/gaudi3/direct_mode_packets/pqm_packets.cpp and
// synapse/src/runtime/scal/common/entities/scal_stream_copy_direct_mode.cpp:
// only the last LIN_PDMA of a chunk completes, with advcnt_hbw_complq in
// its INTERNAL barrier mode, device-to-host copies clear
// the direction bit and every other transfer sets it); hlthunk-enhanced's
// Gaudi3 tests (github.com/HenryTangIntel/hlthunk-enhanced at
// cb46f4f1640c492ba086aaca89143b9a859a7f8b, tests/gaudi3/
// hlthunk_tests_gaudi3.c: the channel reset order, the PI/CI byte
// counters, SW-172941's counter wrap); the out-of-tree driver
// (github.com/HabanaAI/drivers.accel.habanalabs.kernel,
// drivers/accel/habanalabs/gaudi3/gaudi3.c at
// 58be96464de01b613d29262449eb6af038b7fff6, gaudi3_init_pdma: the user
// mask, KDMA_CH_ID). The register map and the doorbell's address are in
// uapi/gaudi3.
package pqm
