/* Worker processes: spawn with the socket on fd 3, the hello handshake,
 * per-phase legal messages, deadlines, restart with backoff. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ipc/log.h"
#include "supervisor/spawn.h"
#include "supervisor/supervisor.h"

/* Capabilities each simulator keeps: file work as root, plus what its
 * surfaces need (mknod, mounts for later simulators). */
static const int caps_files[] = { CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,
				  CAP_FOWNER, CAP_FSETID, CAP_KILL, -1 };
/* gpudriver makes device nodes and bind-mounts /run/nvidia/driver. */
static const int caps_gpudriver[] = { CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,
				      CAP_FOWNER, CAP_FSETID, CAP_KILL, CAP_MKNOD,
				      CAP_SYS_ADMIN, -1 };

/* cri restarts containerd through the host's systemctl, chrooted into the
 * host root. */
static const int caps_cri[] = { CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,
				CAP_FOWNER, CAP_FSETID, CAP_KILL, CAP_SYS_CHROOT, -1 };

/* ib makes the /dev/infiniband nodes. */
static const int caps_ib[] = { CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,
			       CAP_FOWNER, CAP_FSETID, CAP_KILL, CAP_MKNOD, -1 };

/* imex makes the channel devices. */
static const int caps_imex[] = { CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,
				 CAP_FOWNER, CAP_FSETID, CAP_KILL, CAP_MKNOD, -1 };

static const struct sim_def sim_table[] = {
	{ "pcibus", "mokka-worker-pcibus", ROLE_SIM | ROLE_APPLY, caps_files },
	{ "nvlink", "mokka-worker-nvlink", ROLE_SIM, caps_files },
	{ "fabricmanager", "mokka-worker-fabricmanager", ROLE_SIM | ROLE_DAEMON, caps_files },
	{ "gpudriver", "mokka-worker-gpudriver", ROLE_SIM | ROLE_APPLY, caps_gpudriver },
	{ "ib", "mokka-worker-ib", ROLE_SIM | ROLE_DAEMON, caps_ib },
	{ "kernellog", "mokka-worker-kernellog", ROLE_SIM | ROLE_DAEMON | ROLE_RELOAD_OVERRIDES,
	  caps_files },
	{ "imex", "mokka-worker-imex", ROLE_SIM, caps_imex },
	{ "cri", "mokka-worker-cri", ROLE_SIM | ROLE_APPLY | ROLE_STAGE_FIRST, caps_cri },
};

static void worker_schedule_restart(struct supervisor *s, struct worker_proc *w);
/* Timer and fd callbacks get the worker; the supervisor is a singleton. */
static struct supervisor *the_sup;
static void worker_readable(struct loop *l, int fd, uint32_t ev, void *arg);

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
	for (size_t i = 0; i < sizeof(sim_table) / sizeof(sim_table[0]); i++) {
		if (!selected(s->opt.simulators, sim_table[i].name))
			continue;
		struct worker_proc *w = &s->workers[s->nworkers];
		memset(w, 0, sizeof(*w));
		w->def = &sim_table[i];
		w->sock = -1;
		w->st = &s->sim_status[s->nworkers];
		w->bo.seed = (uint32_t)getpid() * 2654435761u + (uint32_t)i;
		snprintf(w->st->name, sizeof(w->st->name), "%s", w->def->name);
		snprintf(w->st->not_ready_reason, sizeof(w->st->not_ready_reason), "starting");
		w->st->stage_ok = true;
		s->nworkers++;
	}
	if (s->opt.simulators) {
		/* every name must be known: a typo must not silently run nothing */
		for (const char *p = s->opt.simulators; *p;) {
			const char *c = strchr(p, ',');
			size_t len = c ? (size_t)(c - p) : strlen(p);
			bool known = false;
			for (size_t i = 0; i < sizeof(sim_table) / sizeof(sim_table[0]); i++)
				known |= strlen(sim_table[i].name) == len &&
					 strncmp(sim_table[i].name, p, len) == 0;
			if (!known) {
				log_error("--simulators: unknown simulator '%.*s'", (int)len, p);
				return -EINVAL;
			}
			p += len + (c ? 1 : 0);
		}
	}
	the_sup = s;
	s->status.nsims = s->nworkers;
	s->status.sims = s->sim_status;
	return 0;
}

static void clear_spec(struct worker_proc *w)
{
	for (int i = 0; w->spec_argv[i]; i++) {
		free(w->spec_argv[i]);
		w->spec_argv[i] = NULL;
	}
	for (int i = 0; w->spec_env[i]; i++) {
		free(w->spec_env[i]);
		w->spec_env[i] = NULL;
	}
	w->have_spec = false;
}

static int worker_spawn(struct supervisor *s, struct worker_proc *w)
{
	int sv[2];
	char path[4200], err[512], envroot[4200], envlvl[64], envfmt[64], envmock[300];
	char *argv[] = { (char *)w->def->binary, NULL };
	char *env[] = { envroot, envlvl, envfmt, envmock, NULL };
	struct spawn_req req = { .path = path, .argv = argv, .env_add = env,
				 .keep_caps = geteuid() == 0 ? w->def->caps : NULL };
	int r;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	snprintf(path, sizeof(path), "%s/%s", s->libexecdir, w->def->binary);
	snprintf(envroot, sizeof(envroot), "MOKKA_HOST_ROOT=%s",
		 s->opt.host_root[0] ? s->opt.host_root : "/");
	snprintf(envlvl, sizeof(envlvl), "MOKKA_LOG_LEVEL=%s",
		 (const char *[]){ "error", "warn", "info", "debug" }[s->opt.log_level]);
	snprintf(envfmt, sizeof(envfmt), "MOKKA_LOG_FORMAT=%s",
		 s->opt.log_format == LOG_FMT_JSON ? "json" : "text");
	/* Discard must find the manifests even before any state arrived. */
	snprintf(envmock, sizeof(envmock), "MOKKA_MOCK_ROOT=%s", s->opt.mock_root);
	req.ipc_fd = sv[1];
	backoff_started(&w->bo, loop_now_ms());
	r = spawn_process(&req, &w->pid, err, sizeof(err));
	close(sv[1]);
	if (r < 0) {
		close(sv[0]);
		w->pid = 0;
		log_error("worker %s: %s", w->def->name, err);
		snprintf(w->st->not_ready_reason, sizeof(w->st->not_ready_reason), "%s", err);
		/* An exec failure is a crash for the restart policy. */
		if (backoff_crashed(&w->bo, loop_now_ms()))
			w->st->failed = true;
		else
			worker_schedule_restart(s, w);
		return r;
	}
	w->sock = sv[0];
	w->phase = IPC_PHASE_HELLO;
	w->st->pid = w->pid;
	loop_add_fd(s->loop, w->sock, EPOLLIN, worker_readable, w);
	log_info("worker %s started (pid %d)", w->def->name, (int)w->pid);
	return 0;
}

void workers_start_all(struct supervisor *s)
{
	for (int i = 0; i < s->nworkers; i++)
		if (!s->workers[i].pid && !s->workers[i].st->failed)
			worker_spawn(s, &s->workers[i]);
}

static void restart_fire(struct loop *l, void *arg)
{
	struct worker_proc *w = arg;

	(void)l;
	w->restart = NULL;
	if (the_sup->shutting_down || w->pid)
		return;
	w->restarted = true;
	worker_spawn(the_sup, w);
}

static void worker_schedule_restart(struct supervisor *s, struct worker_proc *w)
{
	uint64_t d = backoff_delay(&w->bo, loop_now_ms());

	the_sup = s;
	if (w->restart)
		return;
	log_info("worker %s: restart in %llu ms", w->def->name, (unsigned long long)d);
	w->restart = loop_timer_after(s->loop, d, restart_fire, w);
}

static void op_failed(struct supervisor *s, struct worker_proc *w, const char *why)
{
	if (w->phase == IPC_PHASE_BUSY && !w->op_done) {
		w->op_done = true;
		w->op_ok = false;
		snprintf(w->op_error, sizeof(w->op_error), "%s", why);
	}
	w->phase = IPC_PHASE_IDLE;
	reconcile_progress(s);
}

/* Drop our side of a worker: its socket and any pending deadline. */
static void worker_detach(struct supervisor *s, struct worker_proc *w)
{
	if (w->sock >= 0) {
		loop_del_fd(s->loop, w->sock);
		close(w->sock);
		w->sock = -1;
	}
	if (w->deadline) {
		loop_timer_cancel(s->loop, w->deadline);
		w->deadline = NULL;
	}
}

/* Kill a misbehaving worker; SIGCHLD does the rest. */
static void worker_kill(struct supervisor *s, struct worker_proc *w, const char *why)
{
	worker_detach(s, w);
	if (w->pid > 0)
		kill(w->pid, SIGKILL);
	log_warn("worker %s: %s", w->def->name, why);
}

static void deadline_fire(struct loop *l, void *arg)
{
	struct worker_proc *w = arg;
	char why[128];

	(void)l;
	w->deadline = NULL;
	snprintf(why, sizeof(why), "%s timed out", w->phase == IPC_PHASE_HELLO ? "hello" :
		 ipc_op_name(w->op));
	worker_kill(the_sup, w, why);
	op_failed(the_sup, w, why);
}

int worker_send(struct supervisor *s, struct worker_proc *w, enum ipc_op op, int fd,
		uint64_t deadline_ms)
{
	static uint64_t seq;
	int r;

	the_sup = s;
	if (w->sock < 0 || w->phase == IPC_PHASE_HELLO) {
		w->op = op;
		w->op_done = true;
		w->op_ok = false;
		snprintf(w->op_error, sizeof(w->op_error), "worker not running%s",
			 w->st->failed ? " (restart limit reached)" : "");
		return -ESRCH;
	}
	w->op = op;
	w->op_gen = s->pass_gen;
	w->op_seq = ++seq;
	w->op_done = false;
	w->op_ok = false;
	w->op_error[0] = '\0';
	if (op == IPC_OP_RUN || op == IPC_OP_RELOAD)
		clear_spec(w);
	r = ipc_send_op(w->sock, op, w->op_gen, w->op_seq, NULL, fd);
	if (r < 0) {
		w->op_done = true;
		snprintf(w->op_error, sizeof(w->op_error), "send %s: %s", ipc_op_name(op), strerror(-r));
		return r;
	}
	w->phase = IPC_PHASE_BUSY;
	if (w->deadline)
		loop_timer_cancel(s->loop, w->deadline);
	w->deadline = loop_timer_after(s->loop, deadline_ms, deadline_fire, w);
	return 0;
}

static void take_result(struct supervisor *s, struct worker_proc *w, const struct ipc_msg *m)
{
	const cJSON *ok = cJSON_GetObjectItemCaseSensitive(m->json, "ok");
	const cJSON *errs = cJSON_GetObjectItemCaseSensitive(m->json, "errors"), *e;
	size_t off = 0;

	if (m->seq != w->op_seq || w->op_done)
		return;	/* a reply to something we stopped waiting for */
	if (w->deadline) {
		loop_timer_cancel(s->loop, w->deadline);
		w->deadline = NULL;
	}
	w->op_done = true;
	w->op_ok = cJSON_IsTrue(ok);
	w->op_error[0] = '\0';
	cJSON_ArrayForEach(e, errs) {
		const cJSON *sf = cJSON_GetObjectItemCaseSensitive(e, "surface");
		const cJSON *ms = cJSON_GetObjectItemCaseSensitive(e, "message");
		if (!cJSON_IsString(sf) || !cJSON_IsString(ms) || off >= sizeof(w->op_error) - 1)
			continue;
		off += (size_t)snprintf(w->op_error + off, sizeof(w->op_error) - off, "%s%s: %s",
					off ? "; " : "", sf->valuestring, ms->valuestring);
	}
	if (!w->op_ok && !w->op_error[0])
		snprintf(w->op_error, sizeof(w->op_error), "%s failed", ipc_op_name(w->op));
	w->phase = IPC_PHASE_IDLE;
}

static void take_spec(struct worker_proc *w, const struct ipc_msg *m)
{
	const cJSON *o = m->json, *it;
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
	const cJSON *path = cJSON_GetObjectItemCaseSensitive(o, "path");
	const cJSON *reload = cJSON_GetObjectItemCaseSensitive(o, "reload_file");
	int i;

	clear_spec(w);
	if (!cJSON_IsString(name) || !cJSON_IsString(path) || !cJSON_IsString(reload))
		return;
	snprintf(w->spec_name, sizeof(w->spec_name), "%s", name->valuestring);
	snprintf(w->spec_path, sizeof(w->spec_path), "%s", path->valuestring);
	snprintf(w->spec_reload, sizeof(w->spec_reload), "%s", reload->valuestring);
	i = 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(o, "argv"))
		if (cJSON_IsString(it) && i < 16)
			w->spec_argv[i++] = strdup(it->valuestring);
	i = 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(o, "env"))
		if (cJSON_IsString(it) && i < 16 && strchr(it->valuestring, '='))
			w->spec_env[i++] = strdup(it->valuestring);
	w->have_spec = true;
}

static void take_hello(struct supervisor *s, struct worker_proc *w, const struct ipc_msg *m)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(m->json, "name");

	if (!cJSON_IsString(name) || strcmp(name->valuestring, w->def->name) != 0) {
		worker_kill(s, w, "hello from the wrong simulator");
		return;
	}
	if (w->deadline) {
		loop_timer_cancel(s->loop, w->deadline);
		w->deadline = NULL;
	}
	w->phase = IPC_PHASE_IDLE;
	snprintf(w->st->not_ready_reason, sizeof(w->st->not_ready_reason), "not staged yet");
	log_debug("worker %s: hello", w->def->name);
	/* A worker that came back re-stages (and re-applies) the current
	 * generation: run the pass again. */
	if (w->restarted && s->have_state && !s->shutting_down)
		reconcile_request(s);
	else
		reconcile_progress(s);
}

static void worker_readable(struct loop *l, int fd, uint32_t ev, void *arg)
{
	struct worker_proc *w = arg;
	struct supervisor *s = the_sup;
	char err[512];

	(void)l;
	(void)fd;
	(void)ev;
	for (;;) {
		struct ipc_msg m;
		int r = ipc_recv(w->sock, &m, err, sizeof(err));

		if (r == -EAGAIN)
			return;
		if (r == 0) {
			/* EOF: the worker is going; SIGCHLD does the rest. */
			loop_del_fd(s->loop, w->sock);
			close(w->sock);
			w->sock = -1;
			return;
		}
		if (r < 0 || !ipc_supervisor_accepts(w->phase, m.op)) {
			char why[700];
			snprintf(why, sizeof(why), "protocol error: %s",
				 r < 0 ? err : "message not legal in this phase");
			if (r > 0)
				ipc_msg_free(&m);
			worker_kill(s, w, why);
			op_failed(s, w, why);
			return;
		}
		switch (m.op) {
		case IPC_OP_HELLO: take_hello(s, w, &m); break;
		case IPC_OP_DAEMON: take_spec(w, &m); break;
		case IPC_OP_READY: {
			const cJSON *rd = cJSON_GetObjectItemCaseSensitive(m.json, "ready");
			const cJSON *rs = cJSON_GetObjectItemCaseSensitive(m.json, "reason");
			w->st->ready = cJSON_IsTrue(rd);
			snprintf(w->st->not_ready_reason, sizeof(w->st->not_ready_reason), "%s",
				 cJSON_IsString(rs) ? rs->valuestring : "");
			break;
		}
		case IPC_OP_RESULT:
			take_result(s, w, &m);
			ipc_msg_free(&m);
			reconcile_progress(s);
			if (w->sock < 0)
				return;
			continue;
		default: break;
		}
		ipc_msg_free(&m);
		if (w->sock < 0)
			return;
	}
}

void workers_on_exit(struct supervisor *s, pid_t pid, int status)
{
	for (int i = 0; i < s->nworkers; i++) {
		struct worker_proc *w = &s->workers[i];
		char why[128];

		if (w->pid != pid)
			continue;
		if (WIFSIGNALED(status))
			snprintf(why, sizeof(why), "worker exited on signal %d", WTERMSIG(status));
		else
			snprintf(why, sizeof(why), "worker exited with status %d", WEXITSTATUS(status));
		w->pid = 0;
		w->st->pid = 0;
		w->st->ready = false;
		snprintf(w->st->not_ready_reason, sizeof(w->st->not_ready_reason), "%s", why);
		worker_detach(s, w);
		bool was_busy = w->phase == IPC_PHASE_BUSY && !w->op_done;
		w->phase = IPC_PHASE_HELLO;
		if (s->shutting_down) {
			if (was_busy) {
				w->op_done = true;
				w->op_ok = false;
				snprintf(w->op_error, sizeof(w->op_error), "%s", why);
			}
			reconcile_progress(s);
			return;
		}
		log_warn("worker %s (pid %d): %s", w->def->name, (int)pid, why);
		w->st->restarts++;
		if (backoff_crashed(&w->bo, loop_now_ms())) {
			w->st->failed = true;
			log_error("worker %s: %d crashes within %d s; not restarting until the "
				  "desired state changes", w->def->name, BACKOFF_BURST,
				  BACKOFF_RESET_MS / 1000);
		} else {
			worker_schedule_restart(s, w);
		}
		if (was_busy) {
			w->op_done = true;
			w->op_ok = false;
			snprintf(w->op_error, sizeof(w->op_error), "%s", why);
		}
		reconcile_progress(s);
		return;
	}
}

void workers_poll_status(struct supervisor *s)
{
	for (int i = 0; i < s->nworkers; i++) {
		struct worker_proc *w = &s->workers[i];
		/* status does not make a worker busy: it only pushes ready */
		if (w->sock >= 0 && w->phase == IPC_PHASE_IDLE)
			ipc_send_op(w->sock, IPC_OP_STATUS, s->pass_gen, 0, NULL, -1);
	}
}

void workers_stop_all(struct supervisor *s)
{
	for (int i = 0; i < s->nworkers; i++) {
		struct worker_proc *w = &s->workers[i];
		if (w->restart) {
			loop_timer_cancel(s->loop, w->restart);
			w->restart = NULL;
		}
		if (w->sock >= 0)
			ipc_send_op(w->sock, IPC_OP_SHUTDOWN, s->pass_gen, 0, NULL, -1);
		clear_spec(w);
	}
}

bool workers_all_gone(const struct supervisor *s)
{
	for (int i = 0; i < s->nworkers; i++)
		if (s->workers[i].pid)
			return false;
	return true;
}

/* Used by reconcile's teardown to respawn a worker that is down, so its
 * Discard still runs. */
int workers_spawn_for_teardown(struct supervisor *s, struct worker_proc *w)
{
	if (w->pid)
		return 0;
	if (w->restart) {
		loop_timer_cancel(s->loop, w->restart);
		w->restart = NULL;
	}
	w->restarted = false;
	return worker_spawn(s, w);
}
