package sim

import (
	"math"
	"testing"

	"github.com/gaudi-go/gaudi/uapi/hl"
	"golang.org/x/sys/unix"
)

// controlCS issues a control CS of type flag with the id array ids and
// command cmd, and checks the driver's answer format: no sequence number
// and the status carrying the errno.
func controlCS(t *testing.T, f *File, flag uint32, ids []uint32, cmd uint32) error {
	t.Helper()
	var a hl.CSArgs
	a.In().CSFlags = flag
	var ptr uint64
	if len(ids) > 0 {
		ptr = addrFor(&ids[0])
	}
	switch flag {
	case hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND:
		setEngineCores(a.In(), ptr)
		a.In().SetNumEngineCores(uint32(len(ids)))
		a.In().SetCoreCommand(cmd)
	case hl.HL_CS_FLAGS_ENGINES_COMMAND:
		setEngines(a.In(), ptr)
		a.In().SetNumEngines(uint32(len(ids)))
		a.In().SetEngineCommand(cmd)
	}
	err := csSubmit(f, &a)
	if a.Out().Seq() != math.MaxUint64 {
		t.Errorf("flags %#x: seq %d, want ULONG_MAX", flag, a.Out().Seq())
	}
	if want := errnoStatus(err); a.Out().Status != want {
		t.Errorf("flags %#x: status %#x, want %#x", flag, a.Out().Status, want)
	}
	return err
}

func TestEngineControlRules(t *testing.T) {
	const (
		cores   = hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND
		engines = hl.HL_CS_FLAGS_ENGINES_COMMAND
		halt    = uint32(hl.HL_ENGINE_CORE_HALT)
		run     = uint32(hl.HL_ENGINE_CORE_RUN)
		stall   = uint32(hl.HL_ENGINE_STALL)
		resume  = uint32(hl.HL_ENGINE_RESUME)
	)
	many := func(n int) []uint32 { return make([]uint32, n) }
	cases := []struct {
		name string
		flag uint32
		ids  []uint32
		cmd  uint32
		want error
	}{
		{"cores none", cores, nil, halt, unix.EINVAL},
		{"cores 70", cores, many(70), halt, unix.EINVAL},
		{"cores 69", cores, many(69), run, nil},
		{"cores stall command", cores, []uint32{1}, stall, unix.EINVAL},
		{"cores unknown id", cores, []uint32{200}, halt, nil},
		{"engines command 0", engines, []uint32{0}, 0, unix.EINVAL},
		{"engines command 5", engines, []uint32{0}, 5, unix.EINVAL},
		{"engines none", engines, nil, stall, unix.EINVAL},
		{"engines all ids", engines, many(int(hl.GAUDI2_ENGINE_ID_SIZE)), stall, nil},
		{"engines too many", engines, many(int(hl.GAUDI2_ENGINE_ID_SIZE) + 1), stall, unix.EINVAL},
		{"engines core halt 70", engines, many(70), halt, unix.EINVAL},
		{"stall decoder", engines, []uint32{uint32(hl.GAUDI2_DCORE0_ENGINE_ID_DEC_0)}, stall, unix.EINVAL},
		{"stall TPC6", engines, []uint32{uint32(hl.GAUDI2_DCORE0_ENGINE_ID_TPC_6)}, stall, unix.EINVAL},
		{"stall PDMA", engines, []uint32{uint32(hl.GAUDI2_ENGINE_ID_PDMA_0)}, stall, unix.EINVAL},
		{"resume MME", engines, []uint32{uint32(hl.GAUDI2_DCORE3_ENGINE_ID_MME)}, resume, nil},
	}
	_, _, f := openSim(t, Gaudi2)
	for _, c := range cases {
		if err := controlCS(t, f, c.flag, c.ids, c.cmd); err != c.want {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// A bad id array pointer.
	var a hl.CSArgs
	a.In().CSFlags = cores
	setEngineCores(a.In(), 8)
	a.In().SetNumEngineCores(2)
	a.In().SetCoreCommand(halt)
	if err := csSubmit(f, &a); err != unix.EFAULT {
		t.Errorf("bad pointer: %v", err)
	}
	// Two command types at once.
	a = hl.CSArgs{}
	a.In().CSFlags = cores | hl.HL_CS_FLAGS_FLUSH_PCI_HBW_WRITES
	if err := csSubmit(f, &a); err != unix.EINVAL {
		t.Errorf("two types: %v", err)
	}
}

func TestEngineControlState(t *testing.T) {
	_, d, f := openCompute(t, Gaudi2)
	tpc0 := uint32(hl.GAUDI2_DCORE1_ENGINE_ID_TPC_0)
	edma := uint32(hl.GAUDI2_DCORE0_ENGINE_ID_EDMA_1)
	if err := controlCS(t, f, hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND, []uint32{3, 40}, uint32(hl.HL_ENGINE_CORE_HALT)); err != nil {
		t.Fatal(err)
	}
	// ENGINES_COMMAND with a core command acts on cores too.
	if err := controlCS(t, f, hl.HL_CS_FLAGS_ENGINES_COMMAND, []uint32{68}, uint32(hl.HL_ENGINE_CORE_HALT)); err != nil {
		t.Fatal(err)
	}
	if err := controlCS(t, f, hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND, []uint32{40}, uint32(hl.HL_ENGINE_CORE_RUN)); err != nil {
		t.Fatal(err)
	}
	// Stall applies in order up to the first invalid id.
	err := controlCS(t, f, hl.HL_CS_FLAGS_ENGINES_COMMAND, []uint32{tpc0, edma, uint32(hl.GAUDI2_ENGINE_ID_NIC0_0), 2}, uint32(hl.HL_ENGINE_STALL))
	if err != unix.EINVAL {
		t.Fatalf("stall with a NIC: %v", err)
	}
	check := func(when string, halted3, halted40, halted68, tpc, edmaStalled, mme bool) {
		t.Helper()
		got := []bool{d.EngineCoreHalted(3), d.EngineCoreHalted(40), d.EngineCoreHalted(68), d.EngineStalled(tpc0), d.EngineStalled(edma), d.EngineStalled(2)}
		want := []bool{halted3, halted40, halted68, tpc, edmaStalled, mme}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: state %v, want %v", when, got, want)
				return
			}
		}
	}
	check("after commands", true, false, true, true, true, false)
	if err := controlCS(t, f, hl.HL_CS_FLAGS_ENGINES_COMMAND, []uint32{tpc0}, uint32(hl.HL_ENGINE_RESUME)); err != nil {
		t.Fatal(err)
	}
	check("after resume", true, false, true, false, true, false)
	// The end of the context resets Gaudi2's engines.
	f.Close()
	check("after close", false, false, false, false, false, false)
	f2, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	if err := controlCS(t, f2, hl.HL_CS_FLAGS_ENGINES_COMMAND, []uint32{edma}, uint32(hl.HL_ENGINE_STALL)); err != nil {
		t.Fatal(err)
	}
	check("stalled again", false, false, false, false, true, false)
	d.Reset()
	check("after hard reset", false, false, false, false, false, false)
}

func TestEngineControlGaudi(t *testing.T) {
	_, d, f := openSim(t, Gaudi)
	ids := []uint32{0}
	for _, flag := range []uint32{hl.HL_CS_FLAGS_ENGINE_CORE_COMMAND, hl.HL_CS_FLAGS_ENGINES_COMMAND} {
		if err := controlCS(t, f, flag, ids, uint32(hl.HL_ENGINE_CORE_HALT)); err != unix.EPERM {
			t.Errorf("flags %#x on Gaudi: %v, want EPERM", flag, err)
		}
	}
	for range 3 {
		if err := controlCS(t, f, hl.HL_CS_FLAGS_FLUSH_PCI_HBW_WRITES, nil, 0); err != nil {
			t.Fatalf("flush: %v", err)
		}
	}
	if got := d.HBWFlushes(); got != 3 {
		t.Errorf("%d flushes counted, want 3", got)
	}
}
