package device_test

import (
	"fmt"
	"log"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/simdevice"
)

// Selecting a device: one string, the same grammar as GAUDI_DEVICE and the
// tools' -device flag. device.Open takes hardware selectors; simdevice.Open
// adds "sim" and "sim:N" for the simulator.
func ExampleParseSelector() {
	for _, s := range []string{"", "3", "0000:19:00.0", "module:2", "gaudi2", "/dev/accel/accel1", "sim"} {
		sel, err := device.ParseSelector(s)
		if err != nil {
			fmt.Printf("%q: error\n", s)
			continue
		}
		fmt.Printf("%q: %v\n", s, sel.Kind)
	}
	// Output:
	// "": first
	// "3": index
	// "0000:19:00.0": pci
	// "module:2": module
	// "gaudi2": asic
	// "/dev/accel/accel1": path
	// "sim": error
}

// Opening the first free simulated device and reading what it is.
func ExampleDevice_HWIPInfo() {
	d, err := simdevice.Open("sim")
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	hw := d.HWIPInfo()
	fmt.Println(d.ASIC(), "with", hw.DRAMSize>>30, "GiB of HBM for users")
	// Output: GAUDI2 with 95 GiB of HBM for users
}
