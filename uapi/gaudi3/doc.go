// Package gaudi3 holds the Gaudi3 facts of Intel's out-of-tree habanalabs
// driver and of Habana's Gaudi3 specifications that the rest of the module
// needs: engine and queue ids, PLL indices, packet opcodes of the queue
// managers, the chip's address map and counts, and the hw_ip_info values the
// driver's source fixes.
//
// # Written by hand
//
// Unlike the other uapi packages, nothing here is generated: the upstream
// kernel (what internal/cmd/genuapi reads) has no Gaudi3 support at all.
// Every declaration was written by hand from the facts of these sources,
// read, never copied; each group names its own:
//
//   - the out-of-tree driver, github.com/HabanaAI/drivers.accel.habanalabs.kernel:
//     include/uapi/drm/habanalabs_accel.h at 1646573d024143de16936b6b2b105e3e03f8e5da
//     (enum gaudi3_engine_id, enum hl_gaudi3_pll_index);
//     drivers/accel/habanalabs/gaudi3/gaudi3.c at 58be96464de01b613d29262449eb6af038b7fff6
//     (gaudi3_set_fixed_properties, gaudi3_init_pdma, GAUDI3_QUEUE_ID_*);
//     drivers/accel/habanalabs/gaudi3/gaudi3P.h at f9523baa926245a2995015ec6e98c4674bc2776f;
//     include/gaudi3/gaudi3.h at 1d459ad559c20c8a04c99ce48313119a7807e474;
//     include/common/pci_ids.h at 08bf146e4cb32979a4056fa89237e5e02fb18479;
//     drivers/accel/habanalabs/common/habanalabs_drv.c at 4058b6e1280374fab990403cd98d0a4e8358b6b1
//     (get_asic_type, set_driver_behavior_per_device);
//     drivers/accel/habanalabs/common/habanalabs_ioctl.c (hw_ip_info);
//   - Habana's MIT-licensed Gaudi3 specifications as shipped with
//     github.com/HabanaAI/Intel_Gaudi3_Software at
//     e6cef1c3d122627e08bb3dfd1ec49d7ada86f852 (specs_h9/gaudi3/gaudi3_packets.h,
//     specs_h9/gaudi3/gaudi3_pqm_packets.h) and github.com/HenryTangIntel/hlthunk-enhanced
//     at cb46f4f1640c492ba086aaca89143b9a859a7f8b (include/specs/gaudi3/).
//
// Constants keep their C spelling, as in the generated uapi packages.
// The tests pin every value against the facts and check the tables for
// gaps, duplicates and the driver's own arithmetic.
package gaudi3
