// Package sim is a software Gaudi: it behaves like the habanalabs kernel
// driver and the chip behind it, so the library, its tools and its tests run
// on machines without hardware.
//
// A System holds simulated devices (Gaudi2 by default, first-generation
// Gaudi, or Gaudi3, which always behaves as Intel's out-of-tree driver
// does: see below). Each Device opens compute and control files that implement the
// ioctl layer's File seam: the same ioctls, the same validation and the same
// errno values as the 6.12 driver, read from its source
// (drivers/accel/habanalabs). Device memory is sparse: a 96 GB device holds
// only the pages that were written.
//
// # Memory
//
// Each device's DRAM is a memfd of the device's DRAM size, mapped once at
// first use; tmpfs keeps only the pages that were written, and device
// memory accesses are plain copies into and out of that mapping.
// System.Close releases it.
//
// The MEMORY ioctl follows common/memory.c: ALLOC, FREE, MAP, UNMAP,
// MAP_BLOCK, EXPORT_DMABUF_FD and TS_ALLOC with the driver's validation,
// errno values, handle numbering, DRAM page pool and DRAM_USAGE
// accounting, and its virtual address allocator (the ASIC's host, huge-page
// and DRAM ranges, hints, FORCE_HINT, the ranges reserved from hint-less
// allocations, the command buffer pool a context reserves). Gaudi2 maps
// DRAM through its device MMU; on Gaudi, ALLOC and FREE only count and
// DRAM is addressed physically. Host memory given to MAP is not pinned or
// touched: /proc/self/maps tells whether pinning it would succeed. The
// simulator cannot see physical pages, so it maps host memory with 2 MB
// pages when the address is 2 MB aligned and the size a whole number of
// 2 MB (the driver decides from the physical layout of the pinned pages).
// The driver's context release frees every mapping and allocation of the
// context when its compute file closes, and so does the simulator. As in
// the kernel, where a mapping holds the file (vma->vm_file), a CB, block
// or timestamp mapping made with File.Mmap keeps a closed compute file
// until its Munmap: the release (hl_device_release) runs then, and a new
// open answers EBUSY until it has.
//
// # Command submission
//
// CB, CS and WAIT_CS follow common/command_buffer.c,
// common/command_submission.c and common/hw_queue.c with the ASICs'
// queue tables and parsers: command buffers share the memory manager's
// handle space and are mapped with Mmap; a CS's chunks are validated per
// queue (Gaudi's external queues run a parsed copy of a kernel CB, its
// internal queues and every Gaudi2 queue a user CB by device address),
// sequence numbers and fences are per context with the ASIC's pending-CS
// limit, and waits report COMPLETED, BUSY, TIMEDOUT, ABORTED and GONE as
// the driver does. Each queue runs its jobs in order on a goroutine of
// its own, so queues run concurrently; the engines execute LIN_DMA (copy,
// memset, Gaudi2 endian swap), MSG_LONG, MSG_SHORT, FENCE and WAIT against
// host memory, DRAM, SRAM, the sync managers (SOBs, monitors) and the
// QMAN fence counters. A page fault or an undefined opcode is recorded
// and stops the stream; a CS that outlives its timeout is recorded and
// hard-resets the device, which aborts the CSs in flight and kills the
// process holding the compute file, modelled as the file becoming dead
// (File.Killed, ErrKilled); with an eventfd registered the reset waits
// for the release watchdog (watchdog.go). DeviceConfig's
// PCIeBandwidth, when set, paces transfers between host and device.
// A LIN_DMA whose engine barrier bit is clear and that depends on an
// earlier packet of its job races with it on the chip: the simulator
// writes a fill pattern instead of the data and counts the hazard
// (barrier.go, Device.BarrierHazards). engine.go, cs.go and wait.go tell
// the details and what is not simulated.
//
// The sync stream CS types follow the driver too: signal and wait CSs with
// the queues' reserved SOBs and monitors and the SOB switch at the 15-bit
// limit (signal.go), staged submissions (staged.go), reservations of
// encapsulated signals (encaps.go), multi-CS waits (wait.go), and Gaudi2's
// user interrupts, kernel CQ and user-address waits and timestamp
// registrations, raised through the sync managers' completion queues and
// the MSI-X doorbell (interrupt.go, syncmgr.go).
//
// # What the engines model
//
// Every packet of Gaudi and Gaudi2 and every engine feature, and whether
// the simulator runs it (engine.go, cpstate.go, cmdq.go, syncmgr.go):
//
//	Packet / feature          Gaudi   Gaudi2  What the simulator does
//	LIN_DMA copy, memset      yes     yes     copies or fills through the MMU, SRAM, DRAM
//	LIN_DMA endian swap       -       yes     swaps 16/32/64-bit words (simulator's reading)
//	LIN_DMA WrComp            no      no      accepted; the DMA core's completion write is not made
//	MSG_LONG, MSG_PROT        yes     yes     32-bit write (op 1: timestamp) to memory or CFG
//	MSG_SHORT                 yes     yes     write at the stream's MSG_BASE plus offset
//	FENCE, WAIT               yes     yes     stream (and lower-CP) fence counters; WAIT's cycles not waited
//	CP_DMA                    yes     yes     runs the CB it points at, 4 levels deep
//	STOP                      yes     yes     ends the job
//	predicates (ctl 4:0)      yes     yes     a packet whose predicate is false is skipped; P0 true
//	LOAD_AND_EXE predicates   yes     yes     PMap 0 (word map); PMap 1 (bit map) on Gaudi2
//	LOAD_AND_EXE scalars/Exe  yes     yes     R0-R3 loaded; Exe runs the packet at R0 (EType 0) or R2 (1)
//	CB_LIST                   -       yes     IndexAddr selects a 16/32-byte entry; its first packet runs (chains any length)
//	NOP, ARB_POINT            yes     yes     no effect (one stream per goroutine: no arbitration)
//	REPEAT                    no      no      accepted without effect (jump pointer not followed)
//	WREG_32, WREG_BULK        no      no      accepted without effect: no engine registers
//	WREG_64_SHORT/LONG        -       no      accepted without effect
//	WRITE_ARC_STREAM          -       no      accepted without effect: no ARCs
//	LAST_READ_FROM_ARC        -       no      undefined opcode (the kernel gives no layout)
//	DMA-core descriptors      no      no      WREG32 to a DMA core's registers (strided DMA) does nothing
//	TPC, MME kernels          no      no      their QMANs run the packets above; the engines compute nothing
//	sync managers             yes     yes     SOBs, monitors, CQs (syncmgr.go)
//	QMAN fence registers      yes     yes     CP_FENCEn_RDATA_s writes add to the counters
//	undefined opcode, fault   yes     yes     recorded; the stream stops (Gaudi2 resets)
//	engine barrier hazard     yes     yes     LIN_DMA racing an earlier one writes a fill pattern
//
// The driver's parser (Gaudi's external queues, gaudi_validate_cb)
// refuses MSG_PROT, CP_DMA, STOP, WREG_BULK and LOAD_AND_EXE with Dst
// set (EPERM), as packet.Format.ValidateUser does; Gaudi2 parses nothing.
//
// # Gaudi3
//
// A Gaudi3 (gaudi3.go) has no user queue for command submission: the
// driver's only queue is the device CPU's, so every CS is refused as
// validate_queue_index refuses it (EINVAL), sync stream CSs too. User
// DMA goes through the PDMA channels' queue managers (pqm.go): MAP_BLOCK
// of a user-owned channel's CH_A block and mmap of its handle give the
// channel's registers; a goroutine per mapped channel watches MSQ_PI,
// fetches PQM packets from the ring in device-mapped host memory, runs
// them (LIN_PDMA copy and memset with their completion writes, messages,
// fences) and advances MSQ_CI; the channel's completion queue
// (ECMPLTN_Q_*) counts the LIN_PDMAs that advance it in a 64-bit counter
// in host memory and then sends its LBW message; a write of a user
// interrupt's vector to the MSI-X doorbell raises it for WAIT_CS's
// interrupt mode. The eight HDCOREs' sync managers (sm3.go, syncmgr.go)
// take the channels' messages and completion writes: sync objects set or
// incremented (15 bits, long SOBs), monitors that fire on them and write
// their payload or a completion queue (a 64-bit counter in host memory,
// then the queue's LBW write, the MSI-X doorbell in Habana's tests);
// MAP_BLOCK and mmap of the 22 sync manager blocks the driver exposes
// (both groups and the GLBL block of every HDCORE but HDCORE 0, whose
// group 1 alone is the user's) show the live registers, so a load polls a
// sync object as Habana's tests do before their completion queues exist.
// INFO answers
// as the out-of-tree driver fills it for Gaudi3 (pdma_user_owned_ch_mask,
// 32 MiB DRAM pages with user-chosen page sizes, 256 user interrupts,
// the DRAM VA range from the end of the HBM, two dies).
//
// # Driver flavours
//
// Config.Driver chooses the driver the devices behave as: the kernel's
// (linux 6.12, DriverUpstream, the default) or Intel's out-of-tree one
// (DriverOutOfTree, built with CONFIG_DRM_ACCEL, NIC ports not enabled);
// GAUDI_SIM="gaudi2:8:oot" or GAUDI_SIM_DRIVER=oot choose it from the
// environment. The out-of-tree flavour adds what that driver adds
// (oot.go, import_unsafe.go): INFO MODULE_PARAMS and
// CONFIG_DRM_ACCEL_ENABLED in every state, TIME_SYNC_PER_DIE,
// MEMORY_CONSUMPTION and the link queries (EFAULT: no NIC) on an
// operational device, the named bytes of HW_IP_INFO, DEVICE_STATUS reading
// soft_reset_stall from the caller's buffer (a non-zero value delays the
// next soft reset by 30 ms; Device.SoftResetStallRequests counts them),
// the NIC ioctl (EBUSY, EINVAL for ops it does not serve, EFAULT for the
// rest), MAP with HL_MEM_ODP refused with EOPNOTSUPP, and MEMORY
// REG_DMABUF_FD, which maps a dma-buf (a simulated device's export, from
// this process or another one) into the device's host address range so
// its engines copy to and from the exporter's memory. The upstream flavour
// answers all of these as 6.12 does: EINVAL for the unknown INFO and
// MEMORY ops, EINVAL from drm_ioctl for the NIC number.
//
// # Rules it keeps
//
//   - One compute context per device, across goroutines and processes: the
//     compute open takes a lock file that other processes see, and a second
//     open gets EBUSY. Control opens are unlimited and accept only INFO.
//   - A device state machine (operational, in reset, needs reset) with fault
//     injection for tests: Reset, FailNext.
//   - User pointers inside ioctl arguments are read directly, with faults
//     recovered (runtime/debug.SetPanicOnFault), and written with
//     process_vm_writev on the calling process, so a bad pointer gives
//     EFAULT as on the kernel instead of crashing.
//   - Argument sizes as the kernel takes them (ioctl_unsafe.go): an
//     argument shorter than the driver's struct is zero-extended and only
//     the caller's bytes are written back, by drm_ioctl's rules for the
//     DRM encoding and _hl_ioctl's for the control node and the legacy
//     'H' encoding.
//   - Mmap checks what the driver's handlers check (the handle, the whole
//     buffer's length) and refuses the flags it cannot honour: MAP_FIXED
//     (the File seam has no address) with EPERM, MAP_ANONYMOUS, MAP_HUGETLB
//     and unknown flags with EINVAL (memmgr.go).
//   - Host memory given to MAP is refused where pinning would fail,
//     device memory (VM_IO, VM_PFNMAP) included (hostpin.go). DMA into
//     host memory the caller unmapped after MAP, which the device would
//     do into the pinned orphaned pages, is survived and counted
//     (Device.HostFaults, hostfault.go), and in strict mode reported.
//   - Every INFO op of the 6.12 driver, with its validation, its errno
//     values and the split between ops served in any state and ops that
//     need an operational device (EBUSY otherwise). HW_IP_INFO and
//     SYNC_MANAGER report the driver's fixed properties of each ASIC.
//   - Errors are captured as the driver captures them: Device.RecordRazwi,
//     RecordPageFault, RecordHWError, RecordFWError, RecordEngineError,
//     RecordUndefinedOpcode and RecordCSTimeout keep the first error of each
//     kind until the next compute open, raise the notifier bit that
//     GET_EVENTS reads and signal registered eventfds.
//
// # Serving other processes
//
// Device.OpenFor and OpenControlFor open a file on behalf of another
// process, for a server that hands the device out as a node programs open
// (tools/hlsim serves it over FUSE): user pointers in ioctl arguments and
// host memory given to MEMORY MAP are that process's addresses, read and
// written with process_vm_readv and process_vm_writev by the ioctls and
// the engines alike, and host mappings are checked against its
// /proc/PID/maps. Command and timestamp buffers then live in one sparse
// memory file at their mmap offsets (File.MmapFile, MmapFileOffset),
// which the server lets the process map (served.go, engine_remote.go).
// # Strict mode
//
// Some misuse goes unnoticed on a Gaudi until data is wrong elsewhere; in
// strict mode (Config.Strict: on by default in test binaries, and wherever
// GAUDI_SIM_STRICT=1) the simulator detects it and records a Violation on
// the Device (strict.go, and strict_*.go for each detector and its
// limits):
//
//   - an address in an ioctl argument that points into the calling
//     goroutine's stack (the call fails), or whose memory no longer holds
//     the bytes of the start of the call, at its end or after the
//     simulator moved the caller's stack (sampled);
//   - DMA that reaches host memory unmapped, mapped again or replaced since
//     MAP pinned it (on the device, the data goes to the pinned pages);
//   - DMA that reaches memory unmapped (and possibly mapped again) while
//     the CS was queued or running, and any other MMU page fault;
//   - a user command buffer changed between the submission of its CS and
//     the execution or completion of its job;
//   - engine barrier hazards (barrier.go).
//
// Device.Violations, TakeViolations and ExpectViolations let tests assert
// on them; CheckStrict, System.Close and the Close of a compute file
// report the ones nobody expected, which fails the tests of this module
// (internal/simtest). The checks read /proc and hash command buffers, so
// a CS costs some microseconds more; benchmarks run without them.
//
// # Differences from the kernel
//
// The simulator runs inside the calling process; ioctls are method calls, not
// system calls, so tracers that watch syscalls (hltrace) do not see them
// unless the device is served (tools/hlsim).
//
// EXPORT_DMABUF_FD hands out a file of exactly the exported bytes, whose
// pages are the device memory of the range (the simulator maps them over
// its DRAM mapping), so the file and the device stay coherent. Where the
// host has /dev/udmabuf it is a real dma-buf made of those pages
// (ExportUdmabuf: DMA_BUF_IOCTL_SYNC works, kernel importers such as an
// RDMA NIC see the device memory); otherwise, or when udmabuf refuses the
// range, it is a file of the memfd itself (ExportMemfd: dma-buf ioctls
// such as DMA_BUF_SET_NAME answer ENOTTY, and no device can import it).
// ExportKindOf tells which. A Gaudi dma-buf cannot be mapped or read by
// the CPU (the driver's dma-buf ops have no mmap: the kernel answers
// EINVAL); a memfd export is opened write-only, so mmap fails with EACCES
// and read with EBADF, while writes still reach device memory (a dma-buf
// answers EINVAL). That gap stays in the process: a writable export must
// be a writable file of its memfd, since the write lease sees only
// writers and another process's simulator imports it by reopening the
// memfd, and no file a process can make answers EINVAL to read, write
// and mmap alike (served nodes close it, see below). A read-only one is a write-only file of an empty,
// write-sealed memfd that stands for the export (writes answer EPERM),
// which only the exporting process can import or read through the hook
// (export_witness.go). An udmabuf export
// can be mapped: the simulator cannot take that from a real dma-buf.
// TestHookReadDMABuf, a test hook, reads an export's bytes. The driver's
// dma-buf holds the compute file until it is released (export_dmabuf
// takes the file reference, hl_release_dmabuf puts it): the simulator has
// no release callback and counts an export as released once no file of
// it is open for writing in any process (a write lease on the memfd, or
// on a read-only export's witness, tells; TestExportHeldByAnotherProcess,
// TestReadOnlyExportHeldByAnotherProcess) and no descriptor or mapping
// of this process refers to it (it looks in /proc/self, never in other
// processes); an udmabuf export passed to another process does not keep
// the export alive here (a dma-buf file is no writer the lease sees).
// On a node tools/hlsim serves the client receives neither: the server
// keeps the export and hands out a file of its own node hlsim/dmabuf/N
// (ExportServed), whose RELEASE ends the export wherever its last
// descriptor was, and whose read and write answer EINVAL as the driver's
// dma-buf does; a shared mmap of it answers ENODEV where the driver
// answers EINVAL (FUSE sends no mmap request the server could refuse).
// Two exports that overlap without being the same range are both
// accepted, as export_dmabuf_from_addr does (memhash_node_export_get
// counts them; TestOverlappingExports): one memfd cannot share pages with
// another, so while the first is open the second is a view, a file of a
// write-sealed witness that stands for the device memory of its range
// (export_view.go); only the exporting process (or the hlsim server) can
// import it or read it through the hook. The driver accepts an export
// whose offset + size wraps around; the simulator answers EINVAL (a chosen
// divergence, see exportDMABuf). HW blocks mapped through MAP_BLOCK handles are plain
// zeroed memory.
//
// Where the driver asks the device's firmware (cpucp version, card name,
// clocks, PLLs, power, energy, PCIe counters, HBM rows) the simulated
// firmware answers with fixed values of an idle, healthy card; it does not
// implement the security module, so SECURED_ATTESTATION, DEV_SIGNED and
// FW_GENERIC_REQ end in EIO after the driver's own checks, as on a device
// whose firmware refuses those packets. HW_IDLE and ENGINE_STATUS report
// the engines idle even while they run submissions, in each ASIC's own
// layout (the driver's is_device_idle text); on Gaudi3 a PDMA channel
// whose ring holds unconsumed packets (MSQ_PI != MSQ_CI: running them or
// blocked on a FENCE) shows busy in ENGINE_STATUS and sets its engine id
// in HW_IDLE's busy mask (info_engines_gaudi3.go).
//
// # Device control and debug
//
// The control CS types follow the driver (cs_control.go): on Gaudi2,
// ENGINE_CORE_COMMAND and ENGINES_COMMAND halt and run the ARC cores and
// stall and resume the TPC, MME and EDMA engines, and the device keeps that
// state until its engines are reset (Device.EngineCoreHalted,
// Device.EngineStalled); the simulated queues run on regardless. Gaudi
// answers EPERM. FLUSH_PCI_HBW_WRITES succeeds on both. The DEBUG ioctl
// (debug.go) keeps the device's single debug mode, ended with the context
// that entered it, and checks and records the CoreSight configuration
// (Device.DebugOps); there is no trace hardware behind it.
//
// # Fuzzing
//
// FuzzProgramGaudi2, FuzzProgramGaudi, FuzzProgramGaudi2OOT and
// FuzzProgramGaudi3 (fuzzprog_unsafe_test.go) drive the simulator as
// syzkaller drives a kernel: an input is a program of calls (the six ioctls with fuzzed ops,
// flags, sizes, handles, queues and pointers into the fuzzer's own
// memory, its mappings or nowhere; mmap and munmap of CB, timestamp and
// block handles; reopens, resets, fault injection; host pages taken away
// under the device) whose arguments may name what earlier calls returned.
// FuzzProgramGaudi2OOT runs the out-of-tree driver, and its programs also
// call the NIC ioctl, MEMORY REG_DMABUF_FD and that driver's INFO ops.
// FuzzProgramGaudi3 (fuzzg3_unsafe_test.go) runs the Gaudi3 profile, whose
// programs also set PDMA channels up (MAP_BLOCK, mmap of the block, a
// ring in host memory mapped to the device), store fuzzed values into any
// register of a mapped block, write PQM packets into the rings (mostly
// LIN_PDMA with fuzzed addresses, sizes, flags, fences and completions;
// MSG, FENCE, WAIT, STOP, CH_WREG and garbage) and move MSQ_PI, beside
// interrupt waits, unmapped rings and buffers, resets and closes with the
// channels' goroutines running; closing must end those goroutines too.
// Strict mode is on: the violations a program causes on purpose are
// expected (Device.ExpectViolations), the others fail it. After each
// program everything is closed, and the target fails on a panic, on a
// call that outlives its bound (a watchdog resets the device, then kills
// the file, then dumps the goroutines), and on anything closing did not
// give back: goroutines, descriptors, mappings, DRAM accounting. The seeds
// in testdata/fuzz are readable programs (fuzzseed_unsafe_test.go) that go
// test runs, next to every crasher found. To fuzz:
//
//	go test ./sim -run='^$' -fuzz='^FuzzProgramGaudi2$' -fuzztime=10m -parallel=2
//
// and again with -race for data races.
//
// A Device is safe for concurrent use, and so are the files it opens.
package sim
