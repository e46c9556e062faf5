/*
 * accel_client: a C program that drives a Gaudi through the habanalabs uapi
 * alone, as any program in any language would: open /dev/accel/accel0, ask
 * INFO, allocate and map device memory, pin host memory (USERPTR), create
 * and mmap a command buffer, write two LIN_DMA packets into it (host to
 * device, device to host), submit it, wait, and compare the bytes.
 *
 * Built by TestCClient with gcc against the 6.12 uapi headers
 * (include/uapi/drm/habanalabs_accel.h) and the driver's packet header,
 * gaudi2_packets.h by default or gaudi_packets.h with -DHLSIM_GAUDI. It
 * prints one line per step and "PASS" at the end; any failure prints the
 * step and errno and exits 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

/* The headers come from the kernel source tree (include/uapi and the
 * driver's include/), not from "make headers_install": define what
 * headers_install would have removed and the kernel types the packet
 * headers use. */
#include <linux/types.h>
#define __user
#define SZ_1M 0x00100000
#define U16_MAX ((__u16)~0U)
#define BIT(nr) (1UL << (nr))
typedef __u8 u8;

#include <drm/habanalabs_accel.h>
#ifdef HLSIM_GAUDI
#include <gaudi/gaudi_packets.h>
#define PKT_OPCODE_SHIFT GAUDI_PKT_CTL_OPCODE_SHIFT
#define PKT_EB_SHIFT GAUDI_PKT_CTL_EB_SHIFT
#define PKT_MB_SHIFT GAUDI_PKT_CTL_MB_SHIFT
#define PKT_LIN_BITS (1u << GAUDI_PKT_LIN_DMA_CTL_LIN_SHIFT)
#define DMA_QUEUE GAUDI_QUEUE_ID_DMA_0_0
#define DEVICE_ID 0x1000
#else
#include <gaudi2/gaudi2_packets.h>
#define PKT_OPCODE_SHIFT GAUDI2_PKT_CTL_OPCODE_SHIFT
#define PKT_EB_SHIFT GAUDI2_PKT_CTL_EB_SHIFT
#define PKT_MB_SHIFT GAUDI2_PKT_CTL_MB_SHIFT
#define PKT_LIN_BITS 0u
#define DMA_QUEUE GAUDI2_QUEUE_ID_PDMA_0_0
#define DEVICE_ID 0x1020
#endif

#define SIZE (1u << 20)

static void fail(const char *step)
{
	printf("FAIL %s: %s (errno %d)\n", step, strerror(errno), errno);
	exit(1);
}

/* host_map pins n bytes of host memory for the device: MEMORY MAP with
 * HL_MEM_USERPTR. */
static uint64_t host_map(int fd, void *p, uint64_t n)
{
	union hl_mem_args a;
	memset(&a, 0, sizeof(a));
	a.in.op = HL_MEM_OP_MAP;
	a.in.flags = HL_MEM_USERPTR;
	a.in.map_host.host_virt_addr = (uint64_t)(uintptr_t)p;
	a.in.map_host.mem_size = n;
	if (ioctl(fd, DRM_IOCTL_HL_MEMORY, &a))
		fail("MEMORY MAP USERPTR");
	return a.out.device_virt_addr;
}

static void lin_dma(struct packet_lin_dma *pkt, uint64_t src, uint64_t dst, uint32_t n, int barrier)
{
	memset(pkt, 0, sizeof(*pkt));
	pkt->tsize = n;
	pkt->ctl = (PACKET_LIN_DMA << PKT_OPCODE_SHIFT) | (1u << PKT_MB_SHIFT) | PKT_LIN_BITS |
		   ((barrier ? 1u : 0u) << PKT_EB_SHIFT);
	pkt->src_addr = src;
	pkt->dst_addr = dst;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/dev/accel/accel0";
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		fail("open");
	printf("open %s\n", path);

	/* INFO HW_IP_INFO */
	struct hl_info_hw_ip_info hw;
	struct hl_info_args info;
	memset(&hw, 0, sizeof(hw));
	memset(&info, 0, sizeof(info));
	info.op = HL_INFO_HW_IP_INFO;
	info.return_pointer = (uint64_t)(uintptr_t)&hw;
	info.return_size = sizeof(hw);
	if (ioctl(fd, DRM_IOCTL_HL_INFO, &info))
		fail("INFO HW_IP_INFO");
	printf("info device_id %#x dram_base %#llx dram_size %llu\n", hw.device_id,
	       (unsigned long long)hw.dram_base_address, (unsigned long long)hw.dram_size);
	if (hw.device_id != DEVICE_ID) {
		printf("FAIL device id %#x, want %#x\n", hw.device_id, DEVICE_ID);
		return 1;
	}

	/* MEMORY ALLOC, and MAP of the handle where DRAM has an MMU. */
	union hl_mem_args mem;
	memset(&mem, 0, sizeof(mem));
	mem.in.op = HL_MEM_OP_ALLOC;
	mem.in.alloc.mem_size = hw.dram_page_size ? hw.dram_page_size : SIZE;
	if (ioctl(fd, DRM_IOCTL_HL_MEMORY, &mem))
		fail("MEMORY ALLOC");
	uint64_t handle = mem.out.handle;
	uint64_t dram = hw.dram_base_address; /* Gaudi: physical, no MMU */
#ifndef HLSIM_GAUDI
	memset(&mem, 0, sizeof(mem));
	mem.in.op = HL_MEM_OP_MAP;
	mem.in.map_device.handle = handle;
	if (ioctl(fd, DRM_IOCTL_HL_MEMORY, &mem))
		fail("MEMORY MAP");
	dram = mem.out.device_virt_addr;
#endif
	printf("alloc handle %#llx device address %#llx\n", (unsigned long long)handle, (unsigned long long)dram);

	/* Host buffers pinned with USERPTR. */
	uint8_t *src = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *dst = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (src == MAP_FAILED || dst == MAP_FAILED)
		fail("mmap host memory");
	for (uint32_t i = 0; i < SIZE; i++)
		src[i] = (uint8_t)(i * 131 + 7 + (i >> 12));
	memset(dst, 0xee, SIZE);
	uint64_t src_va = host_map(fd, src, SIZE);
	uint64_t dst_va = host_map(fd, dst, SIZE);
	printf("userptr src %#llx dst %#llx\n", (unsigned long long)src_va, (unsigned long long)dst_va);

	/* A command buffer: CB CREATE (mapped into the device MMU on Gaudi2),
	 * mmap of its handle, the packets written through the mapping. */
	union hl_cb_args cb;
	memset(&cb, 0, sizeof(cb));
	cb.in.op = HL_CB_OP_CREATE;
	cb.in.cb_size = 4096;
#ifndef HLSIM_GAUDI
	cb.in.flags = HL_CB_FLAGS_MAP;
#endif
	if (ioctl(fd, DRM_IOCTL_HL_CB, &cb))
		fail("CB CREATE");
	uint64_t cb_handle = cb.out.cb_handle;
	struct packet_lin_dma *pkts = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)cb_handle);
	if (pkts == MAP_FAILED)
		fail("mmap CB");
	lin_dma(&pkts[0], src_va, dram, SIZE, 0);
	lin_dma(&pkts[1], dram, dst_va, SIZE, 1); /* reads what the first wrote */
	uint32_t cb_size = 2 * sizeof(struct packet_lin_dma);
	printf("cb handle %#llx mapped at %p, %u bytes of packets\n", (unsigned long long)cb_handle, (void *)pkts, cb_size);

	struct hl_cs_chunk chunk;
	memset(&chunk, 0, sizeof(chunk));
	chunk.queue_index = DMA_QUEUE;
	chunk.cb_size = cb_size;
#ifdef HLSIM_GAUDI
	chunk.cb_handle = cb_handle; /* a kernel CB the driver parses */
#else
	memset(&cb, 0, sizeof(cb));
	cb.in.op = HL_CB_OP_INFO;
	cb.in.cb_handle = cb_handle;
	cb.in.flags = HL_CB_FLAGS_GET_DEVICE_VA;
	if (ioctl(fd, DRM_IOCTL_HL_CB, &cb))
		fail("CB INFO GET_DEVICE_VA");
	chunk.cb_handle = cb.out.device_va; /* the CB by device address */
	chunk.cs_chunk_flags = HL_CS_CHUNK_FLAGS_USER_ALLOC_CB;
#endif

	/* CS, then WAIT_CS. */
	union hl_cs_args cs;
	memset(&cs, 0, sizeof(cs));
	cs.in.chunks_execute = (uint64_t)(uintptr_t)&chunk;
	cs.in.num_chunks_execute = 1;
	if (ioctl(fd, DRM_IOCTL_HL_CS, &cs))
		fail("CS");
	uint64_t seq = cs.out.seq;
	printf("cs seq %llu status %u\n", (unsigned long long)seq, cs.out.status);

	union hl_wait_cs_args w;
	memset(&w, 0, sizeof(w));
	w.in.seq = seq;
	w.in.timeout_us = 10 * 1000 * 1000;
	if (ioctl(fd, DRM_IOCTL_HL_WAIT_CS, &w))
		fail("WAIT_CS");
	printf("wait_cs status %u\n", w.out.status);
	if (w.out.status != HL_WAIT_CS_STATUS_COMPLETED) {
		printf("FAIL wait status %u\n", w.out.status);
		return 1;
	}

	if (memcmp(src, dst, SIZE) != 0) {
		for (uint32_t i = 0; i < SIZE; i++)
			if (src[i] != dst[i]) {
				printf("FAIL byte %u: %#x, want %#x\n", i, dst[i], src[i]);
				break;
			}
		return 1;
	}
	printf("verified %u bytes host -> device -> host\n", SIZE);

	munmap(pkts, 4096);
	memset(&cb, 0, sizeof(cb));
	cb.in.op = HL_CB_OP_DESTROY;
	cb.in.cb_handle = cb_handle;
	if (ioctl(fd, DRM_IOCTL_HL_CB, &cb))
		fail("CB DESTROY");
	close(fd);
	printf("PASS\n");
	return 0;
}
