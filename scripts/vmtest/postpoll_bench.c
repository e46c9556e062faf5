/*
 * postpoll_bench times rounds of one signaled 64-byte RDMA WRITE posted
 * with ibv_post_send and its completion busy-polled with ibv_poll_cq,
 * between two RC queue pairs of one RDMA device connected to each other
 * over its IPv4 RoCE v2 GID (rxe loops it back), for comparison with the
 * ib package's BenchmarkKernelPostPoll in the same guest. Usage:
 * postpoll_bench [rounds [device [gid_index]]]. It prints one line:
 * "ibv_post_send+ibv_poll_cq 64B write: <ns> ns/op (<rounds> rounds)".
 * run.sh builds it statically against libibverbs with the rxe provider.
 */
#define BENCH_NAME "postpoll_bench"
#include "bench_util.h"
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static int to_rts(struct ibv_qp *qp, uint32_t peer, union ibv_gid *gid, int gidx)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = gidx;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 2000;
	const char *dev = argc > 2 ? argv[2] : NULL;
	int gidx = argc > 3 ? atoi(argv[3]) : 1;
	struct ibv_context *ctx = open_named(dev);
	struct ibv_pd *pd;
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	struct ibv_mr *mr;
	union ibv_gid gid;
	char *buf;
	long long t0, t1;
	long r;
	int i;

	if (ctx == NULL || ibv_query_gid(ctx, 1, gidx, &gid)) {
		fprintf(stderr, "postpoll_bench: no device or GID\n");
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	buf = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pd == NULL || buf == MAP_FAILED)
		return 1;
	mr = ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	for (i = 0; i < 2; i++) {
		struct ibv_qp_init_attr ia;

		cq[i] = ibv_create_cq(ctx, 64, NULL, NULL, 0);
		memset(&ia, 0, sizeof(ia));
		ia.send_cq = ia.recv_cq = cq[i];
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
		ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
		qp[i] = cq[i] ? ibv_create_qp(pd, &ia) : NULL;
		if (mr == NULL || qp[i] == NULL) {
			perror("postpoll_bench: create");
			return 1;
		}
	}
	if (to_rts(qp[0], qp[1]->qp_num, &gid, gidx) || to_rts(qp[1], qp[0]->qp_num, &gid, gidx)) {
		perror("postpoll_bench: modify");
		return 1;
	}
	t0 = now_ns();
	for (r = 0; r < rounds; r++) {
		struct ibv_sge sge = { (uintptr_t)buf, 64, mr->lkey };
		struct ibv_send_wr wr, *bad;
		struct ibv_wc wc;
		int n;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = r;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = (uintptr_t)buf + 4096;
		wr.wr.rdma.rkey = mr->rkey;
		if (ibv_post_send(qp[0], &wr, &bad)) {
			perror("postpoll_bench: ibv_post_send");
			return 1;
		}
		while ((n = ibv_poll_cq(cq[0], 1, &wc)) == 0)
			;
		if (n < 0 || wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "postpoll_bench: completion status %d\n", n < 0 ? -1 : (int)wc.status);
			return 1;
		}
	}
	t1 = now_ns();
	printf("ibv_post_send+ibv_poll_cq 64B write: %lld ns/op (%ld rounds)\n", (t1 - t0) / rounds, rounds);
	ibv_destroy_qp(qp[0]);
	ibv_destroy_qp(qp[1]);
	ibv_destroy_cq(cq[0]);
	ibv_destroy_cq(cq[1]);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
