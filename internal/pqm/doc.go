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
//   - a completion word beside the rings, which the channel sets to the
//     number of each job it completes.
//
// A Job is a run of LIN_PDMA packets for one channel. Submit copies it
// into the ring, its last packet carrying a write completion of the job's
// number to the completion word, followed by a MSG_LONG behind an engine
// barrier that writes the Pool's user interrupt number to the PCIe MSI-X
// doorbell, and advances MSQ_PI; the Ticket it returns is done when the
// word reaches the job's number. Wait blocks in WAIT_CS's interrupt mode
// on the word's address (the driver compares the 64-bit value there with
// the target each time the interrupt fires), in bounded slices so that a
// missed or early interrupt only delays it.
//
// Habana's runtime (SCAL's direct mode) completes differently: each
// channel's own HBW completion queue (ECMPLTN_Q_* registers at 0x400 of
// the CH_A block) counts LIN_PDMAs with advcnt_hbw_complq set and sends
// the interrupt itself. The simulator models write completions and the
// doorbell, not that queue, so this package uses the former; both are
// write completions of the channel waited for with an interrupt.
//
// # What the device may still use
//
// The ring, the counters and the memory a job names are read and written
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
// e6cef1c3d122627e08bb3dfd1ec49d7ada86f852,
// scal/src/platform/gaudi3/direct_mode_pdma_stream.cpp setBuffer and
// initChannelCQ; scal_qman_gaudi3.cpp, which waits with
// hlthunk_wait_for_interrupt on a counter's user address; the CH_A
// layout of specs_h9/gaudi3/asic_reg_structs/pdma_ch_a_regs.h and
// pqm_ch_a_regs.h; Synapse's
// synapse/src/runtime/scal/gaudi3/direct_mode_packets/pqm_packets.cpp and
// synapse/src/runtime/scal/common/entities/scal_stream_copy_direct_mode.cpp:
// only the last LIN_PDMA of a chunk completes, device-to-host copies clear
// the direction bit and every other transfer sets it); hlthunk-enhanced's
// Gaudi3 tests (github.com/HenryTangIntel/hlthunk-enhanced at
// cb46f4f1640c492ba086aaca89143b9a859a7f8b, tests/gaudi3/
// hlthunk_tests_gaudi3.c: the channel reset order, the PI/CI byte
// counters, SW-172941's counter wrap); the out-of-tree driver
// (github.com/HabanaAI/drivers.accel.habanalabs.kernel,
// drivers/accel/habanalabs/gaudi3/gaudi3.c at
// 58be96464de01b613d29262449eb6af038b7fff6, gaudi3_init_pdma: the user
// mask, KDMA_CH_ID). The register map itself is in uapi/gaudi3.
package pqm
