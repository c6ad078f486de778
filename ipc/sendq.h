/* A bounded queue of frames for a non-blocking IPC socket: a send that
 * would block waits here and goes out when the socket is writable again
 * (EPOLLOUT/POLLOUT).  Order is kept: nothing bypasses a queued frame. */
#ifndef MOKKA_IPC_SENDQ_H
#define MOKKA_IPC_SENDQ_H

#include <stdbool.h>

#include "ipc/proto.h"

#define IPC_SENDQ_MAX 16

struct ipc_sendq {
	struct ipc_frame q[IPC_SENDQ_MAX];
	unsigned head, n;
};

void ipc_sendq_init(struct ipc_sendq *q);
/* Send f now, or queue it when the socket is full or frames are already
 * waiting.  Takes f in every case (f is emptied).  0, -ENOBUFS when the
 * queue is full (the peer stopped reading: a protocol failure), -errno
 * when the socket is broken. */
int ipc_sendq_push(struct ipc_sendq *q, int sock, struct ipc_frame *f);
/* Send what is queued while the socket takes it.  0 (drained or still
 * waiting: see ipc_sendq_wants_out) or -errno. */
int ipc_sendq_flush(struct ipc_sendq *q, int sock);
/* True while frames wait: poll the socket for writability. */
bool ipc_sendq_wants_out(const struct ipc_sendq *q);
/* Encode a supervisor command (ipc_encode_cmd: stage carries fd, nothing
 * else does) and push it; q NULL sends directly (-EAGAIN when full). */
int ipc_sendq_cmd(struct ipc_sendq *q, int sock, enum ipc_op op, uint64_t gen, uint64_t seq,
		  int fd);
/* Drop everything queued (the socket is going away). */
void ipc_sendq_clear(struct ipc_sendq *q);

#endif
