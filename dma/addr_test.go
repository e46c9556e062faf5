package dma

import "context"

// The tests were first written with raw addresses; these run a one-copy
// batch through the raw-address form (Batch.CopyAddr, MemsetAddr), which
// the typed copies share everything else with.

func copyVA(ctx context.Context, e *Engine, dst, src, n uint64) error {
	b := e.NewBatch(BatchOptions{})
	if err := b.CopyAddr(dst, src, n); err != nil {
		return err
	}
	return b.run(ctx)
}

func memsetVA(ctx context.Context, e *Engine, dst, pattern, n uint64) error {
	b := e.NewBatch(BatchOptions{})
	if err := b.MemsetAddr(dst, pattern, n); err != nil {
		return err
	}
	return b.run(ctx)
}

func startCopyVA(e *Engine, dst, src, n uint64) (*Transfer, error) {
	b := e.NewBatch(BatchOptions{})
	if err := b.CopyAddr(dst, src, n); err != nil {
		return nil, err
	}
	return b.Start(context.Background())
}
