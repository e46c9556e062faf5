package sim

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDRAMPages(t *testing.T) {
	dir := t.TempDir()
	old := shmemTHPPath
	t.Cleanup(func() { shmemTHPPath = old })
	for content, want := range map[string]string{
		"always within_size advise [never] deny force\n": "4 KiB pages (shmem_enabled never)",
		"always within_size [advise] never deny force\n": "2 MiB transparent huge pages (shmem_enabled advise)",
		"[always] within_size advise never deny force\n": "2 MiB transparent huge pages (shmem_enabled always)",
		"always [within_size] advise never deny force\n": "2 MiB transparent huge pages (shmem_enabled within_size)",
		"always within_size advise never [deny] force\n": "4 KiB pages (shmem_enabled deny)",
		"garbage\n": "4 KiB pages (shmem_enabled unreadable)",
	} {
		shmemTHPPath = filepath.Join(dir, "shmem_enabled")
		if err := os.WriteFile(shmemTHPPath, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := DRAMPages(); got != want {
			t.Errorf("%q: %q, want %q", content, got, want)
		}
	}
	shmemTHPPath = filepath.Join(dir, "missing")
	if got := DRAMPages(); got != "4 KiB pages (no shmem transparent huge pages on this host)" {
		t.Errorf("no file: %q", got)
	}
}

// BenchmarkDRAMFirstTouch64MiB writes 64 MiB into fresh simulated DRAM:
// the first touch of its pages, which is what adviseDRAM makes cheaper
// where the host allows shmem huge pages (see DRAMPages).
func BenchmarkDRAMFirstTouch64MiB(b *testing.B) {
	src := make([]byte, 64<<20)
	for i := range src {
		src[i] = byte(i)
	}
	b.Logf("simulated DRAM: %s", DRAMPages())
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		m := newSparseMem(1 << 30)
		if err := m.WriteAt(src, 0); err != nil {
			b.Fatal(err)
		}
		m.close()
	}
}
