/* Typed IPC messages: encoders build the JSON, decoders accept exactly
 * what the encoders produce (known members only, bounded strings and
 * counts) and say which field is wrong and why. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ipc/proto.h"

/* ---- frames ---- */

void ipc_frame_free(struct ipc_frame *f)
{
	free(f->buf);
	f->buf = NULL;
	f->len = 0;
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

int ipc_frame_send(int sock, const struct ipc_frame *f)
{
	struct iovec iov = { .iov_base = f->buf, .iov_len = f->len };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (f->fd >= 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &f->fd, sizeof(int));
	}
	/* MSG_DONTWAIT: never block, whatever the socket's own flags. */
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return 0;
}

int ipc_frame_build(cJSON *o, enum ipc_op op, uint64_t gen, uint64_t seq, int fd,
		      struct ipc_frame *f)
{
	f->buf = NULL;
	f->len = 0;
	f->fd = -1;
	/* The header is ours: stale members are replaced, never duplicated. */
	for (int i = 0; o && i < 4; i++)
		cJSON_DeleteItemFromObjectCaseSensitive(o, (const char *[]){ "v", "op", "gen", "seq" }[i]);
	if (!o || !cJSON_AddNumberToObject(o, "v", IPC_VERSION) ||
	    !cJSON_AddStringToObject(o, "op", ipc_op_name(op)) ||
	    !cJSON_AddNumberToObject(o, "gen", (double)gen) ||
	    !cJSON_AddNumberToObject(o, "seq", (double)seq) ||
	    !(f->buf = cJSON_PrintUnformatted(o))) {
		cJSON_Delete(o);
		return -ENOMEM;
	}
	cJSON_Delete(o);
	f->len = strlen(f->buf);
	if (f->len > IPC_MAX_MSG) {
		ipc_frame_free(f);
		return -EMSGSIZE;
	}
	if (fd >= 0 && (f->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
		int e = errno;
		ipc_frame_free(f);
		return -e;
	}
	return 0;
}

/* ---- validation helpers ---- */

__attribute__((format(printf, 3, 4)))
static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EPROTO;
}

/* Every member is a header member or one of keys (NULL-terminated). */
static int only_members(const struct ipc_msg *m, const char *const *keys, char *err,
			size_t errlen)
{
	static const char *const hdr[] = { "v", "op", "gen", "seq", NULL };
	const cJSON *it;

	cJSON_ArrayForEach(it, m->json) {
		bool known = false;
		for (const char *const *k = hdr; *k && !known; k++)
			known = strcmp(*k, it->string) == 0;
		for (const char *const *k = keys; *k && !known; k++)
			known = strcmp(*k, it->string) == 0;
		if (!known)
			return bad(err, errlen, "%s: unknown member \"%.64s\"", ipc_op_name(m->op),
				   it->string);
	}
	return 0;
}

static bool has_ctl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* A string member of at most size-1 bytes; ctl_ok allows newlines etc.
 * (error texts), names and paths never. */
static int get_str(const struct ipc_msg *m, const cJSON *v, const char *field, size_t size,
		   bool ctl_ok, char *err, size_t errlen)
{
	const char *op = ipc_op_name(m->op);

	if (!cJSON_IsString(v) || !v->valuestring)
		return bad(err, errlen, "%s: \"%s\" must be a string", op, field);
	if (strlen(v->valuestring) >= size)
		return bad(err, errlen, "%s: \"%s\" is longer than %zu bytes", op, field, size - 1);
	if (!ctl_ok && has_ctl(v->valuestring))
		return bad(err, errlen, "%s: \"%s\" contains a control character (newline?)",
			   op, field);
	return 0;
}

static int copy_str(const struct ipc_msg *m, const char *field, char *dst, size_t size,
		    bool ctl_ok, char *err, size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m->json, field);
	int r = get_str(m, v, field, size, ctl_ok, err, errlen);

	if (r == 0)
		memcpy(dst, v->valuestring, strlen(v->valuestring) + 1);
	return r;
}

static int get_bool(const struct ipc_msg *m, const char *field, bool *out, char *err,
		    size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m->json, field);

	if (!cJSON_IsBool(v))
		return bad(err, errlen, "%s: \"%s\" must be true or false", ipc_op_name(m->op),
			   field);
	*out = cJSON_IsTrue(v);
	return 0;
}

static int want_op(const struct ipc_msg *m, enum ipc_op op, char *err, size_t errlen)
{
	if (!m->json || m->op != op)
		return bad(err, errlen, "expected a %s message, got %s", ipc_op_name(op),
			   ipc_op_name(m->op));
	if (m->fd >= 0)
		return bad(err, errlen, "%s: carries an unexpected fd", ipc_op_name(op));
	return 0;
}

static bool name_char(char c, bool upper)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
	       (upper && ((c >= 'A' && c <= 'Z') || c == '.'));
}

/* ---- hello ---- */

static const char *const role_names[] = { "simulator", "applier", "daemon" };

int ipc_encode_hello(const struct ipc_hello *h, struct ipc_frame *f)
{
	cJSON *o = cJSON_CreateObject(), *roles = cJSON_AddArrayToObject(o, "roles");

	cJSON_AddStringToObject(o, "name", h->name);
	cJSON_AddNumberToObject(o, "pid", h->pid);
	cJSON_AddStringToObject(o, "version", h->version);
	for (unsigned i = 0; i < 3; i++)
		if (h->roles & (1u << i))
			cJSON_AddItemToArray(roles, cJSON_CreateString(role_names[i]));
	return ipc_frame_build(o, IPC_OP_HELLO, 0, 0, -1, f);
}

static int decode_roles(const struct ipc_msg *m, unsigned *roles, char *err, size_t errlen)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(m->json, "roles"), *it;

	*roles = 0;
	if (!cJSON_IsArray(a))
		return bad(err, errlen, "hello: \"roles\" must be an array");
	cJSON_ArrayForEach(it, a) {
		unsigned bit = 0;
		for (unsigned i = 0; i < 3 && cJSON_IsString(it); i++)
			if (strcmp(it->valuestring, role_names[i]) == 0)
				bit = 1u << i;
		if (!bit)
			return bad(err, errlen, "hello: \"roles\": not simulator, applier or daemon");
		if (*roles & bit)
			return bad(err, errlen, "hello: \"roles\": %s listed twice", it->valuestring);
		*roles |= bit;
	}
	return 0;
}

int ipc_decode_hello(const struct ipc_msg *m, struct ipc_hello *h, char *err, size_t errlen)
{
	static const char *const keys[] = { "name", "pid", "version", "roles", NULL };
	const cJSON *pid;
	int r;

	memset(h, 0, sizeof(*h));
	if ((r = want_op(m, IPC_OP_HELLO, err, errlen)) < 0 ||
	    (r = only_members(m, keys, err, errlen)) < 0 ||
	    (r = copy_str(m, "name", h->name, sizeof(h->name), false, err, errlen)) < 0 ||
	    (r = copy_str(m, "version", h->version, sizeof(h->version), false, err, errlen)) < 0 ||
	    (r = decode_roles(m, &h->roles, err, errlen)) < 0)
		return r;
	if (!h->name[0])
		return bad(err, errlen, "hello: \"name\" is empty");
	for (const char *p = h->name; *p; p++)
		if (!name_char(*p, false))
			return bad(err, errlen, "hello: \"name\" has a character outside [a-z0-9_-]");
	pid = cJSON_GetObjectItemCaseSensitive(m->json, "pid");
	if (!cJSON_IsNumber(pid) || pid->valuedouble < 1 || pid->valuedouble > 4194304 ||
	    pid->valuedouble != (double)(int)pid->valuedouble)
		return bad(err, errlen, "hello: \"pid\" must be a process id (1..4194304)");
	h->pid = (pid_t)pid->valuedouble;
	return 0;
}

/* ---- result ---- */

int ipc_encode_result(uint64_t gen, uint64_t seq, const struct ipc_result *r,
		      struct ipc_frame *f)
{
	cJSON *o = cJSON_CreateObject(), *a;

	if (!ipc_op_is_cmd(r->op) || r->nerrors < 0 || r->nerrors > IPC_MAX_ERRORS) {
		cJSON_Delete(o);
		return -EINVAL;
	}
	cJSON_AddStringToObject(o, "for", ipc_op_name(r->op));
	cJSON_AddBoolToObject(o, "ok", r->ok);
	a = cJSON_AddArrayToObject(o, "errors");
	for (int i = 0; a && i < r->nerrors; i++) {
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "surface", r->errors[i].surface);
		cJSON_AddStringToObject(e, "message", r->errors[i].message);
		cJSON_AddItemToArray(a, e);
	}
	return ipc_frame_build(o, IPC_OP_RESULT, gen, seq, -1, f);
}

static int decode_error(const struct ipc_msg *m, const cJSON *e, int i,
			struct ipc_surface_error *out, char *err, size_t errlen)
{
	const cJSON *sf = cJSON_GetObjectItemCaseSensitive(e, "surface");
	const cJSON *ms = cJSON_GetObjectItemCaseSensitive(e, "message");
	char field[64];
	int r;

	if (!cJSON_IsObject(e) || cJSON_GetArraySize(e) != 2)
		return bad(err, errlen, "result: \"errors[%d]\" must be {surface, message}", i);
	snprintf(field, sizeof(field), "errors[%d].surface", i);
	if ((r = get_str(m, sf, field, sizeof(out->surface), false, err, errlen)) < 0)
		return r;
	snprintf(field, sizeof(field), "errors[%d].message", i);
	if ((r = get_str(m, ms, field, sizeof(out->message), true, err, errlen)) < 0)
		return r;
	snprintf(out->surface, sizeof(out->surface), "%s", sf->valuestring);
	snprintf(out->message, sizeof(out->message), "%s", ms->valuestring);
	return 0;
}

int ipc_decode_result(const struct ipc_msg *m, struct ipc_result *res, char *err,
		      size_t errlen)
{
	static const char *const keys[] = { "for", "ok", "errors", NULL };
	const cJSON *fo, *a, *e;
	int r;

	memset(res, 0, sizeof(*res));
	if ((r = want_op(m, IPC_OP_RESULT, err, errlen)) < 0 ||
	    (r = only_members(m, keys, err, errlen)) < 0 ||
	    (r = get_bool(m, "ok", &res->ok, err, errlen)) < 0)
		return r;
	fo = cJSON_GetObjectItemCaseSensitive(m->json, "for");
	if (!cJSON_IsString(fo) || !ipc_op_is_cmd(res->op = ipc_op_parse(fo->valuestring)))
		return bad(err, errlen, "result: \"for\" must name a supervisor command");
	a = cJSON_GetObjectItemCaseSensitive(m->json, "errors");
	if (!cJSON_IsArray(a))
		return bad(err, errlen, "result: \"errors\" must be an array");
	if (cJSON_GetArraySize(a) > IPC_MAX_ERRORS)
		return bad(err, errlen, "result: more than %d \"errors\"", IPC_MAX_ERRORS);
	cJSON_ArrayForEach(e, a) {
		r = decode_error(m, e, res->nerrors, &res->errors[res->nerrors], err, errlen);
		if (r < 0)
			return r;
		res->nerrors++;
	}
	return 0;
}

void ipc_result_summary(const struct ipc_result *r, char *buf, size_t len)
{
	size_t off = 0;

	if (len == 0)
		return;
	buf[0] = '\0';
	for (int i = 0; i < r->nerrors && off < len - 1; i++) {
		int n = snprintf(buf + off, len - off, "%s%s: %s", off ? "; " : "",
				 r->errors[i].surface, r->errors[i].message);
		if (n < 0)
			break;
		off += (size_t)n;
	}
	if (!r->ok && !buf[0])
		snprintf(buf, len, "%s failed", ipc_op_name(r->op));
}

/* ---- ready ---- */

int ipc_encode_ready(uint64_t gen, uint64_t seq, const struct ipc_ready *r,
		     struct ipc_frame *f)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddBoolToObject(o, "ready", r->ready);
	cJSON_AddStringToObject(o, "reason", r->reason);
	return ipc_frame_build(o, IPC_OP_READY, gen, seq, -1, f);
}

int ipc_decode_ready(const struct ipc_msg *m, struct ipc_ready *rd, char *err, size_t errlen)
{
	static const char *const keys[] = { "ready", "reason", NULL };
	int r;

	memset(rd, 0, sizeof(*rd));
	if ((r = want_op(m, IPC_OP_READY, err, errlen)) < 0 ||
	    (r = only_members(m, keys, err, errlen)) < 0 ||
	    (r = get_bool(m, "ready", &rd->ready, err, errlen)) < 0 ||
	    (r = copy_str(m, "reason", rd->reason, sizeof(rd->reason), true, err, errlen)) < 0)
		return r;
	return 0;
}

/* ---- commands ---- */

bool ipc_op_is_cmd(enum ipc_op op)
{
	return op >= IPC_OP_STAGE && op <= IPC_OP_SHUTDOWN;
}

int ipc_encode_cmd(const struct ipc_cmd *c, int fd, struct ipc_frame *f)
{
	f->buf = NULL;
	f->fd = -1;
	if (!ipc_op_is_cmd(c->op) || (c->op == IPC_OP_STAGE) != (fd >= 0))
		return -EINVAL;	/* stage carries the state fd, nothing else does */
	return ipc_frame_build(cJSON_CreateObject(), c->op, c->gen, c->seq, fd, f);
}

int ipc_decode_cmd(const struct ipc_msg *m, struct ipc_cmd *c, char *err, size_t errlen)
{
	static const char *const none[] = { NULL };
	int r;

	memset(c, 0, sizeof(*c));
	if (!m->json || !ipc_op_is_cmd(m->op))
		return bad(err, errlen, "%s is not a supervisor command", ipc_op_name(m->op));
	if ((r = only_members(m, none, err, errlen)) < 0)
		return r;
	if (m->op == IPC_OP_STAGE && m->fd < 0)
		return bad(err, errlen, "stage: no state fd attached");
	if (m->op != IPC_OP_STAGE && m->fd >= 0)
		return bad(err, errlen, "%s: carries an unexpected fd", ipc_op_name(m->op));
	c->op = m->op;
	c->gen = m->gen;
	c->seq = m->seq;
	return 0;
}
