/* The typed IPC protocol between the supervisor and its workers: one
 * encoder and one strict decoder per message.  Both sides use only these;
 * nobody builds or reads message JSON by hand.
 *
 *   worker -> supervisor: hello, result, daemon (spec), ready
 *   supervisor -> worker: stage (with the state memfd), publish, apply,
 *                         abort, run, reload, revoke, discard, status,
 *                         shutdown
 *
 * Decoders take a message whose header ipc_recv/ipc_decode already checked
 * (v, op, gen, seq) and validate everything else: member types, lengths,
 * counts, unknown members, absolute paths, no NUL or newline, KEY=VALUE
 * env.  They return 0 or -EPROTO with "field: why" in err. */
#ifndef MOKKA_IPC_PROTO_H
#define MOKKA_IPC_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ipc/msg.h"

/* An encoded message: JSON text and at most one fd.  The frame owns both
 * (the fd is a dup), so it can wait in a send queue. */
struct ipc_frame {
	char *buf;
	size_t len;
	int fd;			/* -1 = none */
};
void ipc_frame_free(struct ipc_frame *f);
/* Send one frame without blocking: 0, -EAGAIN (socket full: queue it,
 * see ipc/sendq.h), or -errno. */
int ipc_frame_send(int sock, const struct ipc_frame *f);
/* For the encoders: add the header (v, op, gen, seq) to o, print it and
 * dup fd (-1 = none) into f.  Consumes o.  0, -EMSGSIZE, -ENOMEM. */
int ipc_frame_build(cJSON *o, enum ipc_op op, uint64_t gen, uint64_t seq, int fd,
		    struct ipc_frame *f);

/* ---- hello (worker -> supervisor, gen = seq = 0) ---- */
enum { IPC_ROLE_SIMULATOR = 1, IPC_ROLE_APPLIER = 2, IPC_ROLE_DAEMON = 4 };
struct ipc_hello {
	char name[32];		/* simulator name: [a-z0-9_-], 1..31 chars */
	pid_t pid;
	char version[64];
	unsigned roles;		/* IPC_ROLE_* */
};
int ipc_encode_hello(const struct ipc_hello *h, struct ipc_frame *f);
int ipc_decode_hello(const struct ipc_msg *m, struct ipc_hello *h, char *err, size_t errlen);

/* ---- result (worker -> supervisor): per-surface errors ---- */
#define IPC_MAX_ERRORS 32
struct ipc_surface_error {
	char surface[128];
	char message[512];
};
struct ipc_result {
	enum ipc_op op;		/* the command this answers ("for") */
	bool ok;
	int nerrors;
	struct ipc_surface_error errors[IPC_MAX_ERRORS];
};
int ipc_encode_result(uint64_t gen, uint64_t seq, const struct ipc_result *r,
		      struct ipc_frame *f);
int ipc_decode_result(const struct ipc_msg *m, struct ipc_result *r, char *err, size_t errlen);
/* "surface: message; surface: message" (or "<op> failed" when there are
 * no errors and !ok; "" when ok). */
void ipc_result_summary(const struct ipc_result *r, char *buf, size_t len);

/* ---- daemon spec (worker -> supervisor, in reply to run/reload) ----
 * The one daemon-spec type of both sides.  name is a bare file name that
 * the supervisor resolves under ITS libexecdir (never a path from the
 * worker) and checks against the worker's row (supervisor/simtable.c).
 * An empty name means "no daemon wanted" (the supervisor stops one). */
#define IPC_DAEMON_NAME_MAX 64
#define IPC_DAEMON_MAX_ARGS 16
#define IPC_DAEMON_MAX_ENV 16
#define IPC_DAEMON_ARG_MAX 4096
#define IPC_PATH_MAX 4096
struct ipc_daemon_spec {
	char name[IPC_DAEMON_NAME_MAX];		/* "mokka-fabricmanager", "" = none */
	char *argv[IPC_DAEMON_MAX_ARGS + 1];	/* heap strings, NULL-terminated */
	char *env[IPC_DAEMON_MAX_ENV + 1];	/* KEY=VALUE, heap, NULL-terminated */
	char reload_file[IPC_PATH_MAX];		/* absolute; "" = none */
	/* Reload only: the simulator's Stage rendered nothing this pass, so
	 * the daemon has nothing new to read (no SIGHUP).  Not part of the
	 * spec's identity (ipc_daemon_spec_equal). */
	bool unchanged;
};
void ipc_daemon_spec_free(struct ipc_daemon_spec *d);
/* Deep copy (dst is overwritten, free it first).  0 or -ENOMEM. */
int ipc_daemon_spec_copy(struct ipc_daemon_spec *dst, const struct ipc_daemon_spec *src);
bool ipc_daemon_spec_equal(const struct ipc_daemon_spec *a, const struct ipc_daemon_spec *b);
/* Append to argv/env (strdup).  0, -E2BIG when full, -ENOMEM. */
int ipc_daemon_spec_add_arg(struct ipc_daemon_spec *d, const char *arg);
int ipc_daemon_spec_add_env(struct ipc_daemon_spec *d, const char *kv);
/* Structural check shared by encoder and decoder: name charset, counts,
 * no NUL/newline, KEY=VALUE env, absolute reload_file.  0 or -EPROTO. */
int ipc_daemon_spec_check(const struct ipc_daemon_spec *d, char *err, size_t errlen);
int ipc_encode_daemon(uint64_t gen, uint64_t seq, const struct ipc_daemon_spec *d,
		      struct ipc_frame *f);
/* On success d owns heap strings: ipc_daemon_spec_free.  On failure d is
 * left empty. */
int ipc_decode_daemon(const struct ipc_msg *m, struct ipc_daemon_spec *d, char *err,
		      size_t errlen);

/* ---- ready (worker -> supervisor) ---- */
struct ipc_ready {
	bool ready;
	char reason[256];
};
int ipc_encode_ready(uint64_t gen, uint64_t seq, const struct ipc_ready *r,
		     struct ipc_frame *f);
int ipc_decode_ready(const struct ipc_msg *m, struct ipc_ready *r, char *err, size_t errlen);

/* ---- commands (supervisor -> worker) ----
 * stage carries exactly one fd (the sealed state memfd, dup'd into the
 * frame); every other command carries none. */
struct ipc_cmd {
	enum ipc_op op;		/* IPC_OP_STAGE .. IPC_OP_SHUTDOWN */
	uint64_t gen, seq;
};
bool ipc_op_is_cmd(enum ipc_op op);
int ipc_encode_cmd(const struct ipc_cmd *c, int fd, struct ipc_frame *f);
/* Checks the op is a command and the fd rule; the fd stays in m. */
int ipc_decode_cmd(const struct ipc_msg *m, struct ipc_cmd *c, char *err, size_t errlen);

#endif
