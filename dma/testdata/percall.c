/*
 * percall.c: the C reference of BenchmarkPreparedRunVsC. It issues the
 * ioctl sequence dma.Prepared.Run issues for a one-job batch (CS with one
 * execute chunk, then WAIT_CS for its sequence number), with the arguments
 * built from the 6.12 uapi header (include/uapi/drm/habanalabs_accel.h),
 * against the same fake answers as the Go side (dma/bench_c_unsafe_test.go):
 * CS answers the next sequence number, WAIT_CS answers COMPLETED. With
 * "syscall" each ioctl first makes one real cheap system call (getppid),
 * as the Go side's fake file does.
 *
 * "copy" modes (copy-inproc, copy-syscall) stand for a 4 KiB host-to-device
 * copy (dma.Engine.CopyToDevice, which issues the same CS and WAIT_CS):
 * each iteration first encodes one LIN_DMA packet (struct packet_lin_dma,
 * drivers/accel/habanalabs/include/gaudi2/gaudi2_packets.h) into the
 * command buffer, as a minimal caller must.
 *
 * "pqm" modes (pqm-inproc, pqm-syscall) stand for the same copy on a Gaudi3
 * (BenchmarkGaudi3Copy4KiBVsC), which goes through a PDMA channel's queue
 * manager instead of CS, as dma.Engine does there (internal/pqm,
 * Channel.Submit and Pool.Wait): read the channel's mode register back,
 * look at the completion counter for ring room, write one 24-byte
 * LIN_PDMA into the ring (size, control word, then the low and the high
 * halves of source and destination), store MSQ_PI with a full fence (an
 * XCHG, as the Go side's atomic store is on amd64), then, unless the
 * counter already reached the job's target, WAIT_CS in interrupt mode on
 * the counter's address (hl_wait_cs_args addr, target, flags
 * HL_WAIT_CS_FLAGS_INTERRUPT with the interrupt in bits 31:20,
 * interrupt_timeout_us) and check the counter. The fake answers that wait
 * by storing the target in the counter, as the channel would. The register
 * block and the ring are plain memory here as on the Go side; the control
 * word and the register offsets come from the Go side (its packet and
 * uapi/gaudi3 packages) on the command line, so that both write the same
 * words at the same offsets.
 *
 * Usage: percall [copy-]inproc|[copy-]syscall N
 *        percall pqm-inproc|pqm-syscall N CTL FIFO_CFG MSQ_PI MODE_MASK MODE RING
 * Prints the thread CPU time per submit+wait (or job and wait), in ns,
 * measured with CLOCK_THREAD_CPUTIME_ID.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
/* The headers come from the kernel source tree, not from "make
 * headers_install": define what that step would strip. */
#include <linux/types.h>
#define __user
/* Kernel types the packet header uses. */
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
#include <drm/habanalabs_accel.h>
#include <gaudi2/gaudi2_packets.h>

static int with_syscall;
static uint64_t next_seq;

/* issue retries an interrupted call, as every ioctl caller must (the Go
 * library does it in package ioctl). */
static int issue(int fd, unsigned long req, void *arg);

/* fake_ioctl answers as the Go side's fake file does. noinline keeps the
 * call a call, as the Go side's goes through an interface. */
__attribute__((noinline)) static int fake_ioctl(int fd, unsigned long req, void *arg)
{
	(void)fd;
	if (with_syscall)
		syscall(SYS_getppid);
	if (req == DRM_IOCTL_HL_CS) {
		union hl_cs_args *a = arg;
		memset(a, 0, sizeof(*a));
		/* Atomic, as the Go fake's counter is. */
		a->out.seq = __atomic_add_fetch(&next_seq, 1, __ATOMIC_SEQ_CST);
		a->out.status = HL_CS_STATUS_SUCCESS;
		return 0;
	}
	if (req == DRM_IOCTL_HL_WAIT_CS) {
		union hl_wait_cs_args *a = arg;
		if (a->in.flags & HL_WAIT_CS_FLAGS_INTERRUPT)
			__atomic_store_n((uint64_t *)(uintptr_t)a->in.addr, a->in.target, __ATOMIC_SEQ_CST);
		memset(a, 0, sizeof(*a));
		a->out.status = HL_WAIT_CS_STATUS_COMPLETED;
		return 0;
	}
	errno = ENOTTY;
	return -1;
}

static int issue(int fd, unsigned long req, void *arg)
{
	int rc;
	do
		rc = fake_ioctl(fd, req, arg);
	while (rc == -1 && errno == EINTR);
	return rc;
}

static int64_t thread_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The Gaudi3 channel of the pqm modes: its register block, its ring and
 * its completion counter, and what the library keeps of it. */
static uint32_t regs[4096 / 4] __attribute__((aligned(4096)));
static uint8_t ring[256 << 10] __attribute__((aligned(4096)));
static uint64_t counter;

/* pqm runs n jobs and waits as described at the top. */
static int pqm(long n, uint32_t ctl, unsigned long fifo_cfg, unsigned long msq_pi, uint32_t mode_mask,
	       uint32_t mode, uint64_t ring_size)
{
	static char host[4096];
	uint64_t src = (uint64_t)(uintptr_t)host, dst = 0x1000000000ull;
	uint64_t pi = 0, issued = 0;
	const uint32_t irq = 48;
	union hl_wait_cs_args wait;
	if (ring_size > sizeof(ring) || fifo_cfg + 4 > sizeof(regs) || msq_pi + 4 > sizeof(regs))
		return 2;
	regs[fifo_cfg / 4] = mode;
	for (long i = 0; i < n; i++) {
		/* The mode the channel was set up in is still there. */
		if ((__atomic_load_n(&regs[fifo_cfg / 4], __ATOMIC_SEQ_CST) & mode_mask) != mode)
			return 1;
		/* Ring room: the jobs the counter says are done were fetched. */
		if (__atomic_load_n(&counter, __ATOMIC_SEQ_CST) > issued)
			return 1;
		uint64_t pos = pi % ring_size;
		if (pos + 24 > ring_size) {
			pi += ring_size - pos;
			pos = 0;
		}
		uint32_t *p = (uint32_t *)&ring[pos];
		p[0] = 4096;
		p[1] = ctl;
		p[2] = (uint32_t)src;
		p[3] = (uint32_t)dst;
		p[4] = (uint32_t)(src >> 32);
		p[5] = (uint32_t)(dst >> 32);
		pi += 24;
		uint64_t target = ++issued;
		__atomic_store_n(&regs[msq_pi / 4], (uint32_t)pi, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&counter, __ATOMIC_SEQ_CST) < target) {
			memset(&wait, 0, sizeof(wait));
			wait.in.addr = (uint64_t)(uintptr_t)&counter;
			wait.in.target = target;
			wait.in.flags = HL_WAIT_CS_FLAGS_INTERRUPT | irq << 20;
			wait.in.interrupt_timeout_us = 100000;
			if (issue(3, DRM_IOCTL_HL_WAIT_CS, &wait) != 0 ||
			    wait.out.status != HL_WAIT_CS_STATUS_COMPLETED)
				return 1;
		}
		if (__atomic_load_n(&counter, __ATOMIC_SEQ_CST) < target)
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 9 && strncmp(argv[1], "pqm-", 4) == 0) {
		with_syscall = strcmp(argv[1], "pqm-syscall") == 0;
		long n = atol(argv[2]);
		int64_t start = thread_ns();
		if (pqm(n, (uint32_t)strtoul(argv[3], NULL, 0), strtoul(argv[4], NULL, 0), strtoul(argv[5], NULL, 0),
			(uint32_t)strtoul(argv[6], NULL, 0), (uint32_t)strtoul(argv[7], NULL, 0),
			strtoull(argv[8], NULL, 0)) != 0)
			return 1;
		int64_t spent = thread_ns() - start;
		printf("%.2f\n", n > 0 ? (double)spent / (double)n : 0.0);
		return 0;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: percall [copy-]inproc|[copy-]syscall N\n"
				"       percall pqm-inproc|pqm-syscall N CTL FIFO_CFG MSQ_PI MODE_MASK MODE RING\n");
		return 2;
	}
	const char *mode = argv[1];
	int copy = strncmp(mode, "copy-", 5) == 0;
	if (copy)
		mode += 5;
	with_syscall = strcmp(mode, "syscall") == 0;
	/* The command buffer (the driver's, mmapped, in a real caller) and
	 * the copy's addresses. */
	static struct packet_lin_dma cb[4096 / sizeof(struct packet_lin_dma)];
	static char host[4096];
	uint64_t dev = 0x1000000000ull;
	long n = atol(argv[2]);
	/* Prepared once, as dma.Prepare does. */
	static struct hl_cs_chunk chunk;
	chunk.cb_handle = 1;
	chunk.queue_index = 0;
	chunk.cb_size = 64;
	union hl_cs_args saved;
	memset(&saved, 0, sizeof(saved));
	saved.in.chunks_execute = (uint64_t)(uintptr_t)&chunk;
	saved.in.num_chunks_execute = 1;
	union hl_cs_args cs;
	union hl_wait_cs_args wait;
	int64_t start = thread_ns();
	for (long i = 0; i < n; i++) {
		if (copy) {
			volatile struct packet_lin_dma *p = &cb[0];
			p->tsize = sizeof(host);
			p->ctl = (PACKET_LIN_DMA << GAUDI2_PKT_CTL_OPCODE_SHIFT) |
				 (1u << GAUDI2_PKT_CTL_EB_SHIFT) | (1u << GAUDI2_PKT_CTL_MB_SHIFT);
			p->src_addr = (uint64_t)(uintptr_t)host;
			p->dst_addr = dev;
			chunk.cb_size = sizeof(*p);
		}
		cs = saved;
		if (issue(3, DRM_IOCTL_HL_CS, &cs) != 0 || cs.out.status != HL_CS_STATUS_SUCCESS)
			return 1;
		memset(&wait, 0, sizeof(wait));
		wait.in.seq = cs.out.seq;
		wait.in.timeout_us = UINT64_MAX;
		if (issue(3, DRM_IOCTL_HL_WAIT_CS, &wait) != 0 ||
		    wait.out.status != HL_WAIT_CS_STATUS_COMPLETED)
			return 1;
	}
	int64_t spent = thread_ns() - start;
	printf("%.2f\n", n > 0 ? (double)spent / (double)n : 0.0);
	return 0;
}
