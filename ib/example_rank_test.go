package ib

import (
	"fmt"
	"os"
)

// Rank the NICs of a Gaudi server by their PCIe distance to the Gaudi at
// 0000:1a:00.0, here on the fixture tree of testdata/sysfs-nics.txtar
// (use SysFS{} or NICsForNode on a live system).
func ExampleSysFS_NICsFor() {
	root, _ := os.MkdirTemp("", "ib-example")
	defer os.RemoveAll(root)
	archive, _ := os.ReadFile("testdata/sysfs-nics.txtar")
	if err := unpackTree(root, string(archive)); err != nil {
		fmt.Println(err)
		return
	}
	s := SysFS{Root: root}
	nics, err := s.Devices()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range s.NICsFor("0000:1a:00.0", nics) {
		fmt.Printf("%-9s %-14s %s\n", n.NIC.Name, n.Distance, n.NIC.DriverID)
	}
	// Output:
	// mlx5_0    same-switch    mlx5
	// mlx5_1    same-switch    mlx5
	// bnxt_re0  same-numa      bnxt_re
	// irdma0    same-numa      irdma
	// efa_0     other          efa
	// rxe0      other          rxe
}
