package gaudi3

import "testing"

// TestPDMAChannelBlocks pins the CH_A block of every PDMA channel against
// the addresses read in gaudi3_blocks.h (and the die offset for D1 SPDMA0).
func TestPDMAChannelBlocks(t *testing.T) {
	want := map[int]uint64{
		0:  0x0300007FFC540000,
		1:  0x0300007FFC541000,
		5:  0x0300007FFC545000,
		6:  0x0300007FFC560000,
		11: 0x0300007FFC565000,
		12: 0x0300007FFCD40000,
		17: 0x0300007FFCD45000,
		18: 0x0300007FFCD60000,
		23: 0x0300007FFCD65000, // KDMA_CH_ID, the driver's
	}
	for ch, addr := range want {
		if got := PDMAChannelBlock(ch); got != addr {
			t.Errorf("PDMAChannelBlock(%d) = %#x, want %#x", ch, got, addr)
		}
	}
	seen := map[uint64]int{}
	for ch := 0; ch < NUM_OF_PDMA_CH; ch++ {
		a := PDMAChannelBlock(ch)
		if prev, dup := seen[a]; dup {
			t.Errorf("channels %d and %d share block %#x", prev, ch, a)
		}
		seen[a] = ch
		for _, off := range []uint64{0, PDMA_CH_A_PQM_CH_MSQ_PI, PDMA_CH_A_BLOCK_SIZE - 4} {
			got, ok := PDMAChannelOfBlock(a + off)
			if !ok || got != ch {
				t.Errorf("PDMAChannelOfBlock(%#x) = %d, %v; want %d", a+off, got, ok, ch)
			}
		}
		if die, want := PDMAChannelDie(ch), ch/12; die != want {
			t.Errorf("PDMAChannelDie(%d) = %d, want %d", ch, die, want)
		}
		if ch < NUM_OF_PDMA_CH_PER_DIE {
			if d1 := PDMAChannelBlock(ch + NUM_OF_PDMA_CH_PER_DIE); d1 != a+PDMA_DIE_OFFSET {
				t.Errorf("channel %d's die-1 twin at %#x, want %#x", ch, d1, a+PDMA_DIE_OFFSET)
			}
		}
	}
	for _, a := range []uint64{D0_SPDMA0_CH0_A_PQM_CH_BASE - 4, D0_SPDMA0_CH0_A_PQM_CH_BASE + PDMA_CH_B_OFFSET, D0_SPDMA0_CH0_A_PQM_CH_BASE + PDMA_CMN_B_OFFSET} {
		if ch, ok := PDMAChannelOfBlock(a); ok {
			t.Errorf("PDMAChannelOfBlock(%#x) = %d, want no channel", a, ch)
		}
	}
}

// TestPQMRegisters checks the register offsets against the header's
// order and the block: aligned, distinct, below the DMA context.
func TestPQMRegisters(t *testing.T) {
	regs := []uint64{
		PDMA_CH_A_PQM_CH_PI, PDMA_CH_A_PQM_CH_CI, PDMA_CH_A_PQM_CH_CP_PRED,
		PDMA_CH_A_PQM_CH_DESC_SUBMIT_FIFO_CFG, PDMA_CH_A_PQM_CH_DESC_PTR_RLS_CFG,
		PDMA_CH_A_PQM_CH_DESC_PTR_RLS_MSG_ADDR_L, PDMA_CH_A_PQM_CH_DESC_PTR_RLS_MSG_ADDR_H,
		PDMA_CH_A_PQM_CH_DESC_PTR_RLS_MSG_FREQ, PDMA_CH_A_PQM_CH_DESC_PTR_RLS_MSG_PAYLOAD,
		PDMA_CH_A_PQM_CH_FENCE_INC_0, PDMA_CH_A_PQM_CH_FENCE_INC_0 + 12,
		PDMA_CH_A_PQM_CH_FENCE_CNT_0, PDMA_CH_A_PQM_CH_FENCE_CNT_0 + 12,
		PDMA_CH_A_PQM_CH_MSQ_BASE_H, PDMA_CH_A_PQM_CH_MSQ_BASE_L, PDMA_CH_A_PQM_CH_MSQ_SIZE,
		PDMA_CH_A_PQM_CH_MSQ_PI, PDMA_CH_A_PQM_CH_MSQ_CI, PDMA_CH_A_PQM_CH_DESC_SUBMIT_PUSH_REG2,
		PDMA_CH_A_PQM_CH_DESC_SUBMIT_PUSH_REG1, PDMA_CH_A_PQM_CH_DESC_SUBMIT_PUSH_REG0,
		PDMA_CH_A_PQM_CH_CQ_RECONFIG,
	}
	for i, r := range regs {
		if r%4 != 0 || r >= PDMA_CH_A_PQM_CH_REGS_END || PDMA_CH_A_PQM_CH_REGS_END > PDMA_CH_A_CTX_OFFSET {
			t.Errorf("register %#x misplaced", r)
		}
		if i > 0 && r <= regs[i-1] {
			t.Errorf("register %#x not after %#x", r, regs[i-1])
		}
	}
	if PDMA_CH_A_PQM_CH_CTRL_0+4*PDMA_CH_A_PQM_CH_ARRAY_LEN != PDMA_CH_A_PQM_CH_PI {
		t.Errorf("CTRL array does not end at PI")
	}
	if PDMA_CH_A_PQM_CH_MSQ_SIZE_VAL_MASK+1 != PQM_MSQ_MAX_SIZE {
		t.Errorf("MSQ_SIZE mask %#x does not match the 1 GiB ring", PDMA_CH_A_PQM_CH_MSQ_SIZE_VAL_MASK)
	}
	if SOBOffset(8191) != 0x7FFC || SOB_OBJ_INC_BY_ONE != 0x80000001 {
		t.Errorf("sync object layout: SOBOffset(8191) = %#x, INC|1 = %#x", SOBOffset(8191), SOB_OBJ_INC_BY_ONE)
	}
}

// TestECMPLTNQRegisters checks the completion queue's registers against
// the register struct's layout: after the DMA context (0xA8 bytes at
// PDMA_CH_A_CTX_OFFSET, then 22 words of padding), nine consecutive
// words, then 663 words of padding up to the SPECIAL block at 0xE80 (the
// CH_A_SPECIAL offset gaudi3_blocks.h gives independently).
func TestECMPLTNQRegisters(t *testing.T) {
	const ctxBytes, padBefore, padAfter, special = 0xA8, 22 * 4, 663 * 4, 0xE80
	regs := []uint64{
		PDMA_CH_A_ECMPLTN_Q_CH_CFG, PDMA_CH_A_ECMPLTN_Q_BASE_LO, PDMA_CH_A_ECMPLTN_Q_BASE_HI,
		PDMA_CH_A_ECMPLTN_Q_BASE_SIZE, PDMA_CH_A_ECMPLTN_Q_BASE_FREQ, PDMA_CH_A_ECMPLTN_Q_BASE_PI,
		PDMA_CH_A_ECMPLTN_Q_LBW_ADDR_L, PDMA_CH_A_ECMPLTN_Q_LBW_ADDR_H, PDMA_CH_A_ECMPLTN_Q_LBW_PAYLD,
	}
	if want := uint64(PDMA_CH_A_CTX_OFFSET + ctxBytes + padBefore); regs[0] != want {
		t.Errorf("ECMPLTN_Q_CH_CFG at %#x, want %#x", regs[0], want)
	}
	for i, r := range regs {
		if r != regs[0]+4*uint64(i) {
			t.Errorf("register %d at %#x, want %#x", i, r, regs[0]+4*uint64(i))
		}
	}
	if PDMA_CH_A_ECMPLTN_Q_REGS_END+padAfter != special || special >= PDMA_CH_A_BLOCK_SIZE {
		t.Errorf("ECMPLTN_Q registers end at %#x: %#x of padding does not reach SPECIAL at %#x", PDMA_CH_A_ECMPLTN_Q_REGS_END, padAfter, special)
	}
	if f := PDMA_CH_A_ECMPLTN_Q_CH_CFG_ENABLE | PDMA_CH_A_ECMPLTN_Q_CH_CFG_COMPLTN_MODE | PDMA_CH_A_ECMPLTN_Q_CH_CFG_LBW_WR_EN; f != 0x7 {
		t.Errorf("CH_CFG fields %#x, want bits 0-2", f)
	}
}

func TestSyncMngrUserBlocks(t *testing.T) {
	// gaudi3P.h: NUM_OF_EXPOSED_SM_BLOCKS = (2*4 - 1)*3 + 1.
	n := 0
	for hd := range NUM_OF_HDCORES + 1 {
		for _, addr := range []uint64{SyncMngrObjsBlock(hd, 0), SyncMngrObjsBlock(hd, 1), SyncMngrGlblBlock(hd)} {
			if _, ok := SyncMngrUserBlock(addr); ok {
				n++
			}
		}
	}
	if n != 22 {
		t.Errorf("%d user-mappable sync manager blocks, want 22", n)
	}
	if SyncMngrObjsBlock(1, 0) != 0x0300007FFE780000 || SyncMngrGlblBlock(0) != HD0_SYNC_MNGR_GLBL_BASE {
		t.Errorf("HD1 OBJS %#x, HD0 GLBL %#x", SyncMngrObjsBlock(1, 0), SyncMngrGlblBlock(0))
	}
	if _, ok := SyncMngrUserBlock(SyncMngrObjsBlock(0, 0)); ok {
		t.Error("HDCORE 0's group 0 is user-mappable")
	}
	if size, ok := SyncMngrUserBlock(SyncMngrObjsBlock(0, 1)); !ok || size != 0xF000 {
		t.Errorf("HDCORE 0's group 1: %#x, %v", size, ok)
	}
	if SOB_OBJS_MON_STATUS_0+4*(HDCORE_NUM_OF_MON_PER_GRP-1) != 0xDFFC {
		t.Error("MON_STATUS_0_1023 is not at 0xDFFC")
	}
}
