package hl

import "testing"

// TestCommandEnd: HL_COMMAND_END is upstream's (6.12 habanalabs_accel.h:
// 0x46, one past DEBUG), and HL_COMMAND_END_OOT the out-of-tree header's
// (HabanaAI/drivers.accel.habanalabs.kernel,
// include/uapi/drm/habanalabs_accel.h: 0x47, one past the NIC ioctl that
// sits before it). Issue 28 item 1.
func TestCommandEnd(t *testing.T) {
	nic := DRM_COMMAND_BASE + HL_IOCTL_NIC
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"HL_COMMAND_END", HL_COMMAND_END, 70},
		{"HL_COMMAND_END (the NIC ioctl's nr)", HL_COMMAND_END, nic},
		{"HL_COMMAND_END_OOT", HL_COMMAND_END_OOT, 71},
		{"HL_COMMAND_END_OOT (one past the NIC ioctl)", HL_COMMAND_END_OOT, nic + 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}
