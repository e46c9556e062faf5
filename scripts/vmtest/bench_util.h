/*
 * bench_util.h: what the C benchmarks of the VM harness share: a monotonic
 * clock in nanoseconds and opening an RDMA device by name with libibverbs.
 * Each benchmark names itself in errors through BENCH_NAME.
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct ibv_context *open_named(const char *want)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n, i;

	list = ibv_get_device_list(&n);
	if (list == NULL) {
		perror(BENCH_NAME ": ibv_get_device_list");
		return NULL;
	}
	for (i = 0; i < n && ctx == NULL; i++) {
		if (want == NULL || strcmp(ibv_get_device_name(list[i]), want) == 0)
			ctx = ibv_open_device(list[i]);
	}
	ibv_free_device_list(list);
	if (ctx == NULL)
		fprintf(stderr, BENCH_NAME ": no usable device %s (%d listed)\n", want ? want : "", n);
	return ctx;
}
