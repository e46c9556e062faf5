package ipc

import (
	"fmt"
	"runtime"

	"github.com/gaudi-go/gaudi/memory"
)

// MapInto maps the imported range into the device of m
// (memory.Manager.Import): that device's DMA engines then copy to and
// from the exporter's device memory, so a device-to-device copy between
// two processes' Gaudis is a typed copy of this process:
//
//	im, _ := ipc.Import(ctx, addr, h)       // the exporter's dma-buf
//	peer, _ := im.MapInto(m)                // mapped into this device
//	im.Close()                              // the mapping keeps its own reference
//	e.CopyToDevice(ctx, local.Range(0, im.Size), peer.All())
//
// The mapping holds the driver's own reference to the buffer, so im may
// be closed as soon as MapInto returns; close the mapping (HostBuffer.Close)
// when done. It needs Intel's out-of-tree habanalabs driver: on the
// kernel's driver it fails with an error matching memory.ErrNotSupported.
func (im *Imported) MapInto(m *memory.Manager) (*memory.HostBuffer, error) {
	h, err := m.Import(int(im.File.Fd()), im.Size)
	runtime.KeepAlive(im.File)
	if err != nil {
		return nil, fmt.Errorf("ipc: map imported buffer: %w", err)
	}
	return h, nil
}
