/* Fuzz the IPC decoder and the state decoder with the same bytes.  Both
 * read untrusted input (a worker's message; the memfd a worker maps), so
 * neither may crash, and whatever they accept must honour their contract.
 * Aborts when a result breaks it. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/msg.h"
#include "ipc/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
