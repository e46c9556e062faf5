package ib_test

import (
	"errors"
	"fmt"

	"github.com/gaudi-go/gaudi/ib"
)

// Register a host buffer with the first RDMA NIC, and find out whether the
// NIC could take Gaudi memory as a dma-buf.
func Example() {
	devs, err := ib.Devices()
	if err != nil || len(devs) == 0 {
		fmt.Println("no RDMA devices")
		return
	}
	ctx, err := ib.Open(devs[0])
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	pd, err := ctx.AllocPD()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pd.Close()
	ok, err := ctx.ProbeDMABuf()
	fmt.Println("dma-buf registration:", ok, err)
	_, err = pd.RegDMABufMR(-1, 0, 4096, 0, ib.AccessLocalWrite)
	if errors.Is(err, ib.ErrDMABufNotSupported) {
		fmt.Println("this NIC cannot register device memory")
	}
}
