/* Worker processes: the process and IPC layer under the lifecycle table
 * (lifecycle.c).  Spawn with the socket on fd 3, queued non-blocking
 * sends, typed decoding of what a worker says (ipc/proto.h), each message
 * checked against the worker's phase, reaping.  Every decision about a
 * worker is the table's: this file only reports events to it. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ipc/log.h"
#include "ipc/proto.h"
#include "ipc/sendq.h"
#include "supervisor/simtable.h"
#include "supervisor/spawn.h"
#include "supervisor/supervisor.h"

struct worker_proc *worker_by_name(struct supervisor *s, const char *name)
{
	for (int i = 0; i < s->nworkers; i++)
		if (strcmp(s->workers[i].def->name, name) == 0)
			return &s->workers[i];
	return NULL;
}

static bool selected(const char *list, const char *name)
{
	size_t n = strlen(name);

	if (!list)
		return true;
	for (const char *p = list; *p;) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		if (len == n && strncmp(p, name, n) == 0)
			return true;
		p += len + (c ? 1 : 0);
	}
	return false;
}

int workers_setup(struct supervisor *s)
{
	if (!s->wio)
		s->wio = &worker_io_process;
	for (size_t i = 0; i < sim_table_len; i++)
		if (selected(s->opt.simulators, sim_table[i].name))
			workers_add(s, &sim_table[i]);
	if (s->opt.simulators) {
		/* every name must be known: a typo must not silently run nothing */
		for (const char *p = s->opt.simulators; *p;) {
			const char *c = strchr(p, ',');
			size_t len = c ? (size_t)(c - p) : strlen(p);
			bool known = false;
			for (size_t i = 0; i < sim_table_len; i++)
				known |= strlen(sim_table[i].name) == len &&
					 strncmp(sim_table[i].name, p, len) == 0;
			if (!known) {
				log_error("--simulators: unknown simulator '%.*s'", (int)len, p);
				return -EINVAL;
			}
			p += len + (c ? 1 : 0);
		}
	}
	return 0;
}

static void clear_spec(struct worker_proc *w)
{
	ipc_daemon_spec_free(&w->spec);
}

/* ---- what a worker says ---- */

/* A message that decodes but breaks the contract fails this worker (and
 * its op), never the node. */
static void worker_protocol_error(struct worker_proc *w, const char *what, const char *err)
{
	char why[700];

	snprintf(why, sizeof(why), "protocol error: %s: %s", what, err);
	worker_on_protocol_error(w, why);
}

static void take_result(struct worker_proc *w, const struct ipc_msg *m)
{
	static struct ipc_result res;	/* 20 KiB: off the stack */
	char err[512], summary[sizeof(w->op.error)];

	if (ipc_decode_result(m, &res, err, sizeof(err)) < 0) {
		worker_protocol_error(w, "result", err);
		return;
	}
	if (m->seq == w->busy_seq && res.op != w->busy_op) {
		snprintf(err, sizeof(err), "result for %s while %s is in flight",
			 ipc_op_name(res.op), ipc_op_name(w->busy_op));
		worker_protocol_error(w, "result", err);
		return;
	}
	ipc_result_summary(&res, summary, sizeof(summary));
	/* A reply to something we stopped waiting for is dropped there. */
	worker_on_result(w, m->seq, res.ok, summary);
}

/* The spec must decode AND fit this worker's row (binary it may start,
 * env keys, argument count); otherwise nothing runs and the worker is
 * failed: a worker that forges a daemon is not restarted to try again. */
static void take_spec(struct worker_proc *w, const struct ipc_msg *m)
{
	char err[512], why[700];

	clear_spec(w);
	if (w->busy_op != IPC_OP_RUN && w->busy_op != IPC_OP_RELOAD) {
		snprintf(err, sizeof(err), "daemon spec in reply to %s", ipc_op_name(w->busy_op));
		worker_protocol_error(w, "daemon", err);
		return;
	}
	if (ipc_decode_daemon(m, &w->spec, err, sizeof(err)) < 0 ||
	    (w->spec.name[0] && !simtable_check_daemon(w->def, &w->spec, err, sizeof(err)))) {
		clear_spec(w);
		log_error("worker %s: daemon spec rejected, nothing started: %s", w->def->name, err);
		snprintf(why, sizeof(why), "daemon spec rejected: %s", err);
		worker_on_violation(w, why);
	}
}

static void take_hello(struct worker_proc *w, const struct ipc_msg *m)
{
	struct ipc_hello h;
	char err[512];

	if (ipc_decode_hello(m, &h, err, sizeof(err)) < 0) {
		worker_protocol_error(w, "hello", err);
		return;
	}
	if (strcmp(h.name, w->def->name) != 0) {
		worker_on_protocol_error(w, "hello from the wrong simulator");
		return;
	}
	worker_on_hello(w);
}

static void take_ready(struct worker_proc *w, const struct ipc_msg *m)
{
	struct ipc_ready rd;
	char err[512];

	if (ipc_decode_ready(m, &rd, err, sizeof(err)) < 0) {
		worker_protocol_error(w, "ready", err);
		return;
	}
	w->st->ready = rd.ready;
	snprintf(w->st->not_ready_reason, sizeof(w->st->not_ready_reason), "%s", rd.reason);
}

static void take_message(struct worker_proc *w, const struct ipc_msg *m)
{
	switch (m->op) {
	case IPC_OP_HELLO: take_hello(w, m); break;
	case IPC_OP_DAEMON: take_spec(w, m); break;
	case IPC_OP_READY: take_ready(w, m); break;
	case IPC_OP_RESULT: take_result(w, m); break;
	default: break;
	}
}

/* Queued commands go out as the socket takes them. */
static void flush_sendq(struct worker_proc *w)
{
	int r = ipc_sendq_flush(&w->sendq, w->sock);

	if (r < 0) {
		char why[128];
		snprintf(why, sizeof(why), "send: %s", strerror(-r));
		worker_on_protocol_error(w, why);
		return;
	}
	if (!ipc_sendq_wants_out(&w->sendq))
		loop_mod_fd(w->sup->loop, w->sock, EPOLLIN);
}

static void worker_readable(struct loop *l, int fd, uint32_t ev, void *arg)
{
	struct worker_proc *w = arg;
	char err[512];

	if (ev & EPOLLOUT)
		flush_sendq(w);
	while (w->sock >= 0) {
		struct ipc_msg m;
		int r = ipc_recv(w->sock, &m, err, sizeof(err));

		if (r == -EAGAIN)
			return;
		if (r == 0) {
			worker_on_eof(w);	/* the worker is going */
			return;
		}
		if (r < 0 || !ipc_supervisor_accepts(worker_ipc_phase(w), m.op)) {
			char why[700];
			snprintf(why, sizeof(why), "protocol error: %s",
				 r < 0 ? err : "message not legal in this phase");
			if (r > 0)
				ipc_msg_free(&m);
			worker_on_protocol_error(w, why);
			return;
		}
		take_message(w, &m);
		ipc_msg_free(&m);
	}
}

/* ---- struct worker_io over real processes ---- */

static int proc_spawn(struct worker_proc *w, pid_t *pid, char *err, size_t errlen)
{
	struct supervisor *s = w->sup;
	int sv[2];
	char path[4200], envroot[4200], envlvl[64], envfmt[64], envmock[300];
	char *argv[] = { (char *)w->def->binary, NULL };
	char *env[] = { envroot, envlvl, envfmt, envmock, NULL };
	struct spawn_req req = { .path = path, .argv = argv, .env_add = env,
				 .caps = w->def->caps };
	int r;

	/* Non-blocking on our side too: a full socket queues (ipc/sendq.h). */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) {
		r = -errno;
		snprintf(err, errlen, "socketpair: %s", strerror(-r));
		return r;
	}
	snprintf(path, sizeof(path), "%s/%s", s->libexecdir, w->def->binary);
	snprintf(envroot, sizeof(envroot), "MOKKA_HOST_ROOT=%s",
		 s->opt.host_root[0] ? s->opt.host_root : "/");
	snprintf(envlvl, sizeof(envlvl), "MOKKA_LOG_LEVEL=%s", log_level_name(s->opt.log_level));
	snprintf(envfmt, sizeof(envfmt), "MOKKA_LOG_FORMAT=%s", log_format_name(s->opt.log_format));
	/* Discard must find the manifests even before any state arrived. */
	snprintf(envmock, sizeof(envmock), "MOKKA_MOCK_ROOT=%s", s->opt.mock_root);
	req.ipc_fd = sv[1];
	r = spawn_process(&req, pid, err, errlen);
	close(sv[1]);
	if (r < 0) {
		close(sv[0]);
		return r;
	}
	w->sock = sv[0];
	ipc_sendq_init(&w->sendq);
	loop_add_fd(s->loop, w->sock, EPOLLIN, worker_readable, w);
	return 0;
}

static int proc_send(struct worker_proc *w, enum ipc_op op, uint64_t gen, uint64_t seq, int fd)
{
	int r;

	if (w->sock < 0)
		return -ENOTCONN;
	if (op == IPC_OP_RUN || op == IPC_OP_RELOAD)
		clear_spec(w);
	r = ipc_sendq_cmd(&w->sendq, w->sock, op, gen, seq, fd);
	if (r == 0 && ipc_sendq_wants_out(&w->sendq))
		loop_mod_fd(w->sup->loop, w->sock, EPOLLIN | EPOLLOUT);
	return r;
}

static void proc_detach(struct worker_proc *w)
{
	if (w->sock < 0)
		return;
	loop_del_fd(w->sup->loop, w->sock);
	close(w->sock);
	w->sock = -1;
	ipc_sendq_clear(&w->sendq);
}

static void proc_kill(struct worker_proc *w)
{
	if (w->pid > 0)
		kill(w->pid, SIGKILL);
}

const struct worker_io worker_io_process = {
	.spawn = proc_spawn, .send = proc_send, .detach = proc_detach, .kill = proc_kill,
};

/* ---- all workers ---- */

void workers_start_all(struct supervisor *s)
{
	for (int i = 0; i < s->nworkers; i++)
		worker_start(&s->workers[i]);
}

bool workers_on_exit(struct supervisor *s, pid_t pid, int status)
{
	for (int i = 0; i < s->nworkers; i++)
		if (s->workers[i].pid == pid) {
			worker_on_exit(&s->workers[i], status);
			return true;
		}
	return false;
}

void workers_poll_status(struct supervisor *s)
{
	for (int i = 0; i < s->nworkers; i++)
		worker_poll_status(&s->workers[i]);
}

void workers_stop_all(struct supervisor *s)
{
	for (int i = 0; i < s->nworkers; i++) {
		worker_shutdown(&s->workers[i]);
		clear_spec(&s->workers[i]);
	}
}

bool workers_all_gone(const struct supervisor *s)
{
	for (int i = 0; i < s->nworkers; i++)
		if (s->workers[i].pid)
			return false;
	return true;
}

void workers_kill_all(struct supervisor *s)
{
	for (int i = 0; i < s->nworkers; i++)
		if (s->workers[i].pid)
			s->wio->kill(&s->workers[i]);
}
