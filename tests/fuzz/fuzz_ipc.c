/* Fuzz the IPC decoders (the header, then the typed decoder of every
 * message in ipc/proto.h) and the state decoder with the same bytes.  All
 * read untrusted input (a worker's message; the memfd a worker maps), so
 * none may crash, a rejection must say why, and whatever a typed decoder
 * accepts must encode again and decode to the same thing.  Aborts when a
 * result breaks that contract. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/msg.h"
#include "ipc/proto.h"
#include "ipc/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Encode with enc's result in f, then header- and typed-decode it. */
static void redecode(int enc, struct ipc_frame *f, struct ipc_msg *m2)
{
	char err[256] = "";

	if (enc < 0 || ipc_decode(f->buf, f->len, m2, err, sizeof(err)) != 1)
		abort();
	m2->fd = -1;
	ipc_frame_free(f);
}

static void typed_daemon(const struct ipc_msg *m)
{
	struct ipc_daemon_spec d, d2;
	struct ipc_frame f;
	struct ipc_msg m2;
	char err[256] = "";

	if (ipc_decode_daemon(m, &d, err, sizeof(err)) < 0) {
		if (!err[0] || d.argv[0] || d.env[0])
			abort();
		return;
	}
	if (ipc_daemon_spec_check(&d, err, sizeof(err)) < 0)
		abort();
	redecode(ipc_encode_daemon(m->gen, m->seq, &d, &f), &f, &m2);
	if (ipc_decode_daemon(&m2, &d2, err, sizeof(err)) < 0 || !ipc_daemon_spec_equal(&d, &d2))
		abort();
	ipc_daemon_spec_free(&d);
	ipc_daemon_spec_free(&d2);
	ipc_msg_free(&m2);
}

static void typed_other(const struct ipc_msg *m)
{
	static struct ipc_result r, r2;
	struct ipc_hello h, h2;
	struct ipc_ready rd, rd2;
	struct ipc_cmd c, c2;
	struct ipc_frame f;
	struct ipc_msg m2;
	char err[256] = "";
	int ok;

	switch (m->op) {
	case IPC_OP_HELLO:
		if ((ok = ipc_decode_hello(m, &h, err, sizeof(err)) == 0)) {
			redecode(ipc_encode_hello(&h, &f), &f, &m2);
			if (ipc_decode_hello(&m2, &h2, err, sizeof(err)) < 0 || memcmp(&h, &h2, sizeof(h)))
				abort();
		}
		break;
	case IPC_OP_RESULT:
		if ((ok = ipc_decode_result(m, &r, err, sizeof(err)) == 0)) {
			redecode(ipc_encode_result(m->gen, m->seq, &r, &f), &f, &m2);
			if (ipc_decode_result(&m2, &r2, err, sizeof(err)) < 0 || memcmp(&r, &r2, sizeof(r)))
				abort();
		}
		break;
	case IPC_OP_READY:
		if ((ok = ipc_decode_ready(m, &rd, err, sizeof(err)) == 0)) {
			redecode(ipc_encode_ready(m->gen, m->seq, &rd, &f), &f, &m2);
			if (ipc_decode_ready(&m2, &rd2, err, sizeof(err)) < 0 || memcmp(&rd, &rd2, sizeof(rd)))
				abort();
		}
		break;
	default:
		/* a command; no fd came, so stage must be refused */
		if ((ok = ipc_decode_cmd(m, &c, err, sizeof(err)) == 0)) {
			if (c.op == IPC_OP_STAGE)
				abort();
			redecode(ipc_encode_cmd(&c, -1, &f), &f, &m2);
			if (ipc_decode_cmd(&m2, &c2, err, sizeof(err)) < 0 || memcmp(&c, &c2, sizeof(c)))
				abort();
		}
		break;
	}
	if (!ok && !err[0])
		abort();
	if (ok)
		ipc_msg_free(&m2);
}

static void check_msg(const uint8_t *data, size_t size)
{
	struct ipc_msg m = { .fd = -1 };
	char err[256] = "";
	int r = ipc_decode((const char *)data, size, &m, err, sizeof(err));

	if (r != 1 && r != -EPROTO)
		abort();
	if (r < 0) {
		if (m.json || m.op != IPC_OP_INVALID || !err[0])
			abort();
		return;
	}
	if (!m.json || m.op <= IPC_OP_INVALID || m.op >= IPC_OP_COUNT || size > IPC_MAX_MSG ||
	    m.gen > (1ull << 53) || m.seq > (1ull << 53) || m.fd != -1)
		abort();
	if (ipc_op_parse(ipc_op_name(m.op)) != m.op)
		abort();
	if (m.op == IPC_OP_DAEMON)
		typed_daemon(&m);
	else
		typed_other(&m);
	ipc_msg_free(&m);
}

static void check_state(const uint8_t *data, size_t size)
{
	static struct state s;	/* large: keep it off the stack */
	char err[256] = "";
	int r = state_decode((const char *)data, size, &s, err, sizeof(err));

	if (r == -EINVAL) {
		if (!err[0] || s.topology_doc || s.profile_json)
			abort();
		return;
	}
	if (r != 0)
		abort();
	if (s.num_devices < 0 || s.num_devices > STATE_MAX_DEVICES ||
	    s.num_roots < 0 || s.num_roots > STATE_MAX_ROOTS)
		abort();
	for (int i = 0; i < s.num_devices; i++) {
		const struct state_device *d = &s.devices[i];
		if (!state_valid_bdf(d->bus_id) || d->root < -1 || d->root >= s.num_roots)
			abort();
		if (!memchr(d->uuid, 0, sizeof(d->uuid)) || !memchr(d->name, 0, sizeof(d->name)))
			abort();
	}
	for (int i = 0; i < s.num_roots; i++)
		if (!state_valid_root_id(s.roots[i].id))
			abort();
	if (s.topology_doc && strlen(s.topology_doc) != s.topology_len)
		abort();
	/* what decoded encodes again, and that decodes to the same thing */
	char *out = NULL;
	size_t len = 0;
	if (state_encode(&s, &out, &len) == 0) {
		static struct state t;
		if (state_decode(out, len, &t, err, sizeof(err)) != 0 ||
		    t.generation != s.generation || t.num_devices != s.num_devices ||
		    t.num_roots != s.num_roots)
			abort();
		state_free(&t);
		free(out);
	}
	state_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_msg(data, size);
	check_state(data, size);
	return 0;
}
