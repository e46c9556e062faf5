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
 * Usage: percall [copy-]inproc|[copy-]syscall N. Prints the thread CPU time per
 * submit+wait, in ns, measured with CLOCK_THREAD_CPUTIME_ID.
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

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: percall [copy-]inproc|[copy-]syscall N\n");
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
