// SPDX-License-Identifier: GPL-2.0-only OR MIT

//go:build ignore

// hltrace.bpf.c: the in-kernel half of hltrace. It watches ioctl (and, for
// context, openat, mmap and close) at the system call tracepoints, keeps
// only the requests of the habanalabs driver, the uverbs ioctl and the
// dma-buf ioctls, decodes the caller's argument structs on the way in and
// out, and hands one event per finished call to user space through a ring
// buffer. Instead of the system call, the same decoding can run at the
// driver's ioctl entry functions, through kprobe/kretprobe or
// fentry/fexit. A second pair of programs, attached with fentry/fexit when
// the kernel has BTF for them, times driver and dma-buf functions.
//
// Nothing here comes from a system header: the few types, helpers and
// kernel structs it needs are declared below, so the object builds with
// clang alone. Kernel structs are read with CO-RE: the loader fixes the
// field offsets from the running kernel's BTF.
//
// Rebuild with "make generate" (bpf2go); the Go side is in tracer.go.

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef signed int s32;
typedef signed long long s64;

#define SEC(name) __attribute__((section(name), used))
#define __always_inline inline __attribute__((always_inline))

// "go build" skips this file (the constraint above); bpf2go compiles it.

// BTF-style map definitions, as the loader reads them.
#define __uint(name, val) int(*name)[val]
#define __type(name, val) typeof(val) *name

enum {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_RINGBUF = 27,
	BPF_MAP_TYPE_TASK_STORAGE = 29,
};

#define BPF_ANY 0
#define BPF_NOEXIST 1
#define BPF_RB_NO_WAKEUP 1
#define BPF_RB_FORCE_WAKEUP 2
#define BPF_RB_AVAIL_DATA 0
#define BPF_F_NO_PREALLOC 1
#define BPF_LOCAL_STORAGE_GET_F_CREATE 1

// Helpers, by their number in the kernel's enum bpf_func_id.
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value, u64 flags) = (void *)2;
static long (*bpf_map_delete_elem)(void *map, const void *key) = (void *)3;
static u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static u64 (*bpf_get_current_pid_tgid)(void) = (void *)14;
static long (*bpf_get_current_comm)(void *buf, u32 size) = (void *)16;
static u64 (*bpf_get_current_task)(void) = (void *)35;
static long (*bpf_probe_read_user)(void *dst, u32 size, const void *src) = (void *)112;
static long (*bpf_probe_read_kernel)(void *dst, u32 size, const void *src) = (void *)113;
static long (*bpf_probe_read_user_str)(void *dst, u32 size, const void *src) = (void *)114;
static long (*bpf_probe_read_kernel_str)(void *dst, u32 size, const void *src) = (void *)115;
static long (*bpf_ringbuf_output)(void *ringbuf, void *data, u64 size, u64 flags) = (void *)130;
static u64 (*bpf_ringbuf_query)(void *ringbuf, u64 flags) = (void *)134;
static void *(*bpf_task_storage_get)(void *map, void *task, void *value, u64 flags) = (void *)156;
static void *(*bpf_get_current_task_btf)(void) = (void *)158;
static u64 (*bpf_get_attach_cookie)(void *ctx) = (void *)174;
static void *(*bpf_task_pt_regs)(void *task) = (void *)175;
static long (*bpf_get_func_arg)(void *ctx, u32 n, u64 *value) = (void *)183;
static long (*bpf_get_func_ret)(void *ctx, u64 *value) = (void *)184;

// ---------------------------------------------------------------------------
// Kernel structs read through CO-RE. Only the fields used are declared; the
// names must match the kernel's, the offsets come from its BTF at load time.

struct file;
struct super_block {
	u32 s_dev;
} __attribute__((preserve_access_index));
struct inode {
	u32 i_rdev;
	unsigned long i_ino;
	struct super_block *i_sb;
} __attribute__((preserve_access_index));
struct file {
	struct inode *f_inode;
} __attribute__((preserve_access_index));
struct fdtable {
	unsigned int max_fds;
	struct file **fd;
} __attribute__((preserve_access_index));
struct files_struct {
	struct fdtable *fdt;
} __attribute__((preserve_access_index));
typedef struct {
	int counter;
} atomic_t;
struct signal_struct {
	atomic_t live; // threads of the group not yet exiting
} __attribute__((preserve_access_index));
struct task_struct {
	struct files_struct *files;
	int tgid;
	struct signal_struct *signal;
} __attribute__((preserve_access_index));

struct dma_buf {
	unsigned long size;
	const char *exp_name;
} __attribute__((preserve_access_index));
struct dma_buf_export_info {
	const char *exp_name;
	unsigned long size;
} __attribute__((preserve_access_index));
struct dma_buf_attachment {
	struct dma_buf *dmabuf;
} __attribute__((preserve_access_index));

// kread copies the kernel field at ptr, relocated by CO-RE, into *dst.
#define kread(dst, ptr) bpf_probe_read_kernel((dst), sizeof(*(dst)), __builtin_preserve_access_index(ptr))

// ---------------------------------------------------------------------------
// Contexts of the system call tracepoints (events/syscalls/sys_{enter,exit}_*
// format files): a common 8-byte header, the syscall number, then the
// arguments as unsigned longs, or the return value.

struct syscall_enter_ctx {
	u64 common;
	s32 nr;
	u32 pad;
	u64 args[6];
};

struct syscall_exit_ctx {
	u64 common;
	s32 nr;
	u32 pad;
	s64 ret;
};

// Raw tracepoints pass their TP_PROTO arguments as u64s: for sys_enter
// (struct pt_regs *regs, long id), for sys_exit (struct pt_regs *regs, long ret).
struct raw_tp_ctx {
	u64 args[2];
};

// ---------------------------------------------------------------------------
// The user API structs the tracer reads. Layouts follow
// include/uapi/drm/habanalabs_accel.h, rdma/rdma_user_ioctl_cmds.h and
// linux/dma-buf.h; layout_test.go proves each against package uapi.

struct hl_info_args {
	u64 return_pointer;
	u32 return_size;
	u32 op;
	u32 ctx_id; // or dcore_id, period_ms, pll_index, eventfd, ...
	u32 pad;
};

struct hl_cb_in {
	u64 cb_handle;
	u32 op;
	u32 cb_size;
	u32 ctx_id;
	u32 flags;
};

struct hl_cs_in {
	u64 chunks_restore;
	u64 chunks_execute;
	u64 seq; // encaps_sig_handle_id, encaps_signals_count/q_idx
	u32 num_chunks_restore;
	u32 num_chunks_execute;
	u32 timeout;
	u32 cs_flags;
	u32 ctx_id;
	u8 pad[4];
};

struct hl_cs_out {
	u64 seq; // or handle_id and count
	u32 status;
	u32 sob_base_addr_offset;
	u16 sob_count_before_submission;
	u16 pad[3];
};

struct hl_cs_chunk {
	u64 cb_handle;
	u32 queue_index;
	u32 cb_size;
	u32 cs_chunk_flags;
	u32 collective_engine_id;
	u32 pad[10];
};

struct hl_wait_cs_in {
	u64 seq; // or the address of the multi-CS sequence array
	u64 timeout_us;
	u32 ctx_id;
	u32 flags;
	u64 interrupt_timeout_us; // or seq_arr_len, the low byte
	u64 cq_counters_offset;
	u64 timestamp_handle;
	u64 timestamp_offset;
};

struct hl_wait_cs_out {
	u32 status;
	u32 flags;
	s64 timestamp_nsec;
	u32 cs_completion_map;
	u32 pad;
};

struct hl_mem_in {
	u64 u[3]; // the op's member of the union (alloc, map_host, ...)
	u32 op;
	u32 flags;
	u32 ctx_id;
	u32 num_of_elements;
};

struct hl_debug_args {
	u64 input_ptr;
	u64 output_ptr;
	u32 input_size;
	u32 output_size;
	u32 op;
	u32 reg_idx;
	u32 enable;
	u32 ctx_id;
};

struct ib_uverbs_ioctl_hdr {
	u16 length;
	u16 object_id;
	u16 method_id;
	u16 num_attrs;
	u64 reserved1;
	u32 driver_id;
	u32 reserved2;
};

struct ib_uverbs_attr {
	u16 attr_id;
	u16 len;
	u16 flags;
	u16 attr_data;
	u64 data;
};

// Where struct hl_info_hw_ip_info keeps the PCI device id (a u32) and
// revision (a u8): the answer tells the tracer which ASIC a device is.
// layout_unsafe_test.go proves the offsets against package uapi.
enum hw_ip_offset {
	HW_IP_DEVICE_ID = 32,
	HW_IP_REVISION_ID = 277,
};

// uapi_layouts gathers the structs above so that their BTF, and the Go
// types bpf2go makes from it, exist for layout_test.go to compare with
// package uapi. No program touches the pointer below.
struct uapi_layouts {
	struct hl_info_args info;
	struct hl_cb_in cb;
	struct hl_cs_in cs_in;
	struct hl_cs_out cs_out;
	struct hl_cs_chunk chunk;
	struct hl_wait_cs_in wait_in;
	struct hl_wait_cs_out wait_out;
	struct hl_mem_in mem;
	struct hl_debug_args debug;
	struct ib_uverbs_ioctl_hdr uverbs_hdr;
	struct ib_uverbs_attr uverbs_attr;
	enum hw_ip_offset hw_ip;
};
struct uapi_layouts *uapi_layouts_for_go __attribute__((unused));

// The habanalabs user API constants this file branches on.
#define HL_INFO_HW_IP_INFO 0
#define HL_MEM_OP_EXPORT_DMABUF_FD 5
#define HL_WAIT_CS_FLAGS_INTERRUPT 0x2
#define HL_WAIT_CS_FLAGS_MULTI_CS 0x4
#define HL_CS_FLAGS_ENGINE_CORE_COMMAND 0x4000
#define HL_CS_FLAGS_ENGINES_COMMAND 0x10000

// ---------------------------------------------------------------------------
// What user space receives. Each event is a header and a body whose layout
// the call chooses; Go reads both through the types bpf2go generates.

// enum call classifies a traced call. The requests map gives it for each
// ioctl request number; Go fills that map from package uapi.
enum call {
	CALL_NONE = 0,
	CALL_HL_INFO = 1,
	CALL_HL_CB = 2,
	CALL_HL_CS = 3,
	CALL_HL_WAIT_CS = 4,
	CALL_HL_MEMORY = 5,
	CALL_HL_DEBUG = 6,
	CALL_UVERBS = 7,
	CALL_DMABUF_SYNC = 8,
	CALL_DMABUF_SET_NAME = 9,
	CALL_DMABUF_EXPORT_SYNC_FILE = 10,
	CALL_DMABUF_IMPORT_SYNC_FILE = 11,
	CALL_OPENAT = 12,
	CALL_MMAP = 13,
	CALL_CLOSE = 14,
	CALL_FUNC = 15,
};

// Header flags.
enum event_flag {
	EVF_ENTER_FAULT = 1, // the argument struct could not be read at entry
	EVF_EXIT_FAULT = 2,  // ... or at exit
	// An openat that matched no path prefix, sent only if the file it
	// opened is one of the filter's served nodes (config.nfile); never
	// seen by user space.
	EVF_CHECK_FILE = 4,
};

struct event_hdr {
	u64 start_ns; // CLOCK_MONOTONIC at entry
	u64 end_ns;   // and at exit
	s64 ret;      // the system call's return value (-errno on failure)
	u64 arg;      // the ioctl argument pointer (or the path/address argument)
	u32 pid;      // thread group id
	u32 tid;
	enum call call;
	u32 cmd; // ioctl request; the function id for CALL_FUNC
	s32 fd;
	enum event_flag flags;
	u8 comm[16];
};

#define MAX_CHUNKS 4
#define MAX_MULTI_SEQ 8
#define MAX_ATTRS 8
#define PATH_LEN 64
#define NAME_LEN 32

struct info_body {
	u64 return_pointer;
	u32 return_size;
	u32 op;
	u32 ctx_id;
	u32 rdev;      // HW_IP_INFO: the device behind the fd (kernel dev_t)
	u32 device_id; // exit, HW_IP_INFO: the answer's PCI device id
	u8 revision;   // exit, HW_IP_INFO: the answer's PCI revision
	u8 answered;   // 1 when device_id and revision were read at exit
	u16 pad;
};

struct cb_body {
	u64 handle;
	u32 op;
	u32 size;
	u32 ctx_id;
	u32 flags;
	u64 out; // exit: the new handle, the usage count or the device VA
};

struct chunk {
	u64 cb_handle;
	u32 queue;
	u32 cb_size;
	u32 flags;
	u32 engine; // collective_engine_id, for a collective wait
};

struct cs_body {
	u64 chunks_restore;
	u64 chunks_execute;
	u64 in_seq;
	u32 num_restore;
	u32 num_execute;
	u32 timeout;
	u32 flags;
	u32 ctx_id;
	u32 nchunks; // chunks copied into chunk[]
	struct chunk chunk[MAX_CHUNKS];
	u64 seq;     // exit: the submission's sequence number
	u32 status;  // exit
	u32 rdev;    // the device behind the fd (kernel dev_t), 0 if unknown
};

#define MAX_IDS 24

// cs_ids_body is cs_body for an engine or engine core command: the ids
// the command names take the place of the chunks.
struct cs_ids_body {
	u64 ids_addr;  // the user address of the u32 id array
	u32 num_ids;   // num_engines or num_engine_cores
	u32 command;   // engine_command or core_command
	u64 in_seq;
	u32 num_restore;
	u32 num_execute;
	u32 timeout;
	u32 flags;
	u32 ctx_id;
	u32 nids; // ids copied into id[]
	u32 id[MAX_IDS];
	u64 seq;
	u32 status;
	u32 rdev;
};

struct wait_body {
	u64 seq; // the sequence, or the multi-CS array address
	u64 timeout_us;
	u64 seqs[MAX_MULTI_SEQ]; // multi-CS: the first sequence numbers
	u32 ctx_id;
	u32 flags;
	u32 nseqs;          // multi-CS: seq_arr_len
	u32 status;         // exit
	u32 out_flags;      // exit
	u32 completion_map; // exit, multi-CS
	s64 timestamp_ns;   // exit
	// Interrupt waits: seq is the user address or cq_counters_handle,
	// timeout_us the target.
	u64 interrupt_timeout_us;
	u64 cq_counters_offset;
	u64 timestamp_handle; // with HL_WAIT_CS_FLAGS_REGISTER_INTERRUPT
	u64 timestamp_offset;
};

struct mem_body {
	u64 in[3];
	u32 op;
	u32 flags;
	u32 ctx_id;
	u32 num_elements;
	u64 out[2]; // exit: handle, device VA, or fd
	u32 rdev;   // the device behind the fd (kernel dev_t), 0 if unknown
	u32 pad;
};

struct debug_body {
	u32 op;
	u32 reg_idx;
	u32 enable;
	u32 ctx_id;
	u32 input_size;
	u32 output_size;
};

struct uverbs_body {
	u16 length;
	u16 object_id;
	u16 method_id;
	u16 num_attrs;
	u32 driver_id;
	u32 nattrs; // attribute ids copied into attr_id[]
	u16 attr_id[MAX_ATTRS];
};

struct dmabuf_body {
	u64 flags; // SYNC flags; sync-file flags
	s32 fd;    // EXPORT_SYNC_FILE: the new fd at exit; IMPORT: the fd in
	u32 pad;
	u8 name[NAME_LEN]; // SET_NAME
};

struct open_body {
	s32 dirfd;
	u32 flags;
	u32 mode;
	u32 pad;
	u8 path[PATH_LEN];
};

struct mmap_body {
	u64 addr;
	u64 len;
	u64 off;
	u32 prot;
	u32 flags;
};

// How fentry reads a function's first argument.
enum func_arg {
	FARG_NONE = 0,
	FARG_EXPORT_INFO = 1, // struct dma_buf_export_info *
	FARG_DMA_BUF = 2,     // struct dma_buf *
	FARG_ATTACHMENT = 3,  // struct dma_buf_attachment *
};

struct func_body {
	u64 args[3];
	u64 ret;
	u64 dmabuf_size;
	enum func_arg arg_kind;
	u32 pad;
	u8 exp_name[NAME_LEN];
};

#define BODY_SIZE 160

_Static_assert(sizeof(struct cs_body) <= BODY_SIZE, "cs_body too big");
_Static_assert(sizeof(struct cs_ids_body) == sizeof(struct cs_body), "cs_ids_body differs from cs_body");
_Static_assert(__builtin_offsetof(struct cs_ids_body, flags) == __builtin_offsetof(struct cs_body, flags),
	       "cs_ids_body.flags moved");
_Static_assert(__builtin_offsetof(struct cs_ids_body, seq) == __builtin_offsetof(struct cs_body, seq),
	       "cs_ids_body.seq moved");
_Static_assert(__builtin_offsetof(struct cs_ids_body, rdev) == __builtin_offsetof(struct cs_body, rdev),
	       "cs_ids_body.rdev moved");
_Static_assert(sizeof(struct wait_body) <= BODY_SIZE, "wait_body too big");
_Static_assert(sizeof(struct func_body) <= BODY_SIZE, "func_body too big");
_Static_assert(sizeof(struct open_body) <= BODY_SIZE, "open_body too big");

// The body's member is chosen by hdr.call.
struct event {
	struct event_hdr hdr;
	union {
		u8 raw[BODY_SIZE];
		struct info_body info;
		struct cb_body cb;
		struct cs_body cs;
		struct cs_ids_body cs_ids;
		struct wait_body wait;
		struct mem_body mem;
		struct debug_body debug;
		struct uverbs_body uverbs;
		struct dmabuf_body dmabuf;
		struct open_body open;
		struct mmap_body mmap;
		struct func_body func;
	} body;
};

// ---------------------------------------------------------------------------
// Configuration, set from Go before the programs are attached.

// A device filter names at most MAX_RDEVS device nodes (a compute and a
// control node for each of eight Gaudis), and openat reports at most
// MAX_PREFIXES paths: the default directories, or the filter's nodes.
#define MAX_RDEVS 16
#define MAX_PREFIXES 16

enum config_flag {
	CFG_COMM = 1,   // trace only tasks whose comm equals config.comm
	CFG_RAW_TP = 2, // the raw tracepoint programs are in use
	CFG_FOLLOW = 4, // trace only the processes in the followed map
};

struct config {
	u32 pid;   // trace only this thread group; 0 for all
	enum config_flag flags;
	u32 nrdev;              // trace only ioctls on these devices; 0 for all
	u32 rdev[MAX_RDEVS];    // kernel dev_t values (major << 20 | minor)
	u32 nprefix;
	u8 comm[16];
	u32 prefix_len[MAX_PREFIXES];
	// openat paths worth reporting: a prefix, or a whole path when its
	// terminating NUL is part of prefix_len.
	u8 prefix[MAX_PREFIXES][32];
	// For the raw tracepoint programs: syscall numbers and the byte offsets
	// of the six argument registers in struct pt_regs.
	u32 nr_ioctl;
	u32 nr_openat;
	u32 nr_mmap;
	u32 nr_close;
	u32 reg_off[6];
	// For the kprobe and fentry programs: where struct pt_regs keeps the
	// system call number (they read the ioctl's fd from the task's saved
	// user registers), and for kprobes the first three arguments of a
	// function call and its return value.
	u32 nr_reg_off;
	u32 func_reg_off[3];
	u32 ret_reg_off;
	// Wake the reader only when this many bytes wait in the ring buffer
	// (it also polls): a wakeup per event costs an interrupt each.
	u32 wakeup_bytes;
	// Regular files the filter names besides its devices: the nodes
	// tools/hlsim serves, which have no device number, by the device of
	// their file system and their inode number.
	u32 nfile;
	u32 file_dev[MAX_RDEVS]; // kernel dev_t of the file system (s_dev)
	u64 file_ino[MAX_RDEVS];
};

struct request {
	enum call call;
};

// When each CPU last woke the reader (see wakeup_flags).
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} last_wakeup SEC(".maps");

// Counters, per CPU, summed by Go.
enum counter {
	CNT_LOST = 0,          // events dropped: the ring buffer was full
	CNT_INFLIGHT_FULL = 1, // calls not traced: too many in flight
	CNT_ENTER_FAULT = 2,   // argument structs that could not be read
	CNT_EVENTS = 3,        // events submitted
	CNT_FOLLOW_FULL = 4,   // processes not followed: the followed map was full
	NR_COUNTERS = 5,
};

// ---------------------------------------------------------------------------
// Maps.

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); // Go resizes it
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, u32); // ioctl request number
	__type(value, struct request);
} requests SEC(".maps");

// A call between its entry and its exit, in the calling thread's task
// storage: a thread has at most one system call in flight, and task
// storage costs no hashing. hdr.call is CALL_NONE when the slot is idle.
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct event);
} inflight SEC(".maps");

// Functions between fentry and fexit, keyed by thread id and function id.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, u64);
	__type(value, struct event);
} fcalls SEC(".maps");

// File descriptors worth following (device nodes opened or ioctl'ed,
// exported dma-bufs), keyed by tgid << 32 | fd: their mmap and close are
// reported.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, u64);
	__type(value, u32);
} fds SEC(".maps");

// The processes traced under CFG_FOLLOW, by thread group id: Go adds the
// command it starts, the fork program adds the processes they start, and
// the exit program removes a process when its last thread exits.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, u32);
	__type(value, u32);
} followed SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NR_COUNTERS);
	__type(key, enum counter);
	__type(value, u64);
} counters SEC(".maps");

// ---------------------------------------------------------------------------
// Small helpers.

static __always_inline void count(enum counter which)
{
	u64 *c = bpf_map_lookup_elem(&counters, &which);
	if (c)
		*c += 1;
}

static __always_inline struct config *get_config(void)
{
	u32 zero = 0;
	return bpf_map_lookup_elem(&config, &zero);
}

// want_task applies the pid, followed and comm filters to the current task.
static __always_inline int want_task(struct config *cfg, u64 pid_tgid)
{
	u32 tgid = pid_tgid >> 32;
	if (cfg->pid && tgid != cfg->pid)
		return 0;
	if ((cfg->flags & CFG_FOLLOW) && !bpf_map_lookup_elem(&followed, &tgid))
		return 0;
	if (cfg->flags & CFG_COMM) {
		u64 comm[2] = {};
		u64 *want = (u64 *)cfg->comm;
		bpf_get_current_comm(comm, sizeof(comm));
		if (comm[0] != want[0] || comm[1] != want[1])
			return 0;
	}
	return 1;
}

// file_rdev returns the device number (kernel dev_t) of the inode behind
// file, or 0.
static __always_inline u32 file_rdev(struct file *file)
{
	struct inode *inode = 0;
	u32 rdev = 0;

	if (!file || kread(&inode, &file->f_inode) || !inode)
		return 0;
	if (kread(&rdev, &inode->i_rdev))
		return 0;
	return rdev;
}

// fd_file returns the struct file behind the current task's file
// descriptor fd, or NULL.
static __always_inline struct file *fd_file(u32 fd)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct files_struct *files = 0;
	struct fdtable *fdt = 0;
	struct file **fdarr = 0;
	struct file *file = 0;
	unsigned int max_fds = 0;

	if (kread(&files, &task->files) || !files)
		return 0;
	if (kread(&fdt, &files->fdt) || !fdt)
		return 0;
	if (kread(&max_fds, &fdt->max_fds) || fd >= max_fds)
		return 0;
	if (kread(&fdarr, &fdt->fd) || !fdarr)
		return 0;
	if (bpf_probe_read_kernel(&file, sizeof(file), &fdarr[fd]))
		return 0;
	return file;
}

// fd_rdev returns the device number of the inode behind the current
// task's file descriptor fd, or 0.
static __always_inline u32 fd_rdev(u32 fd)
{
	return file_rdev(fd_file(fd));
}

// read_reg reads the register saved at byte offset off of a struct
// pt_regs. The mask keeps the offset in a range the verifier accepts (the
// largest struct pt_regs, arm64's, is smaller); Go checks that the
// offsets it sets are 8-byte aligned and inside it.
static __always_inline u64 read_reg(const void *regs, u32 off)
{
	u64 v = 0;
	bpf_probe_read_kernel(&v, sizeof(v), (const u8 *)regs + (off & 0x3f8));
	return v;
}

static __always_inline u64 fd_key(u64 pid_tgid, s32 fd)
{
	return (pid_tgid & 0xffffffff00000000ULL) | (u32)fd;
}

static __always_inline void follow_fd(u64 pid_tgid, s32 fd)
{
	u64 key = fd_key(pid_tgid, fd);
	u32 one = 1;
	if (!bpf_map_lookup_elem(&fds, &key))
		bpf_map_update_elem(&fds, &key, &one, BPF_ANY);
}

static __always_inline void start_event(struct event *ev, u64 pid_tgid, enum call call, s32 fd, u64 arg)
{
	ev->hdr.start_ns = bpf_ktime_get_ns();
	ev->hdr.pid = pid_tgid >> 32;
	ev->hdr.tid = (u32)pid_tgid;
	ev->hdr.call = call;
	ev->hdr.fd = fd;
	ev->hdr.arg = arg;
	bpf_get_current_comm(ev->hdr.comm, sizeof(ev->hdr.comm));
}

// wakeup_flags chooses the ring buffer submit flags. A wakeup costs the
// producer an interrupt, so the reader is woken only when the backlog
// reaches the configured threshold, and then at most once a millisecond
// per CPU: a reader that lags near the threshold is awake anyway, and one
// that sleeps polls on a timer too.
static __always_inline u64 wakeup_flags(u64 size, u64 now)
{
	struct config *cfg = get_config();
	if (!cfg || cfg->wakeup_bytes == 0)
		return 0; // the kernel's default: wake an idle reader
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) + size < cfg->wakeup_bytes)
		return BPF_RB_NO_WAKEUP;
	u32 zero = 0;
	u64 *last = bpf_map_lookup_elem(&last_wakeup, &zero);
	if (!last || now - *last < 1000000)
		return BPF_RB_NO_WAKEUP;
	*last = now;
	return BPF_RB_FORCE_WAKEUP;
}

// event_size is how much of an event a call fills: the header and its
// body, so that small calls cost less ring buffer.
static __always_inline u64 event_size(enum call call)
{
	u64 body;
	switch (call) {
	case CALL_HL_INFO:
		body = sizeof(struct info_body);
		break;
	case CALL_HL_CB:
		body = sizeof(struct cb_body);
		break;
	case CALL_HL_CS:
		body = sizeof(struct cs_body);
		break;
	case CALL_HL_WAIT_CS:
		body = sizeof(struct wait_body);
		break;
	case CALL_HL_MEMORY:
		body = sizeof(struct mem_body);
		break;
	case CALL_HL_DEBUG:
		body = sizeof(struct debug_body);
		break;
	case CALL_UVERBS:
		body = sizeof(struct uverbs_body);
		break;
	case CALL_OPENAT:
		body = sizeof(struct open_body);
		break;
	case CALL_MMAP:
		body = sizeof(struct mmap_body);
		break;
	case CALL_CLOSE:
		body = 0;
		break;
	case CALL_FUNC:
		body = sizeof(struct func_body);
		break;
	default: // the dma-buf calls
		body = sizeof(struct dmabuf_body);
		break;
	}
	return (sizeof(struct event_hdr) + body + 7) & ~7ULL;
}

// send copies the finished event into the ring buffer.
static __always_inline void send(struct event *ev)
{
	u64 size = event_size(ev->hdr.call);
	if (size > sizeof(*ev))
		size = sizeof(*ev);
	if (bpf_ringbuf_output(&events, ev, size, wakeup_flags(size, ev->hdr.end_ns)))
		count(CNT_LOST);
	else
		count(CNT_EVENTS);
}

// begin returns the current thread's in-flight slot, cleared, or NULL.
static __always_inline struct event *begin(void)
{
	struct event *ev = bpf_task_storage_get(&inflight, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ev) {
		count(CNT_INFLIGHT_FULL);
		return 0;
	}
	__builtin_memset(ev, 0, sizeof(*ev));
	return ev;
}

// ---------------------------------------------------------------------------
// Entry decoders: each reads the caller's struct at arg into the body.

static __always_inline int read_in(struct event *ev, void *dst, u32 size, u64 arg)
{
	if (bpf_probe_read_user(dst, size, (const void *)arg)) {
		ev->hdr.flags |= EVF_ENTER_FAULT;
		count(CNT_ENTER_FAULT);
		return -1;
	}
	return 0;
}

static __always_inline void enter_info(struct event *ev, u64 arg)
{
	struct info_body *b = &ev->body.info;
	struct hl_info_args in;
	if (read_in(ev, &in, sizeof(in), arg))
		return;
	b->return_pointer = in.return_pointer;
	b->return_size = in.return_size;
	b->op = in.op;
	b->ctx_id = in.ctx_id;
}

// want_hw_ip reports whether an INFO call asks for the hardware IP
// answer with a buffer that holds the device id and revision.
static __always_inline int want_hw_ip(struct info_body *b)
{
	return b->op == HL_INFO_HW_IP_INFO && b->return_size > HW_IP_REVISION_ID;
}

static __always_inline void enter_cb(struct event *ev, u64 arg)
{
	struct cb_body *b = &ev->body.cb;
	struct hl_cb_in in;
	if (read_in(ev, &in, sizeof(in), arg))
		return;
	b->handle = in.cb_handle;
	b->op = in.op;
	b->size = in.cb_size;
	b->ctx_id = in.ctx_id;
	b->flags = in.flags;
}

static __always_inline void enter_cs(struct event *ev, u64 arg)
{
	struct cs_body *b = &ev->body.cs;
	struct hl_cs_in in;
	if (read_in(ev, &in, sizeof(in), arg))
		return;
	b->chunks_restore = in.chunks_restore;
	b->chunks_execute = in.chunks_execute;
	b->in_seq = in.seq;
	b->num_restore = in.num_chunks_restore;
	b->num_execute = in.num_chunks_execute;
	b->timeout = in.timeout;
	b->flags = in.cs_flags;
	b->ctx_id = in.ctx_id;

	if (in.cs_flags & (HL_CS_FLAGS_ENGINE_CORE_COMMAND | HL_CS_FLAGS_ENGINES_COMMAND)) {
		// The union holds the id array's address, its length and the
		// command where the chunk arrays are otherwise.
		struct cs_ids_body *ib = &ev->body.cs_ids;
		u32 n = ib->num_ids;
		if (n > MAX_IDS)
			n = MAX_IDS;
		if (n && bpf_probe_read_user(ib->id, n * sizeof(u32), (const void *)ib->ids_addr)) {
			ev->hdr.flags |= EVF_ENTER_FAULT;
			return;
		}
		ib->nids = n;
		return;
	}

	u32 n = in.num_chunks_execute;
	if (n > MAX_CHUNKS)
		n = MAX_CHUNKS;
	for (u32 i = 0; i < MAX_CHUNKS; i++) {
		struct hl_cs_chunk c;
		if (i >= n)
			break;
		// The first 24 bytes hold what is worth showing.
		if (bpf_probe_read_user(&c, 24, (const void *)(in.chunks_execute + i * sizeof(c)))) {
			ev->hdr.flags |= EVF_ENTER_FAULT;
			break;
		}
		b->chunk[i].cb_handle = c.cb_handle;
		b->chunk[i].queue = c.queue_index;
		b->chunk[i].cb_size = c.cb_size;
		b->chunk[i].flags = c.cs_chunk_flags;
		b->chunk[i].engine = c.collective_engine_id;
		b->nchunks = i + 1;
	}
}

static __always_inline void enter_wait(struct event *ev, u64 arg)
{
	struct wait_body *b = &ev->body.wait;
	struct hl_wait_cs_in in;
	if (read_in(ev, &in, sizeof(in), arg))
		return;
	b->seq = in.seq;
	b->timeout_us = in.timeout_us;
	b->ctx_id = in.ctx_id;
	b->flags = in.flags;
	if (in.flags & HL_WAIT_CS_FLAGS_INTERRUPT) {
		b->interrupt_timeout_us = in.interrupt_timeout_us;
		b->cq_counters_offset = in.cq_counters_offset;
		b->timestamp_handle = in.timestamp_handle;
		b->timestamp_offset = in.timestamp_offset;
	} else if (in.flags & HL_WAIT_CS_FLAGS_MULTI_CS) {
		u32 n = (u8)in.interrupt_timeout_us; // seq_arr_len
		b->nseqs = n;
		if (n > MAX_MULTI_SEQ)
			n = MAX_MULTI_SEQ;
		if (n && bpf_probe_read_user(b->seqs, n * sizeof(u64), (const void *)in.seq))
			ev->hdr.flags |= EVF_ENTER_FAULT;
	}
}

static __always_inline void enter_mem(struct event *ev, u64 arg)
{
	struct mem_body *b = &ev->body.mem;
	struct hl_mem_in in;
	if (read_in(ev, &in, sizeof(in), arg))
		return;
	b->in[0] = in.u[0];
	b->in[1] = in.u[1];
	b->in[2] = in.u[2];
	b->op = in.op;
	b->flags = in.flags;
	b->ctx_id = in.ctx_id;
	b->num_elements = in.num_of_elements;
}

static __always_inline void enter_debug(struct event *ev, u64 arg)
{
	struct debug_body *b = &ev->body.debug;
	struct hl_debug_args in;
	if (read_in(ev, &in, sizeof(in), arg))
		return;
	b->op = in.op;
	b->reg_idx = in.reg_idx;
	b->enable = in.enable;
	b->ctx_id = in.ctx_id;
	b->input_size = in.input_size;
	b->output_size = in.output_size;
}

static __always_inline void enter_uverbs(struct event *ev, u64 arg)
{
	struct uverbs_body *b = &ev->body.uverbs;
	struct ib_uverbs_ioctl_hdr hdr;
	if (read_in(ev, &hdr, sizeof(hdr), arg))
		return;
	b->length = hdr.length;
	b->object_id = hdr.object_id;
	b->method_id = hdr.method_id;
	b->num_attrs = hdr.num_attrs;
	b->driver_id = hdr.driver_id;

	u32 n = hdr.num_attrs;
	if (n > MAX_ATTRS)
		n = MAX_ATTRS;
	for (u32 i = 0; i < MAX_ATTRS; i++) {
		u16 id;
		if (i >= n)
			break;
		if (bpf_probe_read_user(&id, sizeof(id),
					(const void *)(arg + sizeof(hdr) + i * sizeof(struct ib_uverbs_attr)))) {
			ev->hdr.flags |= EVF_ENTER_FAULT;
			break;
		}
		b->attr_id[i] = id;
		b->nattrs = i + 1;
	}
}

static __always_inline void enter_dmabuf(struct event *ev, enum call call, u64 arg)
{
	struct dmabuf_body *b = &ev->body.dmabuf;
	switch (call) {
	case CALL_DMABUF_SYNC:
		read_in(ev, &b->flags, sizeof(b->flags), arg);
		break;
	case CALL_DMABUF_SET_NAME:
		if (bpf_probe_read_user_str(b->name, sizeof(b->name), (const void *)arg) < 0)
			ev->hdr.flags |= EVF_ENTER_FAULT;
		break;
	case CALL_DMABUF_EXPORT_SYNC_FILE:
	case CALL_DMABUF_IMPORT_SYNC_FILE: {
		u32 in[2];
		if (read_in(ev, in, sizeof(in), arg))
			return;
		b->flags = in[0];
		b->fd = (s32)in[1];
		break;
	}
	default:
		break;
	}
}

// want_served reports whether file is one of the regular files (served
// nodes) the filter names, by its file system's device and inode number.
static __always_inline int want_served(struct config *cfg, struct file *file)
{
	struct inode *inode = 0;
	struct super_block *sb = 0;
	unsigned long ino = 0;
	u32 dev = 0;

	if (!cfg->nfile || !file || kread(&inode, &file->f_inode) || !inode)
		return 0;
	if (kread(&ino, &inode->i_ino) || kread(&sb, &inode->i_sb) || !sb || kread(&dev, &sb->s_dev))
		return 0;
	for (u32 i = 0; i < MAX_RDEVS; i++) {
		if (i >= cfg->nfile)
			break;
		if (cfg->file_dev[i] == dev && cfg->file_ino[i] == ino)
			return 1;
	}
	return 0;
}

// want_rdev reports whether rdev is one of the devices the filter names.
static __always_inline int want_rdev(struct config *cfg, u32 rdev)
{
	for (u32 i = 0; i < MAX_RDEVS; i++) {
		if (i >= cfg->nrdev)
			break;
		if (cfg->rdev[i] == rdev)
			return 1;
	}
	return 0;
}

// ---------------------------------------------------------------------------
// The entry handlers, shared by the tracepoint, raw tracepoint, kprobe and
// fentry programs.

// ioctl_enter starts an ioctl event. The system call programs know the fd;
// the driver function programs know the struct file (and the fd only from
// the saved user registers, or -1), and may ask that the file's device
// major be major (0: any).
static __always_inline int ioctl_enter(s32 fd, u64 cmd, u64 arg, struct file *file, u32 major)
{
	u32 req = (u32)cmd;
	struct request *r = bpf_map_lookup_elem(&requests, &req);
	if (!r)
		return 0;
	struct config *cfg = get_config();
	if (!cfg)
		return 0;
	u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!want_task(cfg, pid_tgid))
		return 0;
	enum call call = r->call;
	// The device is looked up for the filters, and for the calls whose
	// decoding depends on the ASIC: a CS names queues and engines, MEMORY
	// MAP_BLOCK a block, and an INFO HW_IP_INFO answer tells which ASIC
	// the device is (exit_body).
	u32 rdev = 0;
	if (cfg->nrdev || cfg->nfile || major || call == CALL_HL_CS || call == CALL_HL_MEMORY) {
		if (!file)
			file = fd_file((u32)fd);
		rdev = file_rdev(file);
		if ((cfg->nrdev || cfg->nfile) && !(rdev ? want_rdev(cfg, rdev) : want_served(cfg, file)))
			return 0;
		if (major && rdev >> 20 != major)
			return 0;
	}

	struct event *ev = begin();
	if (!ev)
		return 0;
	ev->hdr.cmd = req;
	switch (call) {
	case CALL_HL_INFO:
		enter_info(ev, arg);
		if (want_hw_ip(&ev->body.info))
			ev->body.info.rdev = rdev ? rdev : file ? file_rdev(file) : fd_rdev((u32)fd);
		break;
	case CALL_HL_CB:
		enter_cb(ev, arg);
		break;
	case CALL_HL_CS:
		enter_cs(ev, arg);
		ev->body.cs.rdev = rdev;
		break;
	case CALL_HL_WAIT_CS:
		enter_wait(ev, arg);
		break;
	case CALL_HL_MEMORY:
		enter_mem(ev, arg);
		ev->body.mem.rdev = rdev;
		break;
	case CALL_HL_DEBUG:
		enter_debug(ev, arg);
		break;
	case CALL_UVERBS:
		enter_uverbs(ev, arg);
		break;
	default:
		enter_dmabuf(ev, call, arg);
		break;
	}
	// Last: it arms the slot for the exit handler.
	start_event(ev, pid_tgid, call, fd, arg);
	return 0;
}

// has_prefix reports whether path starts with one of the configured prefixes
// (is one of the whole paths, for those whose length counts the NUL).
static __always_inline int has_prefix(struct config *cfg, const u8 *path)
{
	for (u32 p = 0; p < MAX_PREFIXES; p++) {
		u32 len = cfg->prefix_len[p];
		if (p >= cfg->nprefix)
			break;
		if (len == 0 || len > 32)
			continue;
		int match = 1;
		for (u32 i = 0; i < 32; i++) {
			if (i >= len)
				break;
			if (path[i] != cfg->prefix[p][i]) {
				match = 0;
				break;
			}
		}
		if (match)
			return 1;
	}
	return 0;
}

static __always_inline int openat_enter(u64 dirfd, u64 path, u64 flags, u64 mode)
{
	struct config *cfg = get_config();
	if (!cfg || (!cfg->nprefix && !cfg->nfile))
		return 0;
	u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!want_task(cfg, pid_tgid))
		return 0;

	u64 buf[PATH_LEN / 8] = {};
	if (bpf_probe_read_user_str(buf, sizeof(buf), (const void *)path) < 0)
		return 0;
	// An openat of no configured path may still open one of the filter's
	// served nodes (whose paths are too long for a prefix): the exit
	// checks the file it opened (EVF_CHECK_FILE).
	int check = !has_prefix(cfg, (const u8 *)buf);
	if (check && !cfg->nfile)
		return 0;
	struct event *ev = begin();
	if (!ev)
		return 0;
	if (check)
		ev->hdr.flags |= EVF_CHECK_FILE;
	struct open_body *b = &ev->body.open;
	u64 *dst = (u64 *)b->path;
	for (int i = 0; i < PATH_LEN / 8; i++)
		dst[i] = buf[i];
	b->dirfd = (s32)dirfd;
	b->flags = (u32)flags;
	b->mode = (u32)mode;
	start_event(ev, pid_tgid, CALL_OPENAT, (s32)dirfd, path);
	return 0;
}

static __always_inline int mmap_enter(u64 addr, u64 len, u64 prot, u64 flags, u64 fd, u64 off)
{
	if ((s32)fd < 0)
		return 0;
	u64 pid_tgid = bpf_get_current_pid_tgid();
	u64 key = fd_key(pid_tgid, (s32)fd);
	if (!bpf_map_lookup_elem(&fds, &key))
		return 0;
	struct config *cfg = get_config();
	if (!cfg || !want_task(cfg, pid_tgid))
		return 0;

	struct event *ev = begin();
	if (!ev)
		return 0;
	struct mmap_body *b = &ev->body.mmap;
	b->addr = addr;
	b->len = len;
	b->off = off;
	b->prot = (u32)prot;
	b->flags = (u32)flags;
	start_event(ev, pid_tgid, CALL_MMAP, (s32)fd, addr);
	return 0;
}

static __always_inline int close_enter(u64 fd)
{
	u64 pid_tgid = bpf_get_current_pid_tgid();
	u64 key = fd_key(pid_tgid, (s32)fd);
	if (!bpf_map_lookup_elem(&fds, &key))
		return 0;
	bpf_map_delete_elem(&fds, &key);
	struct config *cfg = get_config();
	if (!cfg || !want_task(cfg, pid_tgid))
		return 0;

	struct event *ev = begin();
	if (ev)
		start_event(ev, pid_tgid, CALL_CLOSE, (s32)fd, 0);
	return 0;
}

// ---------------------------------------------------------------------------
// The exit handler: finish the stashed call and send it.

static __always_inline void exit_body(struct event *ev, u64 pid_tgid)
{
	u64 arg = ev->hdr.arg;
	int fault = 0;

	switch (ev->hdr.call) {
	case CALL_HL_INFO: {
		// The answer is read whatever the call returned (user space
		// trusts it only from a call that succeeded), so that the tests
		// can prove the read on a file that refuses the request.
		struct info_body *b = &ev->body.info;
		if (!want_hw_ip(b))
			break;
		const u8 *ans = (const u8 *)b->return_pointer;
		if (!bpf_probe_read_user(&b->device_id, sizeof(b->device_id), ans + HW_IP_DEVICE_ID) &&
		    !bpf_probe_read_user(&b->revision, sizeof(b->revision), ans + HW_IP_REVISION_ID))
			b->answered = 1;
		break;
	}
	case CALL_HL_CB: {
		struct cb_body *b = &ev->body.cb;
		fault = bpf_probe_read_user(&b->out, sizeof(b->out), (const void *)arg);
		break;
	}
	case CALL_HL_CS: {
		struct cs_body *b = &ev->body.cs;
		struct hl_cs_out out;
		fault = bpf_probe_read_user(&out, 16, (const void *)arg);
		if (!fault) {
			b->seq = out.seq;
			b->status = out.status;
		}
		break;
	}
	case CALL_HL_WAIT_CS: {
		struct wait_body *b = &ev->body.wait;
		struct hl_wait_cs_out out;
		fault = bpf_probe_read_user(&out, sizeof(out), (const void *)arg);
		if (!fault) {
			b->status = out.status;
			b->out_flags = out.flags;
			b->timestamp_ns = out.timestamp_nsec;
			b->completion_map = out.cs_completion_map;
		}
		break;
	}
	case CALL_HL_MEMORY: {
		struct mem_body *b = &ev->body.mem;
		fault = bpf_probe_read_user(b->out, sizeof(b->out), (const void *)arg);
		if (!fault && ev->hdr.ret == 0 && b->op == HL_MEM_OP_EXPORT_DMABUF_FD)
			follow_fd(pid_tgid, (s32)b->out[0]);
		break;
	}
	case CALL_DMABUF_EXPORT_SYNC_FILE: {
		struct dmabuf_body *b = &ev->body.dmabuf;
		fault = bpf_probe_read_user(&b->fd, sizeof(b->fd), (const void *)(arg + 4));
		break;
	}
	case CALL_OPENAT:
		if (ev->hdr.ret < 0)
			break;
		if (ev->hdr.flags & EVF_CHECK_FILE) {
			struct config *cfg = get_config();
			if (!cfg || !want_served(cfg, fd_file((u32)ev->hdr.ret)))
				break; // not sent: finish_call sees the flag
			ev->hdr.flags &= ~EVF_CHECK_FILE;
		}
		follow_fd(pid_tgid, (s32)ev->hdr.ret);
		break;
	default:
		break;
	}
	if (fault)
		ev->hdr.flags |= EVF_EXIT_FAULT;
	// An fd the driver answered is one of its files: report its mmap and close.
	if (ev->hdr.ret == 0 && ev->hdr.call <= CALL_DMABUF_IMPORT_SYNC_FILE && ev->hdr.fd >= 0)
		follow_fd(pid_tgid, ev->hdr.fd);
}

// finish_call ends the current thread's call in flight, if any, with its
// return value: a system call's, or a driver function's.
static __always_inline int finish_call(s64 ret)
{
	struct event *ev = bpf_task_storage_get(&inflight, bpf_get_current_task_btf(), 0, 0);
	if (!ev || ev->hdr.call == CALL_NONE)
		return 0;
	ev->hdr.end_ns = bpf_ktime_get_ns();
	ev->hdr.ret = ret;
	exit_body(ev, bpf_get_current_pid_tgid());
	if (!(ev->hdr.flags & EVF_CHECK_FILE)) // an openat of no file the filter names
		send(ev);
	ev->hdr.call = CALL_NONE;
	return 0;
}

// ---------------------------------------------------------------------------
// Programs: system call tracepoints (tracefs, CONFIG_FTRACE_SYSCALLS).

SEC("tracepoint/syscalls/sys_enter_ioctl")
int enter_ioctl(struct syscall_enter_ctx *ctx)
{
	return ioctl_enter((s32)ctx->args[0], ctx->args[1], ctx->args[2], 0, 0);
}

SEC("tracepoint/syscalls/sys_enter_openat")
int enter_openat(struct syscall_enter_ctx *ctx)
{
	return openat_enter(ctx->args[0], ctx->args[1], ctx->args[2], ctx->args[3]);
}

SEC("tracepoint/syscalls/sys_enter_mmap")
int enter_mmap(struct syscall_enter_ctx *ctx)
{
	return mmap_enter(ctx->args[0], ctx->args[1], ctx->args[2], ctx->args[3], ctx->args[4], ctx->args[5]);
}

SEC("tracepoint/syscalls/sys_enter_close")
int enter_close(struct syscall_enter_ctx *ctx)
{
	return close_enter(ctx->args[0]);
}

// One exit program serves the four sys_exit_* tracepoints: a thread has at
// most one system call in flight, so its stashed entry says which it was.
SEC("tracepoint/syscalls/sys_exit_ioctl")
int exit_syscall(struct syscall_exit_ctx *ctx)
{
	return finish_call(ctx->ret);
}

// ---------------------------------------------------------------------------
// Programs: following a command's processes (CFG_FOLLOW). Raw tracepoints
// (TP_PROTO in include/trace/events/sched.h): sched_process_fork runs in
// the parent, in kernel_clone, with (struct task_struct *parent, struct
// task_struct *child), for threads too; sched_process_exit runs in do_exit
// for each exiting thread, after do_exit has counted the thread out of
// signal->live, with the task first.

SEC("raw_tracepoint/sched_process_fork")
int follow_fork(struct raw_tp_ctx *ctx)
{
	u32 parent = bpf_get_current_pid_tgid() >> 32;
	if (!bpf_map_lookup_elem(&followed, &parent))
		return 0;
	struct task_struct *child = (struct task_struct *)ctx->args[1];
	int tgid = 0;
	if (kread(&tgid, &child->tgid) || (u32)tgid == parent)
		return 0; // a new thread of a followed process
	u32 key = tgid, one = 1;
	if (bpf_map_update_elem(&followed, &key, &one, BPF_ANY))
		count(CNT_FOLLOW_FULL);
	return 0;
}

SEC("raw_tracepoint/sched_process_exit")
int follow_exit(struct raw_tp_ctx *ctx)
{
	u32 tgid = bpf_get_current_pid_tgid() >> 32;
	if (!bpf_map_lookup_elem(&followed, &tgid))
		return 0;
	struct task_struct *task = (struct task_struct *)ctx->args[0];
	struct signal_struct *sig = 0;
	int live = 1;
	if (kread(&sig, &task->signal) || !sig || kread(&live, &sig->live.counter))
		return 0;
	if (live == 0) // the last thread of the process
		bpf_map_delete_elem(&followed, &tgid);
	return 0;
}

// ---------------------------------------------------------------------------
// Programs: raw tracepoints, for kernels without tracefs or per-syscall
// events. They run for every system call, so they look at the number first.

static __always_inline u64 reg_arg(struct config *cfg, const void *regs, u32 i)
{
	return i < 6 ? read_reg(regs, cfg->reg_off[i]) : 0;
}

SEC("raw_tracepoint/sys_enter")
int raw_enter(struct raw_tp_ctx *ctx)
{
	struct config *cfg = get_config();
	if (!cfg)
		return 0;
	const void *regs = (const void *)ctx->args[0];
	u32 nr = (u32)ctx->args[1];
	if (nr == cfg->nr_ioctl)
		return ioctl_enter((s32)reg_arg(cfg, regs, 0), reg_arg(cfg, regs, 1), reg_arg(cfg, regs, 2), 0, 0);
	if (nr == cfg->nr_openat)
		return openat_enter(reg_arg(cfg, regs, 0), reg_arg(cfg, regs, 1), reg_arg(cfg, regs, 2),
				    reg_arg(cfg, regs, 3));
	if (nr == cfg->nr_mmap)
		return mmap_enter(reg_arg(cfg, regs, 0), reg_arg(cfg, regs, 1), reg_arg(cfg, regs, 2),
				  reg_arg(cfg, regs, 3), reg_arg(cfg, regs, 4), reg_arg(cfg, regs, 5));
	if (nr == cfg->nr_close)
		return close_enter(reg_arg(cfg, regs, 0));
	return 0;
}

SEC("raw_tracepoint/sys_exit")
int raw_exit(struct raw_tp_ctx *ctx)
{
	return finish_call((s64)ctx->args[1]);
}

// ---------------------------------------------------------------------------
// Programs: kprobe/kretprobe or fentry/fexit on a driver's ioctl entry
// functions, all of the shape long f(struct file *, unsigned int cmd,
// unsigned long arg): hl_ioctl_control and drm_ioctl for habanalabs,
// ib_uverbs_ioctl for uverbs. The attach cookie, when not 0, is the device
// major the file must have (drm_ioctl serves every DRM driver). The entry
// stashes the call in the thread's in-flight slot, as sys_enter does, and
// the return finishes it with the function's return value.

// syscall_fd returns the fd of the ioctl system call the current task is
// in, from its saved user registers, or -1 when the task is in another
// system call (a compat one, say).
static __always_inline s32 syscall_fd(struct config *cfg)
{
	const void *regs = bpf_task_pt_regs(bpf_get_current_task_btf());
	if ((u32)read_reg(regs, cfg->nr_reg_off) != cfg->nr_ioctl)
		return -1;
	return (s32)read_reg(regs, cfg->reg_off[0]);
}

SEC("kprobe/hl_ioctl_control")
int kprobe_ioctl(void *ctx)
{
	struct config *cfg = get_config();
	if (!cfg)
		return 0;
	struct file *file = (struct file *)read_reg(ctx, cfg->func_reg_off[0]);
	return ioctl_enter(syscall_fd(cfg), read_reg(ctx, cfg->func_reg_off[1]), read_reg(ctx, cfg->func_reg_off[2]),
			   file, (u32)bpf_get_attach_cookie(ctx));
}

SEC("kretprobe/hl_ioctl_control")
int kretprobe_ioctl(void *ctx)
{
	struct config *cfg = get_config();
	if (!cfg)
		return 0;
	return finish_call((s64)read_reg(ctx, cfg->ret_reg_off));
}

SEC("fentry/hl_ioctl_control")
int fentry_ioctl(u64 *ctx)
{
	struct config *cfg = get_config();
	if (!cfg)
		return 0;
	u64 file = 0, cmd = 0, arg = 0;
	bpf_get_func_arg(ctx, 0, &file);
	bpf_get_func_arg(ctx, 1, &cmd);
	bpf_get_func_arg(ctx, 2, &arg);
	return ioctl_enter(syscall_fd(cfg), cmd, arg, (struct file *)file, (u32)bpf_get_attach_cookie(ctx));
}

SEC("fexit/hl_ioctl_control")
int fexit_ioctl(u64 *ctx)
{
	u64 ret = 0;
	bpf_get_func_ret(ctx, &ret);
	return finish_call((s64)ret);
}

// ---------------------------------------------------------------------------
// Programs: fentry/fexit on driver and dma-buf functions. Go loads one copy
// per function (the section names only give a default) and sets the attach
// cookie: bits 0-15 the function id it reports as hdr.cmd, bits 16-23 how
// to read the first argument (enum func_arg).

static __always_inline u64 fcall_key(u64 pid_tgid, u64 cookie)
{
	return (pid_tgid << 32) | (cookie & 0xffff);
}

SEC("fentry/dma_buf_export")
int func_enter(u64 *ctx)
{
	struct config *cfg = get_config();
	if (!cfg)
		return 0;
	u64 pid_tgid = bpf_get_current_pid_tgid();
	if (!want_task(cfg, pid_tgid))
		return 0;
	u64 cookie = bpf_get_attach_cookie(ctx);

	struct event ev;
	__builtin_memset(&ev, 0, sizeof(ev));
	struct func_body *b = &ev.body.func;
	start_event(&ev, pid_tgid, CALL_FUNC, -1, 0);
	b->arg_kind = (cookie >> 16) & 0xff;
	ev.hdr.cmd = cookie & 0xffff;
	bpf_get_func_arg(ctx, 0, &b->args[0]);
	bpf_get_func_arg(ctx, 1, &b->args[1]);
	bpf_get_func_arg(ctx, 2, &b->args[2]);

	// A failed kread leaves its destination zero.
	struct dma_buf *buf = 0;
	const char *name = 0;
	switch (b->arg_kind) {
	case FARG_EXPORT_INFO: {
		struct dma_buf_export_info *info = (void *)b->args[0];
		kread(&b->dmabuf_size, &info->size);
		kread(&name, &info->exp_name);
		break;
	}
	case FARG_DMA_BUF:
		buf = (void *)b->args[0];
		break;
	case FARG_ATTACHMENT: {
		struct dma_buf_attachment *at = (void *)b->args[0];
		kread(&buf, &at->dmabuf);
		break;
	}
	case FARG_NONE:
		break;
	}
	if (buf) {
		kread(&b->dmabuf_size, &buf->size);
		kread(&name, &buf->exp_name);
	}
	if (name)
		bpf_probe_read_kernel_str(b->exp_name, sizeof(b->exp_name), name);

	u64 key = fcall_key(pid_tgid, cookie);
	if (bpf_map_update_elem(&fcalls, &key, &ev, BPF_ANY))
		count(CNT_INFLIGHT_FULL);
	return 0;
}

SEC("fexit/dma_buf_export")
int func_exit(u64 *ctx)
{
	u64 pid_tgid = bpf_get_current_pid_tgid();
	u64 key = fcall_key(pid_tgid, bpf_get_attach_cookie(ctx));
	struct event *ev = bpf_map_lookup_elem(&fcalls, &key);
	if (!ev)
		return 0;
	ev->hdr.end_ns = bpf_ktime_get_ns();
	bpf_get_func_ret(ctx, &ev->body.func.ret);
	ev->hdr.ret = (s64)ev->body.func.ret;
	send(ev);
	bpf_map_delete_elem(&fcalls, &key);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
