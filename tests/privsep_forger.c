/* Test-only stand-in for a compromised worker (check_PROGRAMS, never
 * installed): speaks the protocol like a simulator, but answers run and
 * reload with a forged daemon spec chosen by MOKKA_TEST_FORGE:
 *   binary  a binary its row does not list ("evil")
 *   path    a path instead of a bare name ("../evil")
 *   env     a legitimate daemon with an env key outside the row
 *   args    a legitimate daemon with more arguments than the row allows
 * tests/integration/privsep_forged_daemon.sh installs it as a worker in a
 * private libexecdir and checks the supervisor runs nothing. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ipc/msg.h"
#include "ipc/proto.h"

static int sock = IPC_WORKER_FD;

static void send_frame(int r, struct ipc_frame *f)
{
	if (r < 0 || ipc_frame_send(sock, f) < 0)
		exit(4);
	ipc_frame_free(f);
}

/* Raw JSON: the typed encoder would refuse a path as a name. */
static void send_forged(uint64_t gen, uint64_t seq, const char *how)
{
	cJSON *o = cJSON_CreateObject(), *argv = cJSON_AddArrayToObject(o, "argv"),
	      *env = cJSON_AddArrayToObject(o, "env");
	const char *name = "mokka-fabricmanager";
	struct ipc_frame f;

	if (strcmp(how, "binary") == 0)
		name = "evil";
	else if (strcmp(how, "path") == 0)
		name = "../evil";
	else if (strcmp(how, "env") == 0)
		cJSON_AddItemToArray(env, cJSON_CreateString("LD_PRELOAD=/tmp/evil.so"));
	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddStringToObject(o, "reload_file", "");
	cJSON_AddItemToArray(argv, cJSON_CreateString(name));
	for (int i = 0; strcmp(how, "args") == 0 && i < 12; i++)
		cJSON_AddItemToArray(argv, cJSON_CreateString("--extra"));
	send_frame(ipc_frame_build(o, IPC_OP_DAEMON, gen, seq, -1, &f), &f);
}

static void send_ok(const struct ipc_msg *m)
{
	struct ipc_result res = { .op = m->op, .ok = true };
	struct ipc_ready rd = { .ready = true };
	struct ipc_frame f;

	if (m->op != IPC_OP_STATUS)
		send_frame(ipc_encode_result(m->gen, m->seq, &res, &f), &f);
	if (m->op == IPC_OP_STAGE || m->op == IPC_OP_STATUS)
		send_frame(ipc_encode_ready(m->gen, m->seq, &rd, &f), &f);
}

int main(int argc, char **argv)
{
	const char *how = getenv("MOKKA_TEST_FORGE");
	const char *base = strrchr(argv[0], '/');
	struct ipc_hello h = { .pid = getpid(), .roles = IPC_ROLE_SIMULATOR | IPC_ROLE_DAEMON };
	struct ipc_frame f;
	char err[256];

	base = base ? base + 1 : argv[0];
	if (strncmp(base, "mokka-worker-", 13) == 0)
		base += 13;
	snprintf(h.name, sizeof(h.name), "%s", base);
	snprintf(h.version, sizeof(h.version), "forger");
	send_frame(ipc_encode_hello(&h, &f), &f);
	for (;;) {
		struct pollfd p = { .fd = sock, .events = POLLIN };
		struct ipc_msg m;
		int r;

		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			return 4;
		r = ipc_recv(sock, &m, err, sizeof(err));
		if (r == -EAGAIN)
			continue;
		if (r <= 0)
			return r == 0 ? 0 : 3;
		if (m.op == IPC_OP_SHUTDOWN) {
			ipc_msg_free(&m);
			return 0;
		}
		if ((m.op == IPC_OP_RUN || m.op == IPC_OP_RELOAD) && how)
			send_forged(m.gen, m.seq, how);
		if (m.op != IPC_OP_ABORT)
			send_ok(&m);
		ipc_msg_free(&m);
	}
}
