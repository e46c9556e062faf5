package gohlml

import "encoding/binary"

// ECCMode returns whether HBM ECC is on, as current and pending (the
// same): INFO MODULE_PARAMS hbm_ecc_enable of the out-of-tree driver.
// The kernel's driver does not serve the op: ErrNotSupported.
func (d Device) ECCMode() (uint, uint, error) {
	dev, err := d.ctl("ecc mode")
	if err != nil {
		return 0, 0, err
	}
	p, err := dev.ModuleParams()
	if err != nil {
		return 0, 0, driverError("module params", err)
	}
	if p.HBMECCEnable {
		return 1, 1, nil
	}
	return 0, 0, nil
}

// replacedRows counts the replaced HBM rows of one cause in INFO
// DRAM_REPLACED_ROWS, the firmware's struct
// cpucp_hbm_row_replaced_rows_info (include/linux/habanalabs/cpucp_if.h):
// a little-endian u16 count, 6 bytes of padding, then 8-byte rows whose
// byte 6 is the cause (enum cpucp_hbm_row_replace_cause).
func (d Device) replacedRows(cause byte) (uint, error) {
	dev, err := d.ctl("replaced rows")
	if err != nil {
		return 0, err
	}
	b, err := dev.DRAMReplacedRows()
	if err != nil {
		return 0, driverError("replaced rows", err)
	}
	return countReplacedRows(b, cause), nil
}

// countReplacedRows counts the rows of cause in a
// cpucp_hbm_row_replaced_rows_info; a count beyond the rows the buffer
// holds is cut to them.
func countReplacedRows(b []byte, cause byte) uint {
	const header, rowSize = 8, 8
	if len(b) < header {
		return 0
	}
	n := int(binary.LittleEndian.Uint16(b))
	var count uint
	for i := 0; i < n && header+(i+1)*rowSize <= len(b); i++ {
		if b[header+i*rowSize+6] == cause {
			count++
		}
	}
	return count
}

// ReplacedRowDoubleBitECC returns how many HBM rows were replaced for a
// double-bit ECC error (INFO DRAM_REPLACED_ROWS).
func (d Device) ReplacedRowDoubleBitECC() (uint, error) { return d.replacedRows(replaceCauseDoubleECC) }

// ReplacedRowSingleBitECC returns how many HBM rows were replaced for
// repeated single-bit ECC errors (INFO DRAM_REPLACED_ROWS).
func (d Device) ReplacedRowSingleBitECC() (uint, error) {
	return d.replacedRows(replaceCauseMultiSingleECC)
}

// IsReplacedRowsPendingStatus returns 1 when HBM rows wait for a
// replacement at the next power cycle, else 0 (INFO DRAM_PENDING_ROWS).
func (d Device) IsReplacedRowsPendingStatus() (int, error) {
	dev, err := d.ctl("pending rows")
	if err != nil {
		return 0, err
	}
	n, err := dev.DRAMPendingRows()
	if err != nil {
		return 0, driverError("pending rows", err)
	}
	if n > 0 {
		return 1, nil
	}
	return 0, nil
}

// The causes of enum cpucp_hbm_row_replace_cause.
const (
	replaceCauseDoubleECC      = 0 // REPLACE_CAUSE_DOUBLE_ECC_ERR
	replaceCauseMultiSingleECC = 1 // REPLACE_CAUSE_MULTI_SINGLE_ECC_ERR
)
