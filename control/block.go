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

// Block is a hardware register block mapped into the process: device
// registers (MMIO), read and written 32 bits at a time with Read32 and
// Write32 at a byte offset from the block's base. On the simulator the
// block is memory the simulated chip watches.
//
// Registers are not memory: a byte store, a copy or a 64-bit access may
// be split, merged or torn by the CPU and the PCIe fabric, so the block's
// bytes are not handed out. Each access is one aligned 32-bit atomic load
// or store (as the driver's readl/writel), checked against the block's
// size; a bad offset gives a *RegisterError matching ErrRegisterOffset,
// an access after Close gives ErrBlockClosed, and nothing panics.
//
// A Block is safe for concurrent use; Close waits for accesses in flight
// and is idempotent.
type Block struct {
	io     *ioctl.Device
	addr   uint64
	handle uint64

	mu       sync.RWMutex // held for reading across an access, for writing by Close
	mem      []byte       // nil after Close
	size     int
	closed   bool
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
	return &Block{io: devio.Of(d), addr: addr, handle: handle, mem: mem, size: len(mem)}, nil
}

// Addr returns the block's device address.
func (b *Block) Addr() uint64 { return b.addr }

// Handle returns the mmap handle the driver gave for the block.
func (b *Block) Handle() uint64 { return b.handle }

// Size returns the block's size in bytes; register offsets run from 0 to
// Size()-4.
func (b *Block) Size() int { return b.size }

// Read32 returns the 32-bit register at byte offset off of the block, read
// with one atomic load. off must be a multiple of 4 inside the block.
func (b *Block) Read32(off int) (uint32, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	p, err := b.reg(off, "read")
	if err != nil {
		return 0, err
	}
	return b.load32(p), nil
}

// Write32 writes v into the 32-bit register at byte offset off of the
// block with one atomic store, ordered after every earlier access of this
// process to the block and to memory (the store is sequentially
// consistent, as Go's atomics are). off must be a multiple of 4 inside the
// block.
func (b *Block) Write32(off int, v uint32) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	p, err := b.reg(off, "write")
	if err != nil {
		return err
	}
	b.store32(p, v)
	return nil
}

// reg checks off and returns the register's index into the mapping; the
// caller holds b.mu for reading.
func (b *Block) reg(off int, op string) (int, error) {
	if b.closed {
		return 0, fmt.Errorf("%s register %#x of hw block %#x: %w", op, off, b.addr, ErrBlockClosed)
	}
	if off < 0 || off > b.size-4 || off%4 != 0 {
		return 0, &RegisterError{Op: op, Block: b.addr, Offset: off, Size: b.size}
	}
	return off, nil
}

// Close unmaps the block. Accesses after it fail with ErrBlockClosed.
func (b *Block) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return b.closeErr
	}
	b.closed = true
	if err := b.io.Munmap(b.mem); err != nil {
		b.closeErr = fmt.Errorf("unmap hw block %#x: %w", b.addr, err)
	}
	b.mem = nil
	return b.closeErr
}
