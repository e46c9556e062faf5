package ipc

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
)

// childImportPidfd imports $HANDLE with $REF through pidfd_getfd and prints
// OK or the error class.
func childImportPidfd() int {
	h, err := ParseHandle(os.Getenv("HANDLE"))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	ref, err := ParsePidfdRef(os.Getenv("REF"))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	return reportImport(ImportPidfd(h, ref))
}

// exporterChild starts a child exporter on addr and returns its handle
// and pidfd reference.
func exporterChild(t *testing.T, addr string) (*child, Handle, PidfdRef) {
	t.Helper()
	c := startChild(t, selfExe(t), []string{childEnv + "=export", "ADDR=" + addr}, nil)
	hs, ok := strings.CutPrefix(c.line(t), "HANDLE ")
	if !ok {
		t.Fatal("child printed no handle")
	}
	h, err := ParseHandle(hs)
	if err != nil {
		t.Fatal(err)
	}
	rs, ok := strings.CutPrefix(c.line(t), "REF ")
	if !ok {
		t.Fatal("child printed no pidfd reference")
	}
	ref, err := ParsePidfdRef(rs)
	if err != nil {
		t.Fatal(err)
	}
	return c, h, ref
}

// TestImportPidfd takes a child exporter's descriptor with pidfd_getfd: a
// parent may ptrace its child.
func TestImportPidfd(t *testing.T) {
	c, h, ref := exporterChild(t, abstractAddr(t))
	im, err := ImportPidfd(h, ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkPattern(im); err != nil {
		t.Fatal(err)
	}
	if im.Size != h.Size || im.Offset != h.Offset {
		t.Errorf("imported size %d offset %d", im.Size, im.Offset)
	}
	im.Close()

	// A reference whose file identity does not match is refused: it
	// stands for a reused descriptor number.
	bad := ref
	bad.Ino++
	if _, err := ImportPidfd(h, bad); !errors.Is(err, ErrRevoked) {
		t.Errorf("mismatched inode: %v, want ErrRevoked", err)
	}
	badFD := ref
	badFD.FD = 1000
	if _, err := ImportPidfd(h, badFD); !errors.Is(err, ErrRevoked) {
		t.Errorf("descriptor the exporter does not hold: %v, want ErrRevoked", err)
	}
	other := h
	other.BootID[0] ^= 0xff
	if _, err := ImportPidfd(other, ref); !errors.Is(err, ErrOtherHost) {
		t.Errorf("other boot: %v, want ErrOtherHost", err)
	}
	other = h
	other.PIDNamespace++
	if _, err := ImportPidfd(other, ref); !errors.Is(err, ErrOtherNamespace) {
		t.Errorf("other pid namespace: %v, want ErrOtherNamespace", err)
	}
	// Once the exporter exited, the import says so.
	c.stdin.Close()
	c.cmd.Wait()
	if _, err := ImportPidfd(h, ref); !errors.Is(err, ErrExporterGone) {
		t.Errorf("exporter gone: %v, want ErrExporterGone", err)
	}
}

// TestImportPidfdWithoutPtraceRights: a process of another uid may not take
// descriptors from a root exporter.
func TestImportPidfdWithoutPtraceRights(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to start a child as another uid")
	}
	_, h, ref := exporterChild(t, abstractAddr(t))
	bin := copyForNobody(t)
	c := startChild(t, bin, []string{childEnv + "=pidfd", "HANDLE=" + h.String(), "REF=" + ref.String()},
		&syscall.Credential{Uid: 65534, Gid: 65534})
	if l := c.line(t); !strings.HasPrefix(l, "NOTALLOWED") {
		t.Fatalf("importer of another uid: %s", l)
	}
}

func TestParsePidfdRef(t *testing.T) {
	r := PidfdRef{FD: 12, Dev: 34, Ino: 56}
	got, err := ParsePidfdRef(r.String())
	if err != nil || got != r {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "1:2", "a:2:3", "-1:2:3", "1:2:3:4"} {
		if _, err := ParsePidfdRef(bad); err == nil {
			t.Errorf("ParsePidfdRef(%q) accepted", bad)
		}
	}
}
