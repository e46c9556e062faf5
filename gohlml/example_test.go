package gohlml_test

import (
	"fmt"
	"log"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/gohlml"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
)

// The library over the in-process simulator's control node: values the
// driver gives, and ErrNotSupported for the serial number, which no sysfs
// shows here.
func ExampleInitWithDevices() {
	sys, err := sim.New(sim.Config{Devices: []sim.DeviceConfig{{ASIC: sim.Gaudi2}}})
	if err != nil {
		log.Fatal(err)
	}
	defer sys.Close()
	ctl, err := simdevice.OpenSimControl(sys.Device(0))
	if err != nil {
		log.Fatal(err)
	}
	if err := gohlml.InitWithDevices([]*device.Device{ctl}); err != nil {
		log.Fatal(err)
	}
	defer gohlml.Shutdown()

	d, err := gohlml.DeviceHandleByIndex(0)
	if err != nil {
		log.Fatal(err)
	}
	name, _ := d.Name()
	total, used, _, _ := d.MemoryInfo()
	_, err = d.SerialNumber()
	fmt.Printf("%s: %d GiB, %d used; serial: %v\n", name, total>>30, used, err)
	// Output: HL225: 95 GiB, 0 used; serial: not supported
}
