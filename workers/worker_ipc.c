/* IPC mode: the worker under the supervisor, socket on fd 3.  Every
 * message goes through ipc/proto.h; sends never block (a full socket
 * queues, POLLOUT flushes); what arrives while a command runs is held to
 * the BUSY row of the legal-op table. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ipc/log.h"
#include "ipc/msg.h"
#include "ipc/proto.h"
#include "workers/simulator.h"
#include "workers/worker.h"

/* Queue a frame (encoded or not): 0, or -errno when the socket is broken
 * or the supervisor stopped reading (queue full). */
static int push(struct worker *w, int enc, struct ipc_frame *f)
{
	if (enc < 0)
		return enc;
	return ipc_sendq_push(&w->sendq, w->sock, f);
}

static int send_result(struct worker *w, enum ipc_op op, uint64_t gen, uint64_t seq,
		       int r, const struct sim_errors *errs)
{
	static struct ipc_result res;	/* 20 KiB: off the stack */
	struct ipc_frame f;

	memset(&res, 0, sizeof(res));
	res.op = op;
	res.ok = r == 0;
	res.nerrors = errs->n;
	for (int i = 0; i < errs->n; i++) {
		snprintf(res.errors[i].surface, sizeof(res.errors[i].surface), "%s",
			 errs->e[i].surface);
		snprintf(res.errors[i].message, sizeof(res.errors[i].message), "%s",
			 errs->e[i].message);
	}
	return push(w, ipc_encode_result(gen, seq, &res, &f), &f);
}

static int send_ready(struct worker *w, uint64_t gen, uint64_t seq)
{
	struct ipc_ready rd = { 0 };
	struct ipc_frame f;

	rd.ready = worker_ready(w, rd.reason, sizeof(rd.reason));
	return push(w, ipc_encode_ready(gen, seq, &rd, &f), &f);
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
	/* What Stage renders from, for the incremental skip (stage_skip.h);
	 * a state that cannot be digested is never skipped. */
	if (r == 0 && w->sim->inputs) {
		struct skip_key raw;

		/* The same bytes as last time (a no-op pass): the same sections,
		 * without parsing them again. */
		skip_key_init(&raw);
		skip_key_bytes(&raw, buf, len);
		if (!w->state_key_ok || raw.h != w->state_raw)
			w->state_key_ok = skip_state_key(buf, len, w->sim->stage_ignores,
							 &w->state_key) == 0;
		w->state_raw = raw.h;
	}
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

bool worker_busy_poll(struct worker *w)
{
	char err[256];

	for (;;) {
		struct ipc_msg m;
		struct ipc_cmd c;
		int r = ipc_recv(w->sock, &m, err, sizeof(err));

		if (r == -EAGAIN)
			break;
		if (r == 0) {
			w->shutdown_seen = true;	/* supervisor gone: stop too */
			break;
		}
		if (r > 0 && !ipc_worker_accepts(IPC_PHASE_BUSY, m.op))
			snprintf(err, sizeof(err), "%s received while busy", ipc_op_name(m.op));
		else if (r > 0 && ipc_decode_cmd(&m, &c, err, sizeof(err)) == 0)
			err[0] = '\0';
		if (r < 0 || err[0]) {
			if (!w->proto_error[0])
				snprintf(w->proto_error, sizeof(w->proto_error), "%s", err);
			if (r > 0)
				ipc_msg_free(&m);
			break;
		}
		w->abort_seen |= c.op == IPC_OP_ABORT;
		w->status_seen |= c.op == IPC_OP_STATUS;
		w->shutdown_seen |= c.op == IPC_OP_SHUTDOWN;
		ipc_msg_free(&m);
	}
	return w->abort_seen || w->shutdown_seen || w->proto_error[0];
}

static int op_stage(struct worker *w, const struct ipc_msg *m, struct sim_errors *errs)
{
	char err[512];
	int r;

	if (load_state_fd(w, m->fd, err, sizeof(err)) < 0) {
		sim_error(errs, "state", "%s", err);
		w->ctx.ready = false;
		return -EINVAL;
	}
	r = worker_stage(w, errs);
	/* Generational surfaces serve what was last published: ready once a
	 * generation is live, not when one is merely staged. */
	w->ctx.ready = r == 0 && (!w->sim->gens || w->published);
	if (r)
		snprintf(w->ctx.not_ready_reason, sizeof(w->ctx.not_ready_reason),
			 "stage failed: %s", errs->n ? errs->e[0].message : strerror(-r));
	else if (!w->ctx.ready)
		snprintf(w->ctx.not_ready_reason, sizeof(w->ctx.not_ready_reason),
			 "generation %llu staged, not yet published",
			 (unsigned long long)w->state.generation);
	return r;
}

static int op_publish(struct worker *w, const struct ipc_msg *m, struct sim_errors *errs)
{
	int r;

	/* After the barrier: only the generation this worker staged. */
	if (!w->have_state || w->state.generation != m->gen || !w->staged) {
		sim_error(errs, "state", "publish for generation %llu without its stage",
			  (unsigned long long)m->gen);
		return -EINVAL;
	}
	r = worker_publish(w, errs);
	w->ctx.ready = r == 0;
	if (r)
		snprintf(w->ctx.not_ready_reason, sizeof(w->ctx.not_ready_reason),
			 "publish failed: %s", errs->n ? errs->e[0].message : strerror(-r));
	return r;
}

static int op_daemon(struct worker *w, const struct ipc_msg *m, struct sim_errors *errs)
{
	struct ipc_daemon_spec d = { 0 };
	struct ipc_frame f;
	int r;

	if (!w->sim->daemon || !w->have_state) {
		sim_error(errs, "daemon", "no daemon to describe");
		return -EINVAL;
	}
	r = w->sim->daemon(&w->ctx, &w->state, &d, errs);
	/* Its files are this simulator's Stage output (reload_file among
	 * them): a skipped Stage left them as the daemon last read them. */
	d.unchanged = m->op == IPC_OP_RELOAD && w->stage_skipped;
	if (r == 0 && (r = ipc_encode_daemon(m->gen, m->seq, &d, &f)) < 0)
		sim_error(errs, "daemon", "cannot encode the daemon spec: %s", strerror(-r));
	else if (r == 0 && push(w, 0, &f) < 0)
		r = -EPIPE;
	ipc_daemon_spec_free(&d);
	return r;
}

/* Run one command; its result goes out after what arrived meanwhile was
 * read, so a command sent while busy is caught. */
static int run_cmd(struct worker *w, const struct ipc_msg *m, struct sim_errors *errs)
{
	switch (m->op) {
	case IPC_OP_STAGE:
		return op_stage(w, m, errs);
	case IPC_OP_PUBLISH:
		return op_publish(w, m, errs);
	case IPC_OP_APPLY:
		if (!w->have_state || w->state.generation != m->gen) {
			sim_error(errs, "state", "apply for generation %llu without its stage",
				  (unsigned long long)m->gen);
			return -EINVAL;
		}
		/* Said so a log shows which pass applied (chaos.sh checks that no
		 * Apply follows a failed Stage). */
		log_debug("%s: apply: generation %llu", w->sim->name,
			  (unsigned long long)m->gen);
		return worker_apply(w, errs);
	case IPC_OP_RUN:
	case IPC_OP_RELOAD:
		return op_daemon(w, m, errs);
	case IPC_OP_REVOKE:
		return worker_revoke(w, errs);
	case IPC_OP_DISCARD: {
		int r = worker_discard(w, errs);
		w->ctx.ready = false;
		snprintf(w->ctx.not_ready_reason, sizeof(w->ctx.not_ready_reason), "discarded");
		return r;
	}
	default:
		return -EPROTO;
	}
}

/* 0 to go on, 1 to exit cleanly, -errno to fail. */
static int handle(struct worker *w, const struct ipc_msg *m)
{
	struct sim_errors errs = { 0 };
	int r;

	switch (m->op) {
	case IPC_OP_STATUS:
		return send_ready(w, m->gen, m->seq);
	case IPC_OP_ABORT:
		return 0;	/* nothing in flight: the abort raced a finished op */
	case IPC_OP_SHUTDOWN:
		return 1;
	default:
		break;
	}
	w->busy = true;
	w->abort_seen = w->status_seen = false;
	r = run_cmd(w, m, &errs);
	worker_busy_poll(w);
	w->busy = false;
	if (w->proto_error[0])
		return -EPROTO;
	if (send_result(w, m->op, m->gen, m->seq, r, &errs) < 0)
		return -EPIPE;
	if ((m->op == IPC_OP_STAGE || m->op == IPC_OP_PUBLISH || w->status_seen) &&
	    send_ready(w, m->gen, m->seq) < 0)
		return -EPIPE;
	return w->shutdown_seen ? 1 : 0;
}

static int send_hello(struct worker *w)
{
	struct ipc_hello h = { .pid = getpid() };
	struct ipc_frame f;

	snprintf(h.name, sizeof(h.name), "%s", w->sim->name);
	snprintf(h.version, sizeof(h.version), "%s", MOKKA_VERSION);
	/* SIM_ROLE_* and IPC_ROLE_* share their bits */
	h.roles = w->sim->roles & (IPC_ROLE_SIMULATOR | IPC_ROLE_APPLIER | IPC_ROLE_DAEMON);
	return push(w, ipc_encode_hello(&h, &f), &f);
}

/* Wait for input, flushing queued frames when the socket drains.
 * 0 when a message may be waiting, -errno on failure. */
static int wait_input(struct worker *w)
{
	struct pollfd p = { .fd = w->sock, .events = POLLIN };

	if (ipc_sendq_wants_out(&w->sendq))
		p.events |= POLLOUT;
	if (poll(&p, 1, -1) < 0)
		return errno == EINTR ? 0 : -errno;
	if (p.revents & POLLOUT)
		return ipc_sendq_flush(&w->sendq, w->sock);
	return 0;
}

/* Flush what is queued before exiting (the last result), briefly. */
static void drain_out(struct worker *w)
{
	for (int i = 0; i < 50 && ipc_sendq_wants_out(&w->sendq); i++) {
		struct pollfd p = { .fd = w->sock, .events = POLLOUT };
		if (poll(&p, 1, 100) < 0 || ipc_sendq_flush(&w->sendq, w->sock) < 0)
			break;
	}
	ipc_sendq_clear(&w->sendq);
}

static int protocol_exit(struct worker *w, const char *why)
{
	log_error("%s: protocol error: %s", w->sim->name, why);
	ipc_sendq_clear(&w->sendq);
	return WORKER_EXIT_PROTOCOL;
}

int worker_ipc_mode(struct worker *w)
{
	char err[512];
	int fl;

	w->sock = IPC_WORKER_FD;
	ipc_sendq_init(&w->sendq);
	/* Non-blocking: a full socket queues instead of stalling the worker.
	 * EOF on fd 3 tells us the supervisor is gone; no signal needed. */
	if ((fl = fcntl(w->sock, F_GETFL)) < 0 || fcntl(w->sock, F_SETFL, fl | O_NONBLOCK) < 0)
		return WORKER_EXIT_FAILED;
	if (send_hello(w) < 0)
		return WORKER_EXIT_FAILED;
	for (;;) {
		struct ipc_msg m;
		struct ipc_cmd c;
		int r = wait_input(w);

		if (r < 0) {
			log_error("%s: send: %s", w->sim->name, strerror(-r));
			return WORKER_EXIT_FAILED;
		}
		r = ipc_recv(w->sock, &m, err, sizeof(err));
		if (r == -EAGAIN)
			continue;
		if (r == 0)
			return WORKER_EXIT_OK;	/* supervisor gone */
		if (r < 0)
			return protocol_exit(w, err);
		if (!ipc_worker_accepts(IPC_PHASE_IDLE, m.op) ||
		    ipc_decode_cmd(&m, &c, err, sizeof(err)) < 0) {
			if (ipc_worker_accepts(IPC_PHASE_IDLE, m.op) == 0)
				snprintf(err, sizeof(err), "%s not legal in this state",
					 ipc_op_name(m.op));
			ipc_msg_free(&m);
			return protocol_exit(w, err);
		}
		r = handle(w, &m);
		ipc_msg_free(&m);
		if (r == -EPROTO)
			return protocol_exit(w, w->proto_error);
		if (r < 0) {
			log_error("%s: %s", w->sim->name, strerror(-r));
			return WORKER_EXIT_FAILED;
		}
		if (r == 1) {
			drain_out(w);
			return WORKER_EXIT_OK;
		}
	}
}
