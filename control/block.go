package control

import (
	"fmt"
	"sync"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/devio"
	"github.com/gaudi-go/gaudi/ioctl"
	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// BlockInfo asks the driver for the mmap handle and size of the hardware
// block at addr, a device address in the configuration space (CFG_BASE
// plus the block's offset) of a block the driver lets users map: on Gaudi2
// the ARC DCCMs, ACP, NIC doorbell, decoder and sync manager blocks of
// dcores 1-3. Other addresses give EINVAL; on first-generation Gaudi the
// error matches ErrNotSupported. It replaces hlthunk_get_hw_block; MapBlock
// also maps the block.
func BlockInfo(d *device.Device, addr uint64) (handle uint64, size uint32, err error) {
	var a hl.MemArgs
	a.In().Op = hl.HL_MEM_OP_MAP_BLOCK
	a.In().MapBlock().BlockAddr = addr
	if err := devio.Of(d).Memory(&a); err != nil {
		return 0, 0, fmt.Errorf("hw block %#x: %w", addr, err)
	}
	return a.Out().BlockHandle(), a.Out().BlockSize(), nil
}

// Block is a hardware register block mapped into the process. Bytes gives
// the registers; on the simulator the block is plain zeroed memory.
//
// A Block is safe for concurrent use; the memory Bytes returns is the
// caller's to synchronise. Close is idempotent, and the memory must not be
// used after it.
type Block struct {
	io     *ioctl.Device
	addr   uint64
	handle uint64
	mem    []byte

	once     sync.Once
	closeErr error
}

// MapBlock maps the whole hardware block at addr (see BlockInfo) read and
// write, as hlthunk_get_hw_block followed by mmap of the handle does.
func MapBlock(d *device.Device, addr uint64) (*Block, error) {
	handle, size, err := BlockInfo(d, addr)
	if err != nil {
		return nil, err
	}
	mem, err := devio.Of(d).Mmap(int64(handle), int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map hw block %#x: %w", addr, err)
	}
	return &Block{io: devio.Of(d), addr: addr, handle: handle, mem: mem}, nil
}

// Addr returns the block's device address.
func (b *Block) Addr() uint64 { return b.addr }

// Handle returns the mmap handle the driver gave for the block.
func (b *Block) Handle() uint64 { return b.handle }

// Bytes returns the mapped registers; the length is the block's size.
func (b *Block) Bytes() []byte { return b.mem }

// Close unmaps the block.
func (b *Block) Close() error {
	b.once.Do(func() {
		if err := b.io.Munmap(b.mem); err != nil {
			b.closeErr = fmt.Errorf("unmap hw block %#x: %w", b.addr, err)
		}
	})
	return b.closeErr
}
