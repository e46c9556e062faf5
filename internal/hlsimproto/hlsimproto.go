// Package hlsimproto is what a served node (tools/hlsim) and the library's
// kernel file (package ioctl) agree on beyond the driver's ABI: how the
// library recognises a node served by hlsim, and how a dma-buf the server
// exported reaches the client.
//
// # Recognising a served node
//
// The driver's nodes are character devices; a served node is a regular
// file on a FUSE mount (the kernel sends opens of a character device to
// the driver of its number, never to FUSE). The library asks a regular
// file Hello; hlsim answers with Magic, its process id and the device's
// identity. The request is never sent to a real device node.
//
// # dma-bufs
//
// MEMORY EXPORT_DMABUF_FD runs in the server, so the descriptor it makes is
// the server's: the reply carries the server's descriptor number. A client
// that said Hello takes the file with pidfd_getfd(2) on the server's pid
// (which needs ptrace access to the server: the same user with the
// default Yama scope, or CAP_SYS_PTRACE) and then sends Taken with that
// number, so the server closes its copy. A client that did not say Hello
// would get a number that means nothing to it: the server refuses its
// export with EOPNOTSUPP and says why on its standard error. Descriptors
// a client never took are closed when its open of the node is released.
//
// The descriptor the client takes is not the simulator's export itself
// but a file of a node of the server's, hlsim/dmabuf/N, which only the
// server opens, once per export: as the driver's dma-buf (export_dmabuf in
// drivers/accel/habanalabs/common/memory.c takes a reference to the
// compute file, hl_release_dmabuf puts it when the dma-buf's last
// reference goes), the export lasts until that file's RELEASE, in
// whatever process its last descriptor was. read and write answer EINVAL
// as a dma-buf without read/write file operations does. DMABufRead is the
// simulator's test hook (sim.TestHookReadDMABuf): it reads the exported
// device memory, which no dma-buf of the driver lets the CPU do.
package hlsimproto

import "structs"

// Magic identifies hlsim's answer to Hello ("hlsi").
const Magic = 0x69736c68

// Version is the protocol version of this package.
const Version = 1

// Hello is the argument of HelloRequest: the client sends it zeroed, the
// server fills it in.
type Hello struct {
	_          structs.HostLayout
	Magic      uint32
	Version    uint32
	ServerPID  int32 // the server's process id, for pidfd_getfd
	Device     uint32
	PCIAddress [16]byte // NUL-terminated, "0000:19:00.0"
}

// Taken is the argument of TakenRequest: the server descriptor the
// client took (or failed to take, with Errno its errno), which the server
// may close now.
type Taken struct {
	_     structs.HostLayout
	FD    int32
	Errno int32
}

// DMABufReadMax is how many bytes one DMABufRead carries.
const DMABufReadMax = 8192

// DMABufRead is the argument of DMABufReadRequest on a served dma-buf:
// the client sets Offset and Len (at most DMABufReadMax), the server
// fills Data and sets Len to the bytes read (0 at the end).
type DMABufRead struct {
	_      structs.HostLayout
	Offset uint64
	Len    uint32
	_      uint32
	Data   [DMABufReadMax]byte
}

// Type is the ioctl type of hlsim's own requests ('S'), which the driver's
// ABI ('d' and the legacy 'H') does not use.
const Type = 'S'

// The requests, encoded as _IOWR(Type, 1, Hello), _IOW(Type, 2, Taken)
// and _IOWR(Type, 3, DMABufRead) with the asm-generic layout (direction
// bits 30-31, size 16-29).
const (
	HelloRequest      = 3<<30 | 32<<16 | Type<<8 | 1
	TakenRequest      = 1<<30 | 8<<16 | Type<<8 | 2
	DMABufReadRequest = 3<<30 | (16+DMABufReadMax)<<16 | Type<<8 | 3
)

// TSAliasBit and TSBit: a served node keeps a timestamp buffer at its
// mmap offset with bit 63 (HL_MMAP_TYPE_TS_BUFF's) moved to bit 62, since
// mmap of a regular file refuses offsets from 2^63 on (EOVERFLOW); the
// library maps it there (sim.MmapFileOffset).
const (
	TSBit      = 1 << 63
	TSAliasBit = 1 << 62
)
