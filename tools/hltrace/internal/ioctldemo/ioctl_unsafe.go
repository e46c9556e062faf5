package main

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gaudi-go/gaudi/uapi/dmabuf"
	"github.com/gaudi-go/gaudi/uapi/hl"
)

// call issues ioctl(fd, req, arg) and returns the errno; keep holds what
// arg points at, and what that points at, alive until it returns.
func call(fd int, req uint32, arg unsafe.Pointer, keep ...any) unix.Errno {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	runtime.KeepAlive(keep)
	return errno
}

func hwIPInfo(fd int) unix.Errno {
	answer := make([]hl.InfoHWIPInfo, 1)
	var a hl.InfoArgs
	a.Op = hl.HL_INFO_HW_IP_INFO
	a.ReturnSize = uint32(unsafe.Sizeof(answer[0]))
	a.ReturnPointer = hl.SlicePointer(answer)
	return call(fd, hl.DRM_IOCTL_HL_INFO, unsafe.Pointer(&a), &a, answer)
}

func memAlloc(fd int, size uint64) unix.Errno {
	var a hl.MemArgs
	a.In().Op = hl.HL_MEM_OP_ALLOC
	a.In().Alloc().MemSize = size
	return call(fd, hl.DRM_IOCTL_HL_MEMORY, unsafe.Pointer(&a), &a)
}

func cbCreate(fd int, size uint32) unix.Errno {
	var a hl.CBArgs
	a.In().Op = hl.HL_CB_OP_CREATE
	a.In().CBSize = size
	a.In().Flags = hl.HL_CB_FLAGS_MAP
	return call(fd, hl.DRM_IOCTL_HL_CB, unsafe.Pointer(&a), &a)
}

func submit(fd int, chunks []hl.CSChunk) unix.Errno {
	a := hl.CSChunksArgs{ChunksExecute: hl.SlicePointer(chunks), NumChunksExecute: uint32(len(chunks))}
	return call(fd, hl.DRM_IOCTL_HL_CS, unsafe.Pointer(&a), &a, chunks)
}

func engineCores(fd int, cmd hl.EngineCommand, ids []uint32) unix.Errno {
	a := hl.CSEngineCoresArgs{EngineCores: hl.SlicePointer(ids), NumEngineCores: uint32(len(ids)), CoreCommand: uint32(cmd),
		CSFlags: hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND}
	return call(fd, hl.DRM_IOCTL_HL_CS, unsafe.Pointer(&a), &a, ids)
}

func waitCS(fd int, seq uint64) unix.Errno {
	var a hl.WaitCSArgs
	a.In().SetSeq(seq)
	a.In().SetTimeoutUs(1_000_000)
	return call(fd, hl.DRM_IOCTL_HL_WAIT_CS, unsafe.Pointer(&a), &a)
}

func dmabufSync(fd int, flags uint64) unix.Errno {
	s := dmabuf.Sync{Flags: flags}
	return call(fd, dmabuf.DMA_BUF_IOCTL_SYNC, unsafe.Pointer(&s), &s)
}
