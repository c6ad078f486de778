/* Typed IPC messages (ipc/proto.h): every encoder round-trips through its
 * decoder, every decoder rejection names the field, and the send queue
 * keeps order across a full socket. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "ipc/proto.h"
#include "ipc/sendq.h"

static char err[512];

/* Frame -> header decode (the fd travels as on the socket). */
static void to_msg(struct ipc_frame *f, struct ipc_msg *m)
{
	err[0] = '\0';
	cr_assert_eq(ipc_decode(f->buf, f->len, m, err, sizeof(err)), 1, "%s", err);
	m->fd = f->fd;
	f->fd = -1;
	ipc_frame_free(f);
}

/* Raw JSON -> header-decoded message (must pass the header check). */
static void raw(const char *json, struct ipc_msg *m)
{
	m->fd = -1;
	cr_assert_eq(ipc_decode(json, strlen(json), m, err, sizeof(err)), 1, "%s: %s", json, err);
}

#define HDR(op) "{\"v\":1,\"op\":\"" op "\",\"gen\":1,\"seq\":2"

Test(proto, hello_round_trip)
{
	struct ipc_hello h = { .name = "gpudriver", .pid = 1234, .version = "1.2.3",
			       .roles = IPC_ROLE_SIMULATOR | IPC_ROLE_APPLIER }, o;
	struct ipc_frame f;
	struct ipc_msg m;

	cr_assert_eq(ipc_encode_hello(&h, &f), 0);
	to_msg(&f, &m);
	cr_assert_eq(m.op, IPC_OP_HELLO);
	cr_assert_eq(ipc_decode_hello(&m, &o, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(o.name, "gpudriver");
	cr_expect_eq(o.pid, 1234);
	cr_expect_str_eq(o.version, "1.2.3");
	cr_expect_eq(o.roles, IPC_ROLE_SIMULATOR | IPC_ROLE_APPLIER);
	ipc_msg_free(&m);
}

static void expect_bad(const char *json, int (*dec)(const struct ipc_msg *, void *, char *, size_t),
		       void *out, const char *why)
{
	struct ipc_msg m;

	raw(json, &m);
	cr_expect_eq(dec(&m, out, err, sizeof(err)), -EPROTO, "accepted: %s", json);
	cr_expect(strstr(err, why), "%s: error \"%s\" does not say \"%s\"", json, err, why);
	ipc_msg_free(&m);
}
#define BAD(json, fn, out, why) \
	expect_bad(json, (int (*)(const struct ipc_msg *, void *, char *, size_t))fn, out, why)

Test(proto, hello_rejections)
{
	struct ipc_hello h;

	BAD(HDR("hello") ",\"name\":\"Bad/Name\",\"pid\":1,\"version\":\"x\",\"roles\":[]}",
	    ipc_decode_hello, &h, "name");
	BAD(HDR("hello") ",\"name\":\"\",\"pid\":1,\"version\":\"x\",\"roles\":[]}",
	    ipc_decode_hello, &h, "name");
	BAD(HDR("hello") ",\"name\":\"a\",\"pid\":0,\"version\":\"x\",\"roles\":[]}",
	    ipc_decode_hello, &h, "pid");
	BAD(HDR("hello") ",\"name\":\"a\",\"pid\":1.5,\"version\":\"x\",\"roles\":[]}",
	    ipc_decode_hello, &h, "pid");
	BAD(HDR("hello") ",\"name\":\"a\",\"pid\":1,\"version\":\"x\",\"roles\":[\"root\"]}",
	    ipc_decode_hello, &h, "roles");
	BAD(HDR("hello") ",\"name\":\"a\",\"pid\":1,\"version\":\"x\",\"roles\":[\"daemon\",\"daemon\"]}",
	    ipc_decode_hello, &h, "twice");
	BAD(HDR("hello") ",\"name\":\"a\",\"pid\":1,\"version\":7,\"roles\":[]}",
	    ipc_decode_hello, &h, "version");
	BAD(HDR("hello") ",\"name\":\"a\",\"pid\":1,\"version\":\"x\",\"roles\":[],\"extra\":1}",
	    ipc_decode_hello, &h, "extra");
	BAD(HDR("ready") ",\"ready\":true,\"reason\":\"\"}", ipc_decode_hello, &h, "expected a hello");
}

Test(proto, result_round_trip_and_summary)
{
	static struct ipc_result r, o;
	struct ipc_frame f;
	struct ipc_msg m;
	char sum[256];

	r.op = IPC_OP_STAGE;
	r.ok = false;
	r.nerrors = 2;
	snprintf(r.errors[0].surface, sizeof(r.errors[0].surface), "/proc/driver");
	snprintf(r.errors[0].message, sizeof(r.errors[0].message), "mkdir: denied\nsecond line");
	snprintf(r.errors[1].surface, sizeof(r.errors[1].surface), "manifest");
	snprintf(r.errors[1].message, sizeof(r.errors[1].message), "save failed");
	cr_assert_eq(ipc_encode_result(5, 9, &r, &f), 0);
	to_msg(&f, &m);
	cr_expect_eq(m.gen, 5);
	cr_expect_eq(m.seq, 9);
	cr_assert_eq(ipc_decode_result(&m, &o, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(o.op, IPC_OP_STAGE);
	cr_expect_not(o.ok);
	cr_assert_eq(o.nerrors, 2);
	cr_expect_str_eq(o.errors[0].message, "mkdir: denied\nsecond line");
	cr_expect_str_eq(o.errors[1].surface, "manifest");
	ipc_result_summary(&o, sum, sizeof(sum));
	cr_expect_str_eq(sum, "/proc/driver: mkdir: denied\nsecond line; manifest: save failed");
	o.nerrors = 0;
	ipc_result_summary(&o, sum, sizeof(sum));
	cr_expect_str_eq(sum, "stage failed");
	o.ok = true;
	ipc_result_summary(&o, sum, sizeof(sum));
	cr_expect_str_eq(sum, "");
	ipc_msg_free(&m);
	r.op = IPC_OP_HELLO;
	cr_expect_eq(ipc_encode_result(1, 1, &r, &f), -EINVAL, "a result answers a command");
}

Test(proto, result_rejections)
{
	static struct ipc_result r;
	char big[700], json[1024];

	BAD(HDR("result") ",\"for\":\"hello\",\"ok\":true,\"errors\":[]}", ipc_decode_result, &r, "for");
	BAD(HDR("result") ",\"for\":\"stage\",\"ok\":1,\"errors\":[]}", ipc_decode_result, &r, "ok");
	BAD(HDR("result") ",\"for\":\"stage\",\"ok\":true,\"errors\":{}}", ipc_decode_result, &r, "errors");
	BAD(HDR("result") ",\"for\":\"stage\",\"ok\":true,\"errors\":[{\"surface\":\"a\"}]}",
	    ipc_decode_result, &r, "errors[0]");
	BAD(HDR("result") ",\"for\":\"stage\",\"ok\":true,\"errors\":[{\"surface\":\"a\\nb\",\"message\":\"m\"}]}",
	    ipc_decode_result, &r, "errors[0].surface");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	snprintf(json, sizeof(json), HDR("result") ",\"for\":\"stage\",\"ok\":true,"
		 "\"errors\":[{\"surface\":\"a\",\"message\":\"%s\"}]}", big);
	BAD(json, ipc_decode_result, &r, "errors[0].message");
	BAD(HDR("result") ",\"for\":\"stage\",\"ok\":true,\"errors\":[],\"pid\":1}",
	    ipc_decode_result, &r, "pid");
	/* 33 errors */
	char many[4096] = HDR("result") ",\"for\":\"stage\",\"ok\":false,\"errors\":[";
	for (int i = 0; i < IPC_MAX_ERRORS + 1; i++)
		strcat(many, i ? ",{\"surface\":\"s\",\"message\":\"m\"}" : "{\"surface\":\"s\",\"message\":\"m\"}");
	strcat(many, "]}");
	BAD(many, ipc_decode_result, &r, "more than");
}

Test(proto, daemon_round_trip)
{
	struct ipc_daemon_spec d = { .name = "mock-ib", .reload_file = "/var/lib/x/ib.json" }, o, c;
	struct ipc_frame f;
	struct ipc_msg m;

	cr_assert_eq(ipc_daemon_spec_add_arg(&d, "mock-ib"), 0);
	cr_assert_eq(ipc_daemon_spec_add_arg(&d, "--config"), 0);
	cr_assert_eq(ipc_daemon_spec_add_env(&d, "MOKKA_LOG_LEVEL=debug"), 0);
	cr_assert_eq(ipc_encode_daemon(3, 4, &d, &f), 0);
	to_msg(&f, &m);
	cr_assert_eq(ipc_decode_daemon(&m, &o, err, sizeof(err)), 0, "%s", err);
	cr_expect(ipc_daemon_spec_equal(&d, &o));
	cr_assert_eq(ipc_daemon_spec_copy(&c, &o), 0);
	cr_expect(ipc_daemon_spec_equal(&c, &d));
	cr_expect_str_eq(o.argv[1], "--config");
	cr_expect_null(o.argv[2]);
	cr_expect_str_eq(o.env[0], "MOKKA_LOG_LEVEL=debug");
	cr_expect_not(o.unchanged);
	ipc_daemon_spec_free(&c);
	ipc_daemon_spec_free(&o);
	ipc_msg_free(&m);
	/* "unchanged" travels, and is not part of the spec's identity */
	d.unchanged = true;
	cr_assert_eq(ipc_encode_daemon(3, 5, &d, &f), 0);
	to_msg(&f, &m);
	cr_assert_eq(ipc_decode_daemon(&m, &o, err, sizeof(err)), 0, "%s", err);
	cr_expect(o.unchanged);
	o.unchanged = false;
	cr_expect(ipc_daemon_spec_equal(&d, &o));
	ipc_daemon_spec_free(&o);
	ipc_msg_free(&m);
	/* an empty spec: no daemon wanted */
	struct ipc_daemon_spec none = { 0 };
	cr_assert_eq(ipc_encode_daemon(1, 1, &none, &f), 0);
	to_msg(&f, &m);
	cr_assert_eq(ipc_decode_daemon(&m, &o, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(o.name[0], '\0');
	ipc_msg_free(&m);
	/* the encoder refuses what the decoder would */
	snprintf(d.name, sizeof(d.name), "../mock-ib");
	cr_expect_eq(ipc_encode_daemon(1, 1, &d, &f), -EINVAL);
	ipc_daemon_spec_free(&d);
	for (int i = 0; i < IPC_DAEMON_MAX_ARGS; i++)
		cr_assert_eq(ipc_daemon_spec_add_arg(&d, "a"), 0);
	cr_expect_eq(ipc_daemon_spec_add_arg(&d, "a"), -E2BIG);
	ipc_daemon_spec_free(&d);
}

Test(proto, daemon_rejections)
{
	struct ipc_daemon_spec d;
	static const struct { const char *json, *why; } bad[] = {
		{ HDR("daemon") ",\"name\":\"/bin/sh\",\"reload_file\":\"\",\"argv\":[\"sh\"],\"env\":[]}", "path" },
		{ HDR("daemon") ",\"name\":\"..\",\"reload_file\":\"\",\"argv\":[\"sh\"],\"env\":[]}", "dot" },
		{ HDR("daemon") ",\"name\":\"a b\",\"reload_file\":\"\",\"argv\":[\"sh\"],\"env\":[]}", "bare file name" },
		{ HDR("daemon") ",\"name\":\"x\",\"reload_file\":\"rel/p\",\"argv\":[\"x\"],\"env\":[]}", "reload_file" },
		{ HDR("daemon") ",\"name\":\"x\",\"reload_file\":\"/a\\nb\",\"argv\":[\"x\"],\"env\":[]}", "reload_file" },
		{ HDR("daemon") ",\"name\":\"x\",\"reload_file\":\"\",\"argv\":[\"x\"],\"env\":[\"NOEQUALS\"]}", "KEY=VALUE" },
		{ HDR("daemon") ",\"name\":\"x\",\"reload_file\":\"\",\"argv\":[\"x\"],\"env\":[\"lower=1\"]}", "key" },
		{ HDR("daemon") ",\"name\":\"x\",\"reload_file\":\"\",\"argv\":[\"x\"],\"env\":[\"=1\"]}", "KEY=VALUE" },
		{ HDR("daemon") ",\"name\":\"x\",\"reload_file\":\"\",\"argv\":[\"x\"],\"env\":{\"A\":\"b\"}}", "env" },
		{ HDR("daemon") ",\"name\":\"x\",\"reload_file\":\"\",\"argv\":[1],\"env\":[]}", "argv\"[0]" },
		{ HDR("daemon") ",\"name\":\"x\",\"reload_file\":\"\",\"argv\":[\"a\\nb\"],\"env\":[]}", "control" },
		{ HDR("daemon") ",\"name\":\"x\",\"reload_file\":\"\",\"argv\":[],\"env\":[]}", "argv[0] is required" },
		{ HDR("daemon") ",\"name\":\"\",\"reload_file\":\"\",\"argv\":[\"x\"],\"env\":[]}", "no daemon wanted" },
		{ HDR("daemon") ",\"name\":\"x\",\"argv\":[\"x\"],\"env\":[]}", "reload_file" },
		{ HDR("daemon") ",\"name\":\"x\",\"reload_file\":\"\",\"argv\":[\"x\"],\"env\":[],\"path\":\"/x\"}", "path" },
		{ HDR("daemon") ",\"name\":\"x\",\"reload_file\":\"\",\"unchanged\":1,\"argv\":[\"x\"],\"env\":[]}", "true or false" },
		{ HDR("daemon") ",\"name\":\"x\",\"reload_file\":\"\",\"argv\":[\"1\",\"2\",\"3\",\"4\",\"5\","
		  "\"6\",\"7\",\"8\",\"9\",\"10\",\"11\",\"12\",\"13\",\"14\",\"15\",\"16\",\"17\"],\"env\":[]}",
		  "more than 16" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		BAD(bad[i].json, ipc_decode_daemon, &d, bad[i].why);
		cr_expect_eq(d.argv[0], NULL, "a rejected spec is left empty");
	}
}

Test(proto, ready_round_trip_and_rejections)
{
	struct ipc_ready r = { .ready = false, .reason = "stage failed: x" }, o;
	struct ipc_frame f;
	struct ipc_msg m;
	char json[600], big[300];

	cr_assert_eq(ipc_encode_ready(2, 3, &r, &f), 0);
	to_msg(&f, &m);
	cr_assert_eq(ipc_decode_ready(&m, &o, err, sizeof(err)), 0, "%s", err);
	cr_expect_not(o.ready);
	cr_expect_str_eq(o.reason, "stage failed: x");
	ipc_msg_free(&m);
	BAD(HDR("ready") ",\"ready\":\"yes\",\"reason\":\"\"}", ipc_decode_ready, &o, "ready");
	BAD(HDR("ready") ",\"ready\":true}", ipc_decode_ready, &o, "reason");
	memset(big, 'r', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	snprintf(json, sizeof(json), HDR("ready") ",\"ready\":true,\"reason\":\"%s\"}", big);
	BAD(json, ipc_decode_ready, &o, "longer than");
}

Test(proto, commands_round_trip_and_fd_rule)
{
	int fd = ipc_memfd_sealed("t", "x", 1);
	struct ipc_frame f;
	struct ipc_msg m;
	struct ipc_cmd c, o;

	cr_assert_geq(fd, 0);
	for (int op = IPC_OP_STAGE; op <= IPC_OP_SHUTDOWN; op++) {
		c = (struct ipc_cmd){ .op = (enum ipc_op)op, .gen = 7, .seq = (uint64_t)op };
		cr_assert_eq(ipc_encode_cmd(&c, op == IPC_OP_STAGE ? fd : -1, &f), 0, "%d", op);
		cr_expect_eq(f.fd >= 0, op == IPC_OP_STAGE, "only stage carries the state fd");
		to_msg(&f, &m);
		cr_assert_eq(ipc_decode_cmd(&m, &o, err, sizeof(err)), 0, "%s", err);
		cr_expect_eq(o.op, c.op);
		cr_expect_eq(o.gen, 7);
		cr_expect_eq(o.seq, (uint64_t)op);
		ipc_msg_free(&m);
	}
	c = (struct ipc_cmd){ .op = IPC_OP_STAGE };
	cr_expect_eq(ipc_encode_cmd(&c, -1, &f), -EINVAL, "stage without its fd");
	c.op = IPC_OP_APPLY;
	cr_expect_eq(ipc_encode_cmd(&c, fd, &f), -EINVAL, "apply with an fd");
	c.op = IPC_OP_PUBLISH;
	cr_expect_eq(ipc_encode_cmd(&c, fd, &f), -EINVAL, "publish with an fd");
	c.op = IPC_OP_HELLO;
	cr_expect_eq(ipc_encode_cmd(&c, -1, &f), -EINVAL, "hello is not a command");
	BAD(HDR("stage") "}", ipc_decode_cmd, &o, "no state fd");
	BAD(HDR("apply") ",\"x\":1}", ipc_decode_cmd, &o, "unknown member");
	BAD(HDR("result") ",\"for\":\"stage\",\"ok\":true,\"errors\":[]}", ipc_decode_cmd, &o,
	    "not a supervisor command");
	raw(HDR("apply") "}", &m);
	m.fd = dup(fd);
	cr_expect_eq(ipc_decode_cmd(&m, &o, err, sizeof(err)), -EPROTO);
	cr_expect(strstr(err, "unexpected fd"), "%s", err);
	ipc_msg_free(&m);
	close(fd);
}

/* ---- send queue ---- */

Test(sendq, queues_when_full_keeps_order_and_flushes)
{
	int sv[2];
	struct ipc_sendq q;
	struct ipc_frame f;
	struct ipc_cmd c = { .op = IPC_OP_STATUS };
	int sent = 0, r;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	ipc_sendq_init(&q);
	/* a blocking socket still never blocks: sends use MSG_DONTWAIT */
	for (;;) {
		c.seq = (uint64_t)sent;
		cr_assert_eq(ipc_encode_cmd(&c, -1, &f), 0);
		r = ipc_frame_send(sv[0], &f);
		ipc_frame_free(&f);
		if (r == -EAGAIN)
			break;
		cr_assert_eq(r, 0);
		sent++;
	}
	cr_assert_gt(sent, 0);
	for (int i = 0; i < IPC_SENDQ_MAX; i++)
		cr_assert_eq(ipc_sendq_cmd(&q, sv[0], IPC_OP_STATUS, 0, (uint64_t)(sent + i), -1), 0);
	cr_expect(ipc_sendq_wants_out(&q));
	cr_expect_eq(ipc_sendq_cmd(&q, sv[0], IPC_OP_STATUS, 0, 999999, -1), -ENOBUFS,
		     "a bounded queue");
	/* the reader drains; flush sends everything, in order */
	int got = 0;
	for (;;) {
		struct ipc_msg m;
		r = ipc_recv(sv[1], &m, err, sizeof(err));
		if (r == -EAGAIN) {
			if (!ipc_sendq_wants_out(&q))
				break;
			cr_assert_eq(ipc_sendq_flush(&q, sv[0]), 0);
			continue;
		}
		cr_assert_eq(r, 1, "%s", err);
		cr_expect_eq(m.seq, (uint64_t)got, "message %d out of order", got);
		got++;
		ipc_msg_free(&m);
	}
	cr_expect_eq(got, sent + IPC_SENDQ_MAX);
	cr_expect_not(ipc_sendq_wants_out(&q));
	ipc_sendq_clear(&q);
	close(sv[0]);
	close(sv[1]);
}

Test(sendq, broken_socket_is_an_error_and_clear_drops)
{
	int sv[2], fd = ipc_memfd_sealed("t", "x", 1);
	struct ipc_sendq q;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	ipc_sendq_init(&q);
	close(sv[1]);
	cr_expect_eq(ipc_sendq_cmd(&q, sv[0], IPC_OP_STAGE, 1, 1, fd), -EPIPE);
	cr_expect_not(ipc_sendq_wants_out(&q));
	ipc_sendq_clear(&q);
	close(sv[0]);
	close(fd);
}
