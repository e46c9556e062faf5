// seqpacket_eof.c: a Linux AF_UNIX SOCK_SEQPACKET recvmsg can return 0
// (end of file) while a message is still queued, when the peer sends that
// message and closes its end during the recvmsg.
//
// Each round makes a socketpair; a second thread sends one 24-byte message
// on one end and closes it, while the main thread calls recv(MSG_DONTWAIT)
// on the other end until it gets something other than EAGAIN. A correct
// kernel gives the message first and end of file after it. When recv gives
// 0 first, the program calls recv once more: the message is there.
//
// Why (net/unix/af_unix.c of 6.12, __unix_dgram_recvmsg): the receiver
// finds the queue empty, releases the queue's locks, and only then reads
// sk_shutdown; a sender that queues its message and closes (which sets the
// receiver's RCV_SHUTDOWN) in that gap makes the call report end of file.
// The gap is a few instructions on bare metal and as long as a host time
// slice when the receiving vCPU is descheduled.
//
// Build and run:  cc -O2 -pthread -o seqpacket_eof seqpacket_eof.c && ./seqpacket_eof 200000
// Exit status: 0 when no round saw the early end of file, 1 when some did,
// 2 on an unexpected error (including a message that was really lost).
// Not part of the VM run; the ipc package's TestKernelSeqpacketEarlyEOF
// runs the same race in Go, in the VM table.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { MSG_LEN = 24 };

// state: 0 the sender waits, 1 it must send on sender_fd and close it, -1 it must exit.
static atomic_int state;
static int sender_fd;

static void *sender(void *unused)
{
	char msg[MSG_LEN];

	(void)unused;
	memset(msg, 0x5a, sizeof msg);
	for (;;) {
		int s;

		while ((s = atomic_load(&state)) == 0)
			;
		if (s < 0)
			return NULL;
		if (send(sender_fd, msg, sizeof msg, 0) != (ssize_t)sizeof msg) {
			perror("send");
			exit(2);
		}
		if (close(sender_fd) != 0) {
			perror("close");
			exit(2);
		}
		atomic_store(&state, 0);
	}
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 100000;
	long early = 0;
	char buf[2 * MSG_LEN];
	pthread_t t;

	if (pthread_create(&t, NULL, sender, NULL) != 0) {
		fprintf(stderr, "pthread_create failed\n");
		return 2;
	}
	for (long i = 0; i < rounds; i++) {
		int sv[2];
		ssize_t n;

		if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0) {
			perror("socketpair");
			return 2;
		}
		sender_fd = sv[1];
		atomic_store(&state, 1);
		while ((n = recv(sv[0], buf, sizeof buf, MSG_DONTWAIT)) < 0 && errno == EAGAIN)
			;
		if (n < 0) {
			perror("recv");
			return 2;
		}
		if (n == 0) {
			n = recv(sv[0], buf, sizeof buf, MSG_DONTWAIT);
			if (n != MSG_LEN) {
				printf("round %ld: end of file, then %zd: the message is lost\n", i, n);
				return 2;
			}
			early++;
			printf("round %ld: recv returned 0 (end of file); the next recv returned the %d-byte message\n", i, MSG_LEN);
		} else if (n != MSG_LEN) {
			printf("round %ld: recv returned %zd bytes, want %d\n", i, n, MSG_LEN);
			return 2;
		}
		while (atomic_load(&state) != 0)
			;
		close(sv[0]);
	}
	atomic_store(&state, -1);
	pthread_join(t, NULL);
	printf("%ld rounds: %ld early ends of file\n", rounds, early);
	return early != 0;
}
