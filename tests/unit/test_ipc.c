/* IPC framing: op names, ipc_decode, send/recv over a real SEQPACKET
 * socketpair (with SCM_RIGHTS), sealed memfds and the legal-op tables; the log settings from the
 * environment. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <cjson/cJSON.h>

#include "ipc/log.h"
#include "ipc/msg.h"
#include "ipc/proto.h"

/* The framing under test, through the one frame builder and sender:
 * send_op consumes extra (may be NULL); send_obj copies obj. */
static int send_op(int sock, enum ipc_op op, uint64_t gen, uint64_t seq, cJSON *extra, int fd)
{
	struct ipc_frame f;
	int r = ipc_frame_build(extra ? extra : cJSON_CreateObject(), op, gen, seq, fd, &f);

	if (r < 0)
		return r;
	r = ipc_frame_send(sock, &f);
	ipc_frame_free(&f);
	return r;
}

static int send_obj(int sock, const cJSON *obj, int fd)
{
	cJSON *o = cJSON_Duplicate(obj, 1);
	const cJSON *op = cJSON_GetObjectItemCaseSensitive(o, "op");
	const cJSON *gen = cJSON_GetObjectItemCaseSensitive(o, "gen");
	const cJSON *seq = cJSON_GetObjectItemCaseSensitive(o, "seq");

	return send_op(sock, ipc_op_parse(op->valuestring), (uint64_t)gen->valuedouble,
		       (uint64_t)seq->valuedouble, o, fd);
}

static char err[256];

static int decode(const char *s, struct ipc_msg *m)
{
	err[0] = '\0';
	m->fd = -1;
	return ipc_decode(s, strlen(s), m, err, sizeof(err));
}

/* ---- op names ---- */

Test(ops, name_round_trip)
{
	for (int op = IPC_OP_INVALID + 1; op < IPC_OP_COUNT; op++) {
		const char *n = ipc_op_name((enum ipc_op)op);
		cr_assert_not_null(n);
		cr_assert_str_neq(n, "invalid");
		cr_assert_eq(ipc_op_parse(n), (enum ipc_op)op, "op %d (%s)", op, n);
	}
	cr_assert_str_eq(ipc_op_name(IPC_OP_STAGE), "stage");
	cr_assert_str_eq(ipc_op_name(IPC_OP_HELLO), "hello");
	cr_assert_str_eq(ipc_op_name(IPC_OP_INVALID), "invalid");
	cr_assert_str_eq(ipc_op_name(IPC_OP_COUNT), "invalid");
	cr_assert_eq(ipc_op_parse("nonsense"), IPC_OP_INVALID);
	cr_assert_eq(ipc_op_parse("Stage"), IPC_OP_INVALID);
	cr_assert_eq(ipc_op_parse(""), IPC_OP_INVALID);
	cr_assert_eq(ipc_op_parse("invalid"), IPC_OP_INVALID);
}

Test(ops, names_are_distinct)
{
	for (int a = 1; a < IPC_OP_COUNT; a++)
		for (int b = a + 1; b < IPC_OP_COUNT; b++)
			cr_assert_str_neq(ipc_op_name((enum ipc_op)a), ipc_op_name((enum ipc_op)b));
}

/* ---- ipc_decode ---- */

Test(decode, valid_message)
{
	struct ipc_msg m;

	cr_assert_eq(decode("{\"v\":1,\"op\":\"stage\",\"gen\":7,\"seq\":42,\"x\":\"y\"}", &m), 1, "%s", err);
	cr_assert_eq(m.op, IPC_OP_STAGE);
	cr_assert_eq(m.gen, 7);
	cr_assert_eq(m.seq, 42);
	cr_assert_not_null(m.json);
	cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(m.json, "x")->valuestring, "y");
	ipc_msg_free(&m);
	cr_assert_null(m.json);
	cr_assert_eq(m.fd, -1);
}

Test(decode, largest_exact_integers)
{
	struct ipc_msg m;

	cr_assert_eq(decode("{\"v\":1,\"op\":\"result\",\"gen\":0,\"seq\":9007199254740992}", &m), 1, "%s", err);
	cr_assert_eq(m.gen, 0);
	cr_assert_eq(m.seq, 9007199254740992ull);
	ipc_msg_free(&m);
	cr_assert_lt(decode("{\"v\":1,\"op\":\"result\",\"gen\":0,\"seq\":1e300}", &m), 0);
	cr_assert_null(m.json);
}

Test(decode, length_is_respected)
{
	struct ipc_msg m = { .fd = -1 };
	const char *s = "{\"v\":1,\"op\":\"run\",\"gen\":1,\"seq\":1}garbage";

	cr_assert_eq(ipc_decode(s, strlen(s) - 7, &m, err, sizeof(err)), 1, "%s", err);
	ipc_msg_free(&m);
	/* cut short: no longer a complete object */
	cr_assert_eq(ipc_decode(s, 10, &m, err, sizeof(err)), -EPROTO);
	cr_assert_null(m.json);
}

static void expect_reject(const char *s)
{
	struct ipc_msg m;
	int r = decode(s, &m);

	cr_assert_eq(r, -EPROTO, "accepted: %s", s);
	cr_assert_null(m.json, "json left behind for %s", s);
	cr_assert_eq(m.op, IPC_OP_INVALID);
	cr_assert_neq(err[0], '\0', "no error text for %s", s);
}

Test(decode, rejects_non_objects)
{
	expect_reject("");
	expect_reject("not json");
	expect_reject("[1,2,3]");
	expect_reject("\"stage\"");
	expect_reject("42");
	expect_reject("null");
	expect_reject("{\"v\":1,\"op\":\"stage\",\"gen\":1,\"seq\":1");
}

Test(decode, rejects_missing_or_wrong_version)
{
	expect_reject("{\"op\":\"stage\",\"gen\":1,\"seq\":1}");
	expect_reject("{\"v\":2,\"op\":\"stage\",\"gen\":1,\"seq\":1}");
	expect_reject("{\"v\":0,\"op\":\"stage\",\"gen\":1,\"seq\":1}");
	expect_reject("{\"v\":\"1\",\"op\":\"stage\",\"gen\":1,\"seq\":1}");
	expect_reject("{\"v\":null,\"op\":\"stage\",\"gen\":1,\"seq\":1}");
	expect_reject("{\"v\":1.5,\"op\":\"stage\",\"gen\":1,\"seq\":1}");
}

Test(decode, rejects_unknown_or_missing_op)
{
	expect_reject("{\"v\":1,\"gen\":1,\"seq\":1}");
	expect_reject("{\"v\":1,\"op\":\"reboot\",\"gen\":1,\"seq\":1}");
	expect_reject("{\"v\":1,\"op\":\"invalid\",\"gen\":1,\"seq\":1}");
	expect_reject("{\"v\":1,\"op\":3,\"gen\":1,\"seq\":1}");
	expect_reject("{\"v\":1,\"op\":null,\"gen\":1,\"seq\":1}");
}

Test(decode, rejects_missing_or_bad_gen_seq)
{
	expect_reject("{\"v\":1,\"op\":\"stage\",\"seq\":1}");
	expect_reject("{\"v\":1,\"op\":\"stage\",\"gen\":1}");
	expect_reject("{\"v\":1,\"op\":\"stage\",\"gen\":-1,\"seq\":1}");
	expect_reject("{\"v\":1,\"op\":\"stage\",\"gen\":1.5,\"seq\":1}");
	expect_reject("{\"v\":1,\"op\":\"stage\",\"gen\":1,\"seq\":0.25}");
	expect_reject("{\"v\":1,\"op\":\"stage\",\"gen\":1,\"seq\":-3}");
	expect_reject("{\"v\":1,\"op\":\"stage\",\"gen\":\"1\",\"seq\":1}");
	expect_reject("{\"v\":1,\"op\":\"stage\",\"gen\":1,\"seq\":true}");
	expect_reject("{\"v\":1,\"op\":\"stage\",\"gen\":18446744073709551616,\"seq\":1}");
}

Test(decode, rejects_oversize)
{
	size_t n = IPC_MAX_MSG + 64;
	char *buf = malloc(n + 1);
	struct ipc_msg m = { .fd = -1 };
	const char *head = "{\"v\":1,\"op\":\"stage\",\"gen\":1,\"seq\":1,\"pad\":\"";

	cr_assert_not_null(buf);
	/* a syntactically valid object, just too big */
	memset(buf, 'a', n);
	memcpy(buf, head, strlen(head));
	buf[n - 2] = '"';
	buf[n - 1] = '}';
	buf[n] = '\0';
	cr_assert_eq(ipc_decode(buf, n, &m, err, sizeof(err)), -EPROTO);
	cr_assert_null(m.json);
	/* the same object at exactly the limit is fine */
	buf[IPC_MAX_MSG - 2] = '"';
	buf[IPC_MAX_MSG - 1] = '}';
	cr_assert_eq(ipc_decode(buf, IPC_MAX_MSG, &m, err, sizeof(err)), 1, "%s", err);
	ipc_msg_free(&m);
	free(buf);
}

/* ---- send / recv over a socketpair ---- */

static int sv[2] = { -1, -1 };

static void pair_setup(void)
{
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
}

static void pair_teardown(void)
{
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	sv[0] = sv[1] = -1;
}

static int recv1(int sock, struct ipc_msg *m)
{
	err[0] = '\0';
	return ipc_recv(sock, m, err, sizeof(err));
}

TestSuite(sock, .init = pair_setup, .fini = pair_teardown);

Test(sock, send_op_and_recv)
{
	struct ipc_msg m;
	cJSON *extra = cJSON_CreateObject();

	cJSON_AddStringToObject(extra, "simulator", "pcibus");
	/* stale members are replaced, not duplicated */
	cJSON_AddStringToObject(extra, "op", "bogus");
	/* 15 significant digits: cJSON 1.7's "%1.15g" printing keeps this
	 * exact (larger values may come back rounded) */
	cr_assert_eq(send_op(sv[0], IPC_OP_HELLO, 3, 999999999999999ull, extra, -1), 0);
	cr_assert_eq(recv1(sv[1], &m), 1, "%s", err);
	cr_assert_eq(m.op, IPC_OP_HELLO);
	cr_assert_eq(m.gen, 3);
	cr_assert_eq(m.seq, 999999999999999ull);
	cr_assert_eq(m.fd, -1);
	cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(m.json, "simulator")->valuestring, "pcibus");
	cr_assert_eq(cJSON_GetObjectItemCaseSensitive(m.json, "v")->valueint, IPC_VERSION);
	ipc_msg_free(&m);
	/* nothing else queued */
	cr_assert_eq(recv1(sv[1], &m), -EAGAIN);
}

Test(sock, send_replaces_caller_version)
{
	struct ipc_msg m;
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "v", 99);
	cJSON_AddStringToObject(o, "op", "ready");
	cJSON_AddNumberToObject(o, "gen", 1);
	cJSON_AddNumberToObject(o, "seq", 2);
	cr_assert_eq(send_obj(sv[1], o, -1), 0);
	cJSON_Delete(o);
	cr_assert_eq(recv1(sv[0], &m), 1, "%s", err);
	cr_assert_eq(m.op, IPC_OP_READY);
	ipc_msg_free(&m);
}

Test(sock, messages_keep_boundaries_and_order)
{
	struct ipc_msg m;

	for (uint64_t i = 0; i < 5; i++)
		cr_assert_eq(send_op(sv[0], IPC_OP_STATUS, 1, i, NULL, -1), 0);
	for (uint64_t i = 0; i < 5; i++) {
		cr_assert_eq(recv1(sv[1], &m), 1, "%s", err);
		cr_assert_eq(m.seq, i);
		ipc_msg_free(&m);
	}
	cr_assert_eq(recv1(sv[1], &m), -EAGAIN);
}

Test(sock, send_oversize_is_emsgsize)
{
	cJSON *o = cJSON_CreateObject();
	char *pad = malloc(IPC_MAX_MSG + 1);
	struct ipc_msg m;

	memset(pad, 'x', IPC_MAX_MSG);
	pad[IPC_MAX_MSG] = '\0';
	cJSON_AddStringToObject(o, "pad", pad);
	free(pad);
	cr_assert_eq(send_op(sv[0], IPC_OP_STAGE, 1, 1, o, -1), -EMSGSIZE);
	cr_assert_eq(recv1(sv[1], &m), -EAGAIN);
}

Test(sock, fd_passing_of_sealed_memfd)
{
	static const char doc[] = "{\"generation\":\"12\",\"hello\":\"world\"}";
	int fd = ipc_memfd_sealed("mokka-test-state", doc, sizeof(doc) - 1);
	struct ipc_msg m;
	char *buf = NULL;
	size_t len = 0;

	cr_assert_geq(fd, 0, "memfd: %s", strerror(-fd));
	/* the seals hold: the content can no longer change */
	cr_assert_lt(write(fd, "x", 1), 0);
	cr_assert_lt(ftruncate(fd, 0), 0);
	cr_assert_eq(send_op(sv[0], IPC_OP_STAGE, 12, 1, NULL, fd), 0);
	close(fd);	/* the receiver's copy keeps it alive */
	cr_assert_eq(recv1(sv[1], &m), 1, "%s", err);
	cr_assert_eq(m.op, IPC_OP_STAGE);
	cr_assert_geq(m.fd, 0);
	cr_assert(fcntl(m.fd, F_GETFD) & FD_CLOEXEC, "received fd must be close-on-exec");
	cr_assert_eq(ipc_memfd_read(m.fd, &buf, &len), 0);
	cr_assert_eq(len, sizeof(doc) - 1);
	cr_assert_str_eq(buf, doc);
	free(buf);
	int rfd = m.fd;
	ipc_msg_free(&m);
	cr_assert_eq(m.fd, -1);
	cr_assert_lt(fcntl(rfd, F_GETFD), 0, "ipc_msg_free must close the fd");
}

Test(sock, empty_sealed_memfd)
{
	int fd = ipc_memfd_sealed("mokka-empty", "", 0);
	char *buf = NULL;
	size_t len = 99;

	cr_assert_geq(fd, 0);
	cr_assert_eq(ipc_memfd_read(fd, &buf, &len), 0);
	cr_assert_eq(len, 0);
	cr_assert_str_eq(buf, "");
	free(buf);
	close(fd);
}

Test(sock, memfd_read_refuses_unsealed)
{
	char *buf = NULL;
	size_t len = 0;
	int fd = memfd_create("mokka-unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "abc", 3), 3);
	cr_assert_eq(ipc_memfd_read(fd, &buf, &len), -EPERM);
	cr_assert_null(buf);
	/* partly sealed is still not enough */
	cr_assert_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	cr_assert_eq(ipc_memfd_read(fd, &buf, &len), -EPERM);
	cr_assert_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), 0);
	cr_assert_eq(ipc_memfd_read(fd, &buf, &len), 0);
	cr_assert_eq(len, 3);
	cr_assert_str_eq(buf, "abc");
	free(buf);
	close(fd);
	/* a memfd without sealing support, and a pipe */
	fd = memfd_create("mokka-nosealing", MFD_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ipc_memfd_read(fd, &buf, &len), -EPERM);
	close(fd);
	int p[2];
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(ipc_memfd_read(p[0], &buf, &len), -EPERM);
	close(p[0]);
	close(p[1]);
}

Test(sock, eof_is_zero)
{
	struct ipc_msg m;

	close(sv[0]);
	sv[0] = -1;
	cr_assert_eq(recv1(sv[1], &m), 0);
	cr_assert_null(m.json);
	cr_assert_eq(m.fd, -1);
}

Test(sock, queued_message_then_eof)
{
	struct ipc_msg m;

	cr_assert_eq(send_op(sv[0], IPC_OP_RESULT, 1, 1, NULL, -1), 0);
	close(sv[0]);
	sv[0] = -1;
	cr_assert_eq(recv1(sv[1], &m), 1, "%s", err);
	ipc_msg_free(&m);
	cr_assert_eq(recv1(sv[1], &m), 0);
}

Test(sock, empty_is_eagain_even_on_blocking_socket)
{
	struct ipc_msg m;

	/* the socket is blocking: ipc_recv must not hang */
	cr_assert_eq(fcntl(sv[1], F_GETFL) & O_NONBLOCK, 0);
	cr_assert_eq(recv1(sv[1], &m), -EAGAIN);
	cr_assert_eq(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	cr_assert_eq(recv1(sv[1], &m), -EAGAIN);
}

static void send_raw(int sock, const void *data, size_t len, const int *fds, int nfds)
{
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds > 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	cr_assert_eq(sendmsg(sock, &mh, MSG_NOSIGNAL), (ssize_t)len, "sendmsg: %s", strerror(errno));
}

Test(sock, garbage_datagram_is_eproto)
{
	struct ipc_msg m;
	static const unsigned char junk[] = { 0xff, 0x00, '{', 0x01, '"', 0x80 };

	send_raw(sv[0], junk, sizeof(junk), NULL, 0);
	cr_assert_eq(recv1(sv[1], &m), -EPROTO);
	cr_assert_null(m.json);
	cr_assert_eq(m.fd, -1);
	cr_assert_neq(err[0], '\0');
	/* the stream stays usable after a bad message */
	cr_assert_eq(send_op(sv[0], IPC_OP_READY, 1, 2, NULL, -1), 0);
	cr_assert_eq(recv1(sv[1], &m), 1, "%s", err);
	cr_assert_eq(m.seq, 2);
	ipc_msg_free(&m);
}

Test(sock, bad_fields_are_eproto_and_fd_closed)
{
	struct ipc_msg m;
	const char *s = "{\"v\":1,\"op\":\"warp\",\"gen\":1,\"seq\":1}";
	int p[2];

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	send_raw(sv[0], s, strlen(s), &p[0], 1);
	close(p[0]);
	cr_assert_eq(recv1(sv[1], &m), -EPROTO);
	cr_assert_eq(m.fd, -1);
	/* the received copy of the read end was closed: the pipe now has no
	 * reader, so a write fails with EPIPE */
	signal(SIGPIPE, SIG_IGN);
	cr_assert_lt(write(p[1], "x", 1), 0);
	cr_assert_eq(errno, EPIPE);
	close(p[1]);
}

Test(sock, two_fds_is_eproto_and_both_closed)
{
	struct ipc_msg m;
	const char *s = "{\"v\":1,\"op\":\"stage\",\"gen\":1,\"seq\":1}";
	int a[2], b[2], fds[2];

	cr_assert_eq(pipe2(a, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(b, O_CLOEXEC), 0);
	fds[0] = a[0];
	fds[1] = b[0];
	send_raw(sv[0], s, strlen(s), fds, 2);
	close(a[0]);
	close(b[0]);
	cr_assert_eq(recv1(sv[1], &m), -EPROTO);
	cr_assert_eq(m.fd, -1);
	cr_assert_null(m.json);
	signal(SIGPIPE, SIG_IGN);
	cr_assert_lt(write(a[1], "x", 1), 0, "first received fd leaked");
	cr_assert_lt(write(b[1], "x", 1), 0, "second received fd leaked");
	close(a[1]);
	close(b[1]);
}

Test(sock, oversize_datagram_is_eproto)
{
	size_t n = IPC_MAX_MSG + 100;
	char *buf = malloc(n);
	struct ipc_msg m;
	int sz = (int)n * 2;

	memset(buf, ' ', n);
	buf[0] = '{';
	buf[n - 1] = '}';
	cr_assert_eq(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)), 0);
	send_raw(sv[0], buf, n, NULL, 0);
	free(buf);
	cr_assert_eq(recv1(sv[1], &m), -EPROTO);
	cr_assert_null(m.json);
}

/* ---- legal-op tables ---- */

Test(tables, worker_side)
{
	cr_assert(ipc_worker_accepts(IPC_PHASE_IDLE, IPC_OP_STAGE));
	cr_assert(ipc_worker_accepts(IPC_PHASE_IDLE, IPC_OP_APPLY));
	cr_assert(ipc_worker_accepts(IPC_PHASE_IDLE, IPC_OP_PUBLISH));
	cr_assert(ipc_worker_accepts(IPC_PHASE_IDLE, IPC_OP_DISCARD));
	cr_assert(ipc_worker_accepts(IPC_PHASE_IDLE, IPC_OP_SHUTDOWN));
	cr_assert_not(ipc_worker_accepts(IPC_PHASE_BUSY, IPC_OP_STAGE));
	cr_assert_not(ipc_worker_accepts(IPC_PHASE_BUSY, IPC_OP_APPLY));
	cr_assert_not(ipc_worker_accepts(IPC_PHASE_BUSY, IPC_OP_PUBLISH));
	cr_assert_not(ipc_worker_accepts(IPC_PHASE_BUSY, IPC_OP_RUN));
	cr_assert(ipc_worker_accepts(IPC_PHASE_BUSY, IPC_OP_ABORT));
	cr_assert(ipc_worker_accepts(IPC_PHASE_BUSY, IPC_OP_STATUS));
	cr_assert(ipc_worker_accepts(IPC_PHASE_BUSY, IPC_OP_SHUTDOWN));
	/* nothing before hello; worker->supervisor ops never */
	for (int op = 0; op < IPC_OP_COUNT; op++)
		cr_assert_not(ipc_worker_accepts(IPC_PHASE_HELLO, (enum ipc_op)op), "op %d", op);
	for (int ph = 0; ph < IPC_PHASE_COUNT; ph++) {
		cr_assert_not(ipc_worker_accepts((enum ipc_worker_phase)ph, IPC_OP_INVALID));
		cr_assert_not(ipc_worker_accepts((enum ipc_worker_phase)ph, IPC_OP_HELLO));
		cr_assert_not(ipc_worker_accepts((enum ipc_worker_phase)ph, IPC_OP_RESULT));
		cr_assert_not(ipc_worker_accepts((enum ipc_worker_phase)ph, IPC_OP_DAEMON));
		cr_assert_not(ipc_worker_accepts((enum ipc_worker_phase)ph, IPC_OP_READY));
		cr_assert_not(ipc_worker_accepts((enum ipc_worker_phase)ph, IPC_OP_COUNT));
	}
	cr_assert_not(ipc_worker_accepts(IPC_PHASE_COUNT, IPC_OP_STAGE));
}

Test(tables, supervisor_side)
{
	cr_assert(ipc_supervisor_accepts(IPC_PHASE_HELLO, IPC_OP_HELLO));
	cr_assert_not(ipc_supervisor_accepts(IPC_PHASE_IDLE, IPC_OP_HELLO));
	cr_assert_not(ipc_supervisor_accepts(IPC_PHASE_BUSY, IPC_OP_HELLO));
	cr_assert(ipc_supervisor_accepts(IPC_PHASE_BUSY, IPC_OP_RESULT));
	cr_assert_not(ipc_supervisor_accepts(IPC_PHASE_IDLE, IPC_OP_RESULT));
	cr_assert_not(ipc_supervisor_accepts(IPC_PHASE_HELLO, IPC_OP_RESULT));
	cr_assert(ipc_supervisor_accepts(IPC_PHASE_BUSY, IPC_OP_DAEMON));
	cr_assert_not(ipc_supervisor_accepts(IPC_PHASE_HELLO, IPC_OP_READY));
	/* supervisor->worker ops are never accepted from a worker */
	for (int ph = 0; ph < IPC_PHASE_COUNT; ph++)
		for (int op = IPC_OP_STAGE; op < IPC_OP_COUNT; op++)
			cr_assert_not(ipc_supervisor_accepts((enum ipc_worker_phase)ph, (enum ipc_op)op),
				      "phase %d op %s", ph, ipc_op_name((enum ipc_op)op));
	cr_assert_not(ipc_supervisor_accepts(IPC_PHASE_COUNT, IPC_OP_HELLO));
	cr_assert_not(ipc_supervisor_accepts(IPC_PHASE_HELLO, IPC_OP_COUNT));
}

/* The supervisor's log settings reach a daemon through the environment:
 * log_env lays MOKKA_LOG_* over the defaults, an unknown value keeps the
 * default, and the names round-trip through the parsers. */
Test(log, env_over_defaults)
{
	enum log_level lvl = LOG_LVL_INFO;
	enum log_format fmt = LOG_FMT_TEXT;

	setenv("MOKKA_LOG_LEVEL", "debug", 1);
	setenv("MOKKA_LOG_FORMAT", "json", 1);
	log_env(&lvl, &fmt);
	cr_assert_eq(lvl, LOG_LVL_DEBUG);
	cr_assert_eq(fmt, LOG_FMT_JSON);
	setenv("MOKKA_LOG_LEVEL", "loud", 1);
	setenv("MOKKA_LOG_FORMAT", "xml", 1);
	log_env(&lvl, &fmt);
	cr_assert_eq(lvl, LOG_LVL_DEBUG, "an unknown level keeps what was there");
	cr_assert_eq(fmt, LOG_FMT_JSON);
	for (int i = LOG_LVL_ERROR; i <= LOG_LVL_DEBUG; i++) {
		enum log_level back;

		cr_assert_eq(log_parse_level(log_level_name((enum log_level)i), &back), 0);
		cr_assert_eq(back, (enum log_level)i);
	}
	for (int i = LOG_FMT_TEXT; i <= LOG_FMT_JSON; i++) {
		enum log_format back;

		cr_assert_eq(log_parse_format(log_format_name((enum log_format)i), &back), 0);
		cr_assert_eq(back, (enum log_format)i);
	}
	unsetenv("MOKKA_LOG_LEVEL");
	unsetenv("MOKKA_LOG_FORMAT");
}
