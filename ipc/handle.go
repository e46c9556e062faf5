package ipc

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
)

// HandleVersion is the version of the handle encoding that MarshalBinary
// writes and the only one UnmarshalBinary accepts. Version 2 added the
// exporter's start time; a version 1 handle is refused (ErrBadVersion), as
// a handle only lives as long as its exporter.
const HandleVersion = 2

// MaxPCIAddressLen is the longest PCI address a handle carries.
const MaxPCIAddressLen = 64

// handleMagic starts every encoded handle.
var handleMagic = [4]byte{'G', 'I', 'P', 'H'}

// Layout of an encoded handle (little endian):
//
//	0   magic "GIPH"
//	4   version (1 byte)
//	5   PCI address length n (1 byte, <= MaxPCIAddressLen)
//	6   total length (2 bytes) = handleFixedLen + n
//	8   buffer id (16)
//	24  boot id (16)
//	40  pid namespace inode (8)
//	48  pid (4)
//	52  module id (4)
//	56  device VA (8)
//	64  size (8)
//	72  offset (8)
//	80  exporter start time (8)
//	88  PCI address (n bytes)
const handleFixedLen = 88

// Sentinel errors of the handle decoder. Every decoding error matches
// ErrInvalidHandle and exactly one of the others with errors.Is.
var (
	ErrInvalidHandle = errors.New("ipc: invalid handle")
	ErrTruncated     = errors.New("ipc: handle truncated")
	ErrBadMagic      = errors.New("ipc: not a handle (bad magic)")
	ErrBadVersion    = errors.New("ipc: unsupported handle version")
	ErrMalformed     = errors.New("ipc: malformed handle")
)

// HandleError is a decoding error. It matches ErrInvalidHandle and Kind.
type HandleError struct {
	Kind   error // ErrTruncated, ErrBadMagic, ErrBadVersion or ErrMalformed
	Detail string
}

func (e *HandleError) Error() string { return e.Kind.Error() + ": " + e.Detail }

// Is reports whether target is ErrInvalidHandle or e.Kind.
func (e *HandleError) Is(target error) bool { return target == ErrInvalidHandle || target == e.Kind }

func handleErr(kind error, format string, args ...any) error {
	return &HandleError{Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

// Handle names an exported range of device memory in a way that means the
// same thing in every process: it never carries a file descriptor number
// (which means nothing outside the exporter). A process turns it into a
// descriptor of its own with Import, asking the exporter, which checks the
// importer's credentials before it passes the descriptor (SCM_RIGHTS).
type Handle struct {
	// Device identity of the exporting device.
	PCIAddress string
	ModuleID   uint32

	// The exported range.
	DeviceVA uint64
	Size     uint64
	Offset   uint64 // offset of the range in its device buffer

	// Who exported it.
	PID          uint32   // exporter pid, in its pid namespace
	PIDNamespace uint64   // inode of the exporter's /proc/self/ns/pid
	BootID       [16]byte // /proc/sys/kernel/random/boot_id of the exporter's machine
	// StartTime is when the exporter process started, in clock ticks
	// after boot (field 22 of /proc/PID/stat): with PID it names one
	// process of the boot, so a process that got the exporter's pid after
	// it exited is not taken for it.
	StartTime uint64

	// BufferID is random and unique per export, so that a device VA that
	// was freed and reused is never mistaken for the old buffer.
	BufferID [16]byte
}

// MarshalBinary encodes h (version HandleVersion).
func (h Handle) MarshalBinary() ([]byte, error) {
	if len(h.PCIAddress) > MaxPCIAddressLen {
		return nil, fmt.Errorf("ipc: PCI address %q longer than %d bytes", h.PCIAddress, MaxPCIAddressLen)
	}
	n := len(h.PCIAddress)
	b := make([]byte, handleFixedLen+n)
	copy(b[0:4], handleMagic[:])
	b[4] = HandleVersion
	b[5] = byte(n)
	binary.LittleEndian.PutUint16(b[6:], uint16(handleFixedLen+n))
	copy(b[8:24], h.BufferID[:])
	copy(b[24:40], h.BootID[:])
	binary.LittleEndian.PutUint64(b[40:], h.PIDNamespace)
	binary.LittleEndian.PutUint32(b[48:], h.PID)
	binary.LittleEndian.PutUint32(b[52:], h.ModuleID)
	binary.LittleEndian.PutUint64(b[56:], h.DeviceVA)
	binary.LittleEndian.PutUint64(b[64:], h.Size)
	binary.LittleEndian.PutUint64(b[72:], h.Offset)
	binary.LittleEndian.PutUint64(b[80:], h.StartTime)
	copy(b[88:], h.PCIAddress)
	return b, nil
}

// UnmarshalBinary decodes b into h. It accepts exactly one encoding of
// version HandleVersion, of exactly the length the encoding states; the
// errors match ErrInvalidHandle and one of ErrTruncated, ErrBadMagic,
// ErrBadVersion and ErrMalformed.
func (h *Handle) UnmarshalBinary(b []byte) error {
	if len(b) < 8 {
		return handleErr(ErrTruncated, "%d bytes, the header alone is 8", len(b))
	}
	if !bytes.Equal(b[0:4], handleMagic[:]) {
		return handleErr(ErrBadMagic, "starts with %x", b[0:4])
	}
	if b[4] != HandleVersion {
		return handleErr(ErrBadVersion, "version %d, want %d", b[4], HandleVersion)
	}
	n := int(b[5])
	if n > MaxPCIAddressLen {
		return handleErr(ErrMalformed, "PCI address length %d > %d", n, MaxPCIAddressLen)
	}
	total := int(binary.LittleEndian.Uint16(b[6:]))
	if total != handleFixedLen+n {
		return handleErr(ErrMalformed, "stated length %d, want %d", total, handleFixedLen+n)
	}
	if len(b) < total {
		return handleErr(ErrTruncated, "%d bytes, want %d", len(b), total)
	}
	if len(b) > total {
		return handleErr(ErrMalformed, "%d trailing bytes", len(b)-total)
	}
	pci := b[88:total]
	for _, c := range pci {
		if c < 0x21 || c > 0x7e {
			return handleErr(ErrMalformed, "PCI address byte %#x is not printable ASCII", c)
		}
	}
	size := binary.LittleEndian.Uint64(b[64:])
	if size == 0 {
		return handleErr(ErrMalformed, "size 0")
	}
	var out Handle
	copy(out.BufferID[:], b[8:24])
	copy(out.BootID[:], b[24:40])
	out.PIDNamespace = binary.LittleEndian.Uint64(b[40:])
	out.PID = binary.LittleEndian.Uint32(b[48:])
	out.ModuleID = binary.LittleEndian.Uint32(b[52:])
	out.DeviceVA = binary.LittleEndian.Uint64(b[56:])
	out.Size = size
	out.Offset = binary.LittleEndian.Uint64(b[72:])
	out.StartTime = binary.LittleEndian.Uint64(b[80:])
	out.PCIAddress = string(pci)
	if out.BufferID == ([16]byte{}) {
		return handleErr(ErrMalformed, "zero buffer id")
	}
	*h = out
	return nil
}

// String returns the hexadecimal encoding of h (see ParseHandle), or "" if h
// cannot be encoded.
func (h Handle) String() string {
	b, err := h.MarshalBinary()
	if err != nil {
		return ""
	}
	return hex.EncodeToString(b)
}

// ParseHandle decodes the hexadecimal form that Handle.String returns.
func ParseHandle(s string) (Handle, error) {
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return Handle{}, handleErr(ErrMalformed, "not hexadecimal: %v", err)
	}
	var h Handle
	if err := h.UnmarshalBinary(b); err != nil {
		return Handle{}, err
	}
	return h, nil
}

// newBufferID returns 128 random bits.
func newBufferID() ([16]byte, error) {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return id, err
	}
	return id, nil
}

var (
	hostOnce  sync.Once
	hostBoot  [16]byte
	hostErr   error
	pidNSOnce sync.Once
	pidNS     uint64
	pidNSErr  error
)

// BootID returns this machine's boot id, from /proc/sys/kernel/random/boot_id.
func BootID() ([16]byte, error) {
	hostOnce.Do(func() {
		b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
		if err != nil {
			hostErr = fmt.Errorf("ipc: boot id: %w", err)
			return
		}
		s := strings.ReplaceAll(strings.TrimSpace(string(b)), "-", "")
		raw, err := hex.DecodeString(s)
		if err != nil || len(raw) != 16 {
			hostErr = fmt.Errorf("ipc: boot id %q is not a UUID", strings.TrimSpace(string(b)))
			return
		}
		copy(hostBoot[:], raw)
	})
	return hostBoot, hostErr
}

// PIDNamespace returns the inode of /proc/self/ns/pid.
func PIDNamespace() (uint64, error) {
	pidNSOnce.Do(func() {
		fi, err := os.Stat("/proc/self/ns/pid")
		if err != nil {
			pidNSErr = fmt.Errorf("ipc: pid namespace: %w", err)
			return
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			pidNSErr = errors.New("ipc: pid namespace: no inode")
			return
		}
		pidNS = st.Ino
	})
	return pidNS, pidNSErr
}
