/* IPC mode: the worker under the supervisor, socket on fd 3. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ipc/log.h"
#include "ipc/msg.h"
#include "profile/compile.h"
#include "workers/manifest.h"
#include "workers/simulator.h"
#include "workers/worker.h"

/* ---- IPC mode ---- */

static cJSON *errors_json(const struct sim_errors *errs)
{
	cJSON *arr = cJSON_CreateArray();

	for (int i = 0; arr && i < errs->n; i++) {
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "surface", errs->e[i].surface);
		cJSON_AddStringToObject(e, "message", errs->e[i].message);
		cJSON_AddItemToArray(arr, e);
	}
	return arr;
}

static int send_result(struct worker *w, enum ipc_op op, uint64_t gen, uint64_t seq,
		       int r, const struct sim_errors *errs)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "for", ipc_op_name(op));
	cJSON_AddBoolToObject(o, "ok", r == 0);
	cJSON_AddItemToObject(o, "errors", errors_json(errs));
	return ipc_send_op(w->sock, IPC_OP_RESULT, gen, seq, o, -1);
}

static int send_ready(struct worker *w, uint64_t gen, uint64_t seq)
{
	char reason[256];
	bool ready = worker_ready(w, reason, sizeof(reason));
	cJSON *o = cJSON_CreateObject();

	cJSON_AddBoolToObject(o, "ready", ready);
	cJSON_AddStringToObject(o, "reason", reason);
	return ipc_send_op(w->sock, IPC_OP_READY, gen, seq, o, -1);
}

static int send_daemon(struct worker *w, uint64_t gen, uint64_t seq,
		       const struct sim_daemon_spec *d)
{
	cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "argv"),
	      *e = cJSON_AddArrayToObject(o, "env");

	cJSON_AddStringToObject(o, "name", d->name);
	cJSON_AddStringToObject(o, "path", d->path);
	cJSON_AddStringToObject(o, "reload_file", d->reload_file);
	for (int i = 0; d->argv[i]; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(d->argv[i]));
	for (int i = 0; d->env[i]; i++)
		cJSON_AddItemToArray(e, cJSON_CreateString(d->env[i]));
	return ipc_send_op(w->sock, IPC_OP_DAEMON, gen, seq, o, -1);
}

static int load_state_fd(struct worker *w, int fd, char *err, size_t errlen)
{
	char *buf;
	size_t len;
	struct state s;
	int r = ipc_memfd_read(fd, &buf, &len);

	if (r < 0) {
		snprintf(err, errlen, "state memfd: %s", strerror(-r));
		return r;
	}
	r = state_decode(buf, len, &s, err, errlen);
	free(buf);
	if (r < 0)
		return r;
	if (w->have_state)
		state_free(&w->state);
	w->state = s;
	w->have_state = true;
	snprintf(w->ctx.host.mock_root, sizeof(w->ctx.host.mock_root), "%s", s.mock_root);
	return 0;
}

static int handle(struct worker *w, struct ipc_msg *m)
{
	struct sim_errors errs = { 0 };
	char err[512];
	int r = 0;

	switch (m->op) {
	case IPC_OP_STAGE:
		if (m->fd < 0 || load_state_fd(w, m->fd, err, sizeof(err)) < 0) {
			sim_error(&errs, "state", "%s", m->fd < 0 ? "stage without a state fd" : err);
			w->ctx.ready = false;
			return send_result(w, m->op, m->gen, m->seq, -EINVAL, &errs);
		}
		r = worker_stage(w, &errs);
		w->ctx.ready = r == 0;
		if (r)
			snprintf(w->ctx.not_ready_reason, sizeof(w->ctx.not_ready_reason),
				 "stage failed: %s", errs.n ? errs.e[0].message : strerror(-r));
		if (send_result(w, m->op, m->gen, m->seq, r, &errs) < 0)
			return -EPIPE;
		return send_ready(w, m->gen, m->seq);
	case IPC_OP_APPLY:
		if (!w->have_state || w->state.generation != m->gen) {
			sim_error(&errs, "state", "apply for generation %llu without its stage",
				  (unsigned long long)m->gen);
			return send_result(w, m->op, m->gen, m->seq, -EINVAL, &errs);
		}
		r = worker_apply(w, &errs);
		return send_result(w, m->op, m->gen, m->seq, r, &errs);
	case IPC_OP_RUN:
	case IPC_OP_RELOAD: {
		struct sim_daemon_spec d = { 0 };
		if (!w->sim->daemon || !w->have_state) {
			sim_error(&errs, "daemon", "no daemon to describe");
			return send_result(w, m->op, m->gen, m->seq, -EINVAL, &errs);
		}
		r = w->sim->daemon(&w->ctx, &w->state, &d, &errs);
		if (r == 0 && send_daemon(w, m->gen, m->seq, &d) < 0)
			r = -EPIPE;
		sim_daemon_spec_free(&d);
		return send_result(w, m->op, m->gen, m->seq, r, &errs);
	}
	case IPC_OP_REVOKE:
		r = worker_revoke(w, &errs);
		return send_result(w, m->op, m->gen, m->seq, r, &errs);
	case IPC_OP_DISCARD:
		r = worker_discard(w, &errs);
		w->ctx.ready = false;
		snprintf(w->ctx.not_ready_reason, sizeof(w->ctx.not_ready_reason), "discarded");
		return send_result(w, m->op, m->gen, m->seq, r, &errs);
	case IPC_OP_STATUS:
		return send_ready(w, m->gen, m->seq);
	case IPC_OP_ABORT:
		/* Nothing in flight: the abort raced a finished op. */
		return 0;
	case IPC_OP_SHUTDOWN:
		return 1;
	default:
		return -EPROTO;
	}
}

int worker_ipc_mode(struct worker *w)
{
	cJSON *hello = cJSON_CreateObject(), *roles = cJSON_AddArrayToObject(hello, "roles");
	char err[512];

	w->sock = IPC_WORKER_FD;
	/* EOF on fd 3 tells us the supervisor is gone; no signal needed. */
	cJSON_AddStringToObject(hello, "name", w->sim->name);
	cJSON_AddNumberToObject(hello, "pid", getpid());
	cJSON_AddStringToObject(hello, "version", MOKKA_VERSION);
	if (w->sim->roles & SIM_ROLE_STAGE)
		cJSON_AddItemToArray(roles, cJSON_CreateString("simulator"));
	if (w->sim->roles & SIM_ROLE_APPLY)
		cJSON_AddItemToArray(roles, cJSON_CreateString("applier"));
	if (w->sim->roles & SIM_ROLE_DAEMON)
		cJSON_AddItemToArray(roles, cJSON_CreateString("daemon"));
	if (ipc_send_op(w->sock, IPC_OP_HELLO, 0, 0, hello, -1) < 0)
		return WORKER_EXIT_FAILED;
	for (;;) {
		struct pollfd p = { .fd = w->sock, .events = POLLIN };
		struct ipc_msg m;
		int r;

		if (poll(&p, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return WORKER_EXIT_FAILED;
		}
		r = ipc_recv(w->sock, &m, err, sizeof(err));
		if (r == -EAGAIN)
			continue;
		if (r == 0)
			return WORKER_EXIT_OK;	/* supervisor gone */
		if (r < 0 || !ipc_worker_accepts(IPC_PHASE_IDLE, m.op)) {
			log_error("%s: protocol error: %s", w->sim->name,
				  r < 0 ? err : "op not legal in this state");
			if (r > 0)
				ipc_msg_free(&m);
			return WORKER_EXIT_PROTOCOL;
		}
		r = handle(w, &m);
		ipc_msg_free(&m);
		if (r == 1)
			return WORKER_EXIT_OK;
		if (r < 0) {
			log_error("%s: %s", w->sim->name, strerror(-r));
			return r == -EPROTO ? WORKER_EXIT_PROTOCOL : WORKER_EXIT_FAILED;
		}
	}
}

