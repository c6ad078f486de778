/* IPC framing, op names and the legal-op tables of both sides. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipc/msg.h"

static const char *const op_names[IPC_OP_COUNT] = {
	[IPC_OP_INVALID] = NULL,
	[IPC_OP_HELLO] = "hello", [IPC_OP_RESULT] = "result",
	[IPC_OP_DAEMON] = "daemon", [IPC_OP_READY] = "ready",
	[IPC_OP_STAGE] = "stage", [IPC_OP_PUBLISH] = "publish", [IPC_OP_APPLY] = "apply",
	[IPC_OP_ABORT] = "abort", [IPC_OP_RUN] = "run",
	[IPC_OP_RELOAD] = "reload", [IPC_OP_REVOKE] = "revoke",
	[IPC_OP_DISCARD] = "discard", [IPC_OP_STATUS] = "status",
	[IPC_OP_SHUTDOWN] = "shutdown",
};

const char *ipc_op_name(enum ipc_op op)
{
	return op > IPC_OP_INVALID && op < IPC_OP_COUNT ? op_names[op] : "invalid";
}

enum ipc_op ipc_op_parse(const char *name)
{
	for (int i = 1; i < IPC_OP_COUNT; i++)
		if (strcmp(op_names[i], name) == 0)
			return (enum ipc_op)i;
	return IPC_OP_INVALID;
}

/* Which supervisor ops a worker accepts in each phase.  A worker handles
 * one command at a time; only abort and status may arrive while busy (the
 * worker reads them between surfaces). */
#define B(op) (1u << (op))
static const unsigned worker_accepts[IPC_PHASE_COUNT] = {
	[IPC_PHASE_HELLO] = 0,
	[IPC_PHASE_IDLE] = B(IPC_OP_STAGE) | B(IPC_OP_PUBLISH) | B(IPC_OP_APPLY) | B(IPC_OP_RUN) |
			   B(IPC_OP_RELOAD) | B(IPC_OP_REVOKE) | B(IPC_OP_DISCARD) |
			   B(IPC_OP_STATUS) | B(IPC_OP_SHUTDOWN) | B(IPC_OP_ABORT),
	[IPC_PHASE_BUSY] = B(IPC_OP_ABORT) | B(IPC_OP_STATUS) | B(IPC_OP_SHUTDOWN),
};

/* Which worker ops the supervisor accepts in each phase of that worker. */
static const unsigned supervisor_accepts[IPC_PHASE_COUNT] = {
	[IPC_PHASE_HELLO] = B(IPC_OP_HELLO),
	[IPC_PHASE_IDLE] = B(IPC_OP_READY),
	[IPC_PHASE_BUSY] = B(IPC_OP_RESULT) | B(IPC_OP_DAEMON) | B(IPC_OP_READY),
};

int ipc_worker_accepts(enum ipc_worker_phase ph, enum ipc_op op)
{
	return ph < IPC_PHASE_COUNT && op < IPC_OP_COUNT && (worker_accepts[ph] & B(op));
}

int ipc_supervisor_accepts(enum ipc_worker_phase ph, enum ipc_op op)
{
	return ph < IPC_PHASE_COUNT && op < IPC_OP_COUNT && (supervisor_accepts[ph] & B(op));
}

void ipc_msg_free(struct ipc_msg *m)
{
	cJSON_Delete(m->json);
	m->json = NULL;
	if (m->fd >= 0)
		close(m->fd);
	m->fd = -1;
}

static int get_u53(const cJSON *o, const char *key, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9007199254740992.0 ||
	    v->valuedouble != (double)(uint64_t)v->valuedouble)
		return -EPROTO;
	*out = (uint64_t)v->valuedouble;
	return 0;
}

int ipc_decode(const char *buf, size_t len, struct ipc_msg *m, char *err, size_t errlen)
{
	const cJSON *v;

	m->json = NULL;
	m->op = IPC_OP_INVALID;
	if (len > IPC_MAX_MSG) {
		snprintf(err, errlen, "message of %zu bytes exceeds %d", len, IPC_MAX_MSG);
		return -EPROTO;
	}
	m->json = cJSON_ParseWithLength(buf, len);
	if (!m->json || !cJSON_IsObject(m->json)) {
		snprintf(err, errlen, "message is not a JSON object");
		goto bad;
	}
	v = cJSON_GetObjectItemCaseSensitive(m->json, "v");
	if (!cJSON_IsNumber(v) || v->valuedouble != IPC_VERSION) {
		snprintf(err, errlen, "missing or unsupported protocol version \"v\"");
		goto bad;
	}
	v = cJSON_GetObjectItemCaseSensitive(m->json, "op");
	if (!cJSON_IsString(v) || (m->op = ipc_op_parse(v->valuestring)) == IPC_OP_INVALID) {
		snprintf(err, errlen, "missing or unknown \"op\"");
		goto bad;
	}
	if (get_u53(m->json, "gen", &m->gen) < 0 || get_u53(m->json, "seq", &m->seq) < 0) {
		snprintf(err, errlen, "op %s: \"gen\" and \"seq\" must be non-negative integers",
			 ipc_op_name(m->op));
		goto bad;
	}
	return 1;
bad:
	cJSON_Delete(m->json);
	m->json = NULL;
	m->op = IPC_OP_INVALID;
	return -EPROTO;
}

int ipc_recv(int sock, struct ipc_msg *m, char *err, size_t errlen)
{
	/* One byte more than the limit so an oversize message shows as
	 * MSG_TRUNC rather than being silently cut. */
	static char buf[IPC_MAX_MSG + 1];
	union {
		char b[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.b, .msg_controllen = sizeof(u.b) };
	ssize_t n;
	int r;

	m->fd = -1;
	m->json = NULL;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nfd; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (m->fd < 0)
				m->fd = fd;
			else
				close(fd);	/* more than one: protocol error below */
			if (i > 0)
				mh.msg_flags |= MSG_CTRUNC;
		}
	}
	if (n == 0 && m->fd < 0)
		return 0;
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC) || (size_t)n > IPC_MAX_MSG) {
		snprintf(err, errlen, "truncated message (flags 0x%x, %zd bytes)", mh.msg_flags, n);
		goto bad;
	}
	r = ipc_decode(buf, (size_t)n, m, err, errlen);
	if (r < 0)
		goto bad;
	return 1;
bad:
	if (m->fd >= 0)
		close(m->fd);
	m->fd = -1;
	return -EPROTO;
}

int ipc_memfd_sealed(const char *name, const void *data, size_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	const char *p = data;
	size_t off = 0;

	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(fd, p + off, len - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			close(fd);
			return -e;
		}
		off += (size_t)n;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

int ipc_memfd_read(int fd, char **buf, size_t *len)
{
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);
	const int want = F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW;

	/* Only an immutable snapshot is trusted: the sender cannot change it
	 * under us after the checks. */
	if (seals < 0 || (seals & want) != want)
		return -EPERM;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size > (64 << 20))
		return -EFBIG;
	*len = (size_t)st.st_size;
	*buf = malloc(*len + 1);
	if (!*buf)
		return -ENOMEM;
	size_t off = 0;
	while (off < *len) {
		ssize_t n = pread(fd, *buf + off, *len - off, (off_t)off);
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;
			if (n < 0 && errno == EINTR)
				continue;
			free(*buf);
			*buf = NULL;
			return -e;
		}
		off += (size_t)n;
	}
	(*buf)[*len] = '\0';
	return 0;
}
