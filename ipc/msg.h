/* IPC framing between supervisor and workers: one SEQPACKET message is one
 * UTF-8 JSON object of at most IPC_MAX_MSG bytes, optionally carrying one
 * fd (the sealed state memfd) with SCM_RIGHTS.  This file is the frame and
 * its header (v, op, gen, seq); the messages themselves are ipc/proto.h. */
#ifndef MOKKA_IPC_MSG_H
#define MOKKA_IPC_MSG_H

#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#define IPC_VERSION 1
#define IPC_MAX_MSG 65536
#define IPC_WORKER_FD 3

enum ipc_op {
	IPC_OP_INVALID = 0,
	/* worker -> supervisor */
	IPC_OP_HELLO, IPC_OP_RESULT, IPC_OP_DAEMON, IPC_OP_READY,
	/* supervisor -> worker */
	IPC_OP_STAGE, IPC_OP_PUBLISH, IPC_OP_APPLY, IPC_OP_ABORT, IPC_OP_RUN, IPC_OP_RELOAD,
	IPC_OP_REVOKE, IPC_OP_DISCARD, IPC_OP_STATUS, IPC_OP_SHUTDOWN,
	IPC_OP_COUNT
};

const char *ipc_op_name(enum ipc_op op);
enum ipc_op ipc_op_parse(const char *name);	/* IPC_OP_INVALID if unknown */

/* A decoded message.  json is owned; fd is -1 when none came. */
struct ipc_msg {
	enum ipc_op op;
	uint64_t gen, seq;
	cJSON *json;
	int fd;
};
void ipc_msg_free(struct ipc_msg *m);

/* Sending: the typed encoders of ipc/proto.h build frames; ipc/sendq.h
 * sends them without blocking. */

/* Receive one message.  Returns 1 on a message, 0 on EOF, -EAGAIN when
 * nothing is waiting (non-blocking socket), -EPROTO on a protocol error
 * (bad JSON, missing/unknown op, wrong types, truncation, oversize,
 * unexpected fds) with why in err. */
int ipc_recv(int sock, struct ipc_msg *m, char *err, size_t errlen);

/* Pure decode of a buffer (used by ipc_recv and the fuzz target). */
int ipc_decode(const char *buf, size_t len, struct ipc_msg *m, char *err, size_t errlen);

/* Legal-op tables.  A worker in a given phase accepts only the listed ops
 * from the supervisor; the supervisor accepts only the listed ops from a
 * worker in a given phase. */
enum ipc_worker_phase {
	IPC_PHASE_HELLO,	/* spawned, hello not yet received/sent */
	IPC_PHASE_IDLE,		/* ready for a command */
	IPC_PHASE_BUSY,		/* executing a command */
	IPC_PHASE_COUNT
};
int ipc_worker_accepts(enum ipc_worker_phase ph, enum ipc_op op);
int ipc_supervisor_accepts(enum ipc_worker_phase ph, enum ipc_op op);

/* Sealed memfd holding data (F_SEAL_WRITE|SHRINK|GROW|SEAL). -errno. */
int ipc_memfd_sealed(const char *name, const void *data, size_t len);
/* Read a whole memfd (checks the seals) into a malloc'd NUL-terminated buffer. */
int ipc_memfd_read(int fd, char **buf, size_t *len);

#endif
