// Package ipc shares exported device memory (dma-bufs) between processes.
//
// A Handle names an exported range: device identity, device VA, size and
// offset, the exporter's pid, start time, pid namespace and boot id, and a
// random 128-bit buffer id. It never carries a file descriptor number, which means
// nothing outside the process that owns it (the mistake of the UCX Gaudi
// forks, whose rkeys carried the exporter's fd number). Handles have a
// versioned, length-checked binary encoding (MarshalBinary, UnmarshalBinary,
// and a hexadecimal form for command lines and environment variables).
//
// An Exporter serves exports over a Unix socket (SOCK_SEQPACKET, a path or
// a Linux abstract name). An importer sends the handle; the Exporter checks
// the peer's uid (SO_PEERCRED) against its policy (its own uid by default,
// or an allowlist), checks that the handle is one it issued and has not
// revoked, and answers with the descriptor (SCM_RIGHTS) or a code and
// message saying why not. Import is the importer's side: it honours ctx's
// deadline on the socket (DefaultImportTimeout without one), so an exporter
// that stalls or dies never hangs it; every descriptor that arrives on a
// failing path is closed.
//
// Descriptors: the Exporter keeps its own duplicate of each exported
// descriptor until Revoke or Close; an imported descriptor belongs to the
// importer (Imported.Close). Revoke stops further imports; descriptors
// already passed stay valid, as dma-bufs do, so importers are told instead:
// Watch opens a connection on which the Exporter sends the id of every
// buffer it revokes, and which ends when the Exporter closes or dies. An
// export made from a memory.DMABuf is revoked when that DMABuf closes.
//
// A Cache imports with reference counts and an LRU of idle entries, and
// watches each exporter it imports from: entries are invalidated when
// revoked (CachedImport.Revoked is closed) and all entries of an exporter
// when it goes away.
//
// Imported.MapInto maps an imported buffer into a device of this process
// (memory.Manager.Import, Intel's out-of-tree driver): that device's DMA
// engines then copy to and from the exporter's device memory, which is the
// whole device-to-device path between two processes: A exports, B imports
// into its own Gaudi and copies with its own engines.
//
// On the simulator an exported descriptor is a memfd that the CPU can mmap.
// A Gaudi dma-buf cannot be mmapped: an importer on hardware registers it
// with an RDMA NIC or imports it into another device.
package ipc
