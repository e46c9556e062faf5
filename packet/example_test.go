package packet_test

import (
	"errors"
	"fmt"

	"github.com/gaudi-go/gaudi/packet"
)

// Build a small Gaudi2 command buffer, a copy followed by a sync object
// signal, then decode it.
func Example() {
	b := packet.NewBuilder(packet.Gaudi2, make([]byte, 0, 64))
	b.LinDMA(packet.LinDMA{
		Src:    0x7f12_3456_7000, // host buffer mapped into the device MMU
		Dst:    0x1001_0000_0000, // device memory
		Size:   4096,
		Header: packet.Header{EngineBarrier: true},
	})
	b.Signal(42, false) // add 1 to sync object 42 once the copy is done
	if err := b.Err(); err != nil {
		fmt.Println(err)
		return
	}
	cb := b.Bytes()
	fmt.Printf("%d bytes\n", len(cb))

	err := packet.Gaudi2.Walk(cb, func(off int, p packet.Packet) error {
		fmt.Printf("%2d: %v\n", off, p)
		if m, ok := p.(packet.MsgShort); ok {
			fmt.Printf("    SOB %d %+v\n", m.Offset/4, m.SOBUpdate())
		}
		return nil
	})
	fmt.Println(err)
	// Output:
	// 32 bytes
	//  0: LIN_DMA{Src:0x7f1234567000 Dst:0x100100000000 Size:4096 EB}
	// 24: MSG_SHORT{Base:1 Offset:0xa8 Value:0x80000001 MB}
	//     SOB 42 {Value:1 Add:true TE:false LongMode:false ZeroCounter:false}
	// <nil>
}

// Encoders reject values that do not fit; decoders name the offset, the
// opcode and the reason.
func ExampleFormat_Decode() {
	// Gaudi LIN_DMA destinations have 56 bits.
	_, err := packet.LinDMA{Dst: 1 << 60, Size: 8}.Append(packet.Gaudi, nil)
	fmt.Println(err, errors.Is(err, packet.ErrFieldRange))

	cb, _ := packet.Nop{}.Append(packet.Gaudi2, nil)
	cb, _ = packet.MsgLong{Addr: 0x1000, Value: 1}.Append(packet.Gaudi2, cb)
	cb = cb[:20] // cut the MSG_LONG short
	err = packet.Gaudi2.Walk(cb, func(int, packet.Packet) error { return nil })
	fmt.Println(err, errors.Is(err, packet.ErrTruncated))
	// Output:
	// packet: gaudi LIN_DMA: Dst 0x1000000000000000 does not fit in 56 bits true
	// packet: gaudi2: offset 8: MSG_LONG (0x03): truncated packet: 16-byte packet, 12 bytes left true
}

// The wait command buffer the driver builds: point monitor 3's payload at a
// queue's fence register, arm it on sync objects 16 and 17, and wait on the
// fence. The register offsets are the device's; these are made up.
func ExampleFormat_ArmMonitor() {
	f := packet.Gaudi2
	const (
		payAddrL = 0x000 // MON_PAY_ADDRL_0 - MON_PAY_ADDRL_0
		payAddrH = 0x200
		payData  = 0x400
		arm      = 0xa00
		mon      = 3
	)
	fence := uint64(0x1000_0fff_4300) // the queue's FENCE2 register
	b := packet.NewBuilder(f, nil)
	b.MsgShort(f.MonitorWrite(payAddrL+4*mon, uint32(fence)))
	b.MsgShort(f.MonitorWrite(payAddrH+4*mon, uint32(fence>>32)))
	b.MsgShort(f.MonitorWrite(payData+4*mon, 1))
	p, err := f.ArmMonitor(arm+4*mon, 16, 0x3, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	b.MsgShort(p)
	b.Fence(f.FenceWait())
	_ = f.Walk(b.Bytes(), func(off int, p packet.Packet) error {
		fmt.Printf("%2d: %v\n", off, p)
		return nil
	})
	fmt.Printf("%+v\n", p.MonArm())
	// Output:
	//  0: MSG_SHORT{Base:0 Offset:0xc Value:0xfff4300}
	//  8: MSG_SHORT{Base:0 Offset:0x20c Value:0x1000}
	// 16: MSG_SHORT{Base:0 Offset:0x40c Value:0x1}
	// 24: MSG_SHORT{Base:0 Offset:0xa0c Value:0x2fc02 MB}
	// 32: FENCE{ID:2 Target:1 Dec:1 MB}
	// {Group:2 Mask:252 Equal:false Value:1}
}
