package device

import (
	"errors"
	"testing"
)

func TestOpenControlNoDevice(t *testing.T) {
	n, err := Count(AnyASIC)
	if err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		t.Skip("this host has habanalabs devices; hardware runs cover the control opens")
	}
	for name, open := range map[string]func() (*Device, error){
		"index":  func() (*Device, error) { return OpenControlIndex(0) },
		"module": func() (*Device, error) { return OpenControlModule(0) },
		"asic":   func() (*Device, error) { return OpenControlASIC(AnyASIC) },
	} {
		if d, err := open(); !errors.Is(err, ErrNoDevice) {
			if d != nil {
				d.Close()
			}
			t.Errorf("%s: %v, want ErrNoDevice", name, err)
		}
	}
	if _, err := OpenControlPCI("0000:19:00.0"); !errors.Is(err, ErrNotFound) {
		t.Errorf("pci: %v, want ErrNotFound", err)
	}
}

func TestOpenControlOfWithoutControlNode(t *testing.T) {
	if _, err := openControlOf(Node{Path: "/dev/accel/accel3"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("node without a control node: %v", err)
	}
}
