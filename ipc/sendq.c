/* Bounded send queue for the non-blocking IPC sockets (see sendq.h). */
#include <errno.h>
#include <string.h>

#include "ipc/sendq.h"

void ipc_sendq_init(struct ipc_sendq *q)
{
	memset(q, 0, sizeof(*q));
	for (unsigned i = 0; i < IPC_SENDQ_MAX; i++)
		q->q[i].fd = -1;
}

int ipc_sendq_flush(struct ipc_sendq *q, int sock)
{
	while (q->n) {
		struct ipc_frame *f = &q->q[q->head];
		int r = ipc_frame_send(sock, f);

		if (r == -EAGAIN)
			return 0;
		ipc_frame_free(f);
		q->head = (q->head + 1) % IPC_SENDQ_MAX;
		q->n--;
		if (r < 0)
			return r;
	}
	return 0;
}

int ipc_sendq_push(struct ipc_sendq *q, int sock, struct ipc_frame *f)
{
	int r;

	/* Keep the order: a frame goes straight out only when none waits. */
	if (!q->n) {
		r = ipc_frame_send(sock, f);
		if (r != -EAGAIN) {
			ipc_frame_free(f);
			return r;
		}
	}
	if (q->n == IPC_SENDQ_MAX) {
		ipc_frame_free(f);
		return -ENOBUFS;
	}
	q->q[(q->head + q->n) % IPC_SENDQ_MAX] = *f;
	q->n++;
	f->buf = NULL;
	f->len = 0;
	f->fd = -1;
	return 0;
}

bool ipc_sendq_wants_out(const struct ipc_sendq *q)
{
	return q->n > 0;
}

void ipc_sendq_clear(struct ipc_sendq *q)
{
	while (q->n) {
		ipc_frame_free(&q->q[q->head]);
		q->head = (q->head + 1) % IPC_SENDQ_MAX;
		q->n--;
	}
	q->head = 0;
}

int ipc_sendq_cmd(struct ipc_sendq *q, int sock, enum ipc_op op, uint64_t gen, uint64_t seq,
		  int fd)
{
	struct ipc_cmd c = { .op = op, .gen = gen, .seq = seq };
	struct ipc_frame f;
	int r = ipc_encode_cmd(&c, fd, &f);

	if (r < 0)
		return r;
	if (q)
		return ipc_sendq_push(q, sock, &f);
	r = ipc_frame_send(sock, &f);
	ipc_frame_free(&f);
	return r;
}
