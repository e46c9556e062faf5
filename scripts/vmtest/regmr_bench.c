/*
 * regmr_bench times rounds of ibv_reg_mr + ibv_dereg_mr of one 1 MiB host
 * buffer on an RDMA device, for comparison with the ib package's
 * BenchmarkRegMR1MiB in the same guest. Usage: regmr_bench [rounds [device]].
 * It prints one line: "ibv_reg_mr+ibv_dereg_mr 1MiB: <ns> ns/op (<rounds> rounds)".
 * run.sh builds it statically against libibverbs with the rxe provider.
 */
#define BENCH_NAME "regmr_bench"
#include "bench_util.h"
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define BUF_SIZE (1u << 20)

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1000;
	const char *name = argc > 2 ? argv[2] : "rxe0";
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ; /* as the Go benchmark */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	long long start, elapsed;
	void *buf;
	int i;

	if (rounds <= 0) {
		fprintf(stderr, "regmr_bench: rounds must be positive\n");
		return 2;
	}
	ctx = open_named(name);
	if (ctx == NULL)
		return 1;
	pd = ibv_alloc_pd(ctx);
	if (pd == NULL) {
		perror("regmr_bench: ibv_alloc_pd");
		return 1;
	}
	buf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		perror("regmr_bench: mmap");
		return 1;
	}
	memset(buf, 1, BUF_SIZE); /* fault the pages in, as the Go benchmark's buffer is */

	/* One untimed round, so first-use costs stay out of the figure. */
	for (i = -1; i < rounds; i++) {
		if (i == 0)
			start = now_ns();
		mr = ibv_reg_mr(pd, buf, BUF_SIZE, access);
		if (mr == NULL) {
			perror("regmr_bench: ibv_reg_mr");
			return 1;
		}
		if (ibv_dereg_mr(mr) != 0) {
			perror("regmr_bench: ibv_dereg_mr");
			return 1;
		}
	}
	elapsed = now_ns() - start;
	printf("ibv_reg_mr+ibv_dereg_mr 1MiB: %lld ns/op (%d rounds)\n", elapsed / rounds, rounds);

	munmap(buf, BUF_SIZE);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
