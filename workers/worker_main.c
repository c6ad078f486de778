/* The worker side: IPC mode under the supervisor (fd 3), or the
 * stand-alone CLI for debugging one simulator. */
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
#include "supervisor/compile.h"
#include "supervisor/source.h"
#include "workers/manifest.h"
#include "workers/simulator.h"

/* Exit statuses the supervisor can tell apart. */
enum { WORKER_EXIT_OK = 0, WORKER_EXIT_USAGE = 2, WORKER_EXIT_PROTOCOL = 3,
       WORKER_EXIT_FAILED = 4 };

struct worker {
	const struct simulator *sim;
	struct sim_ctx ctx;
	struct state state;
	bool have_state;
	int sock;		/* -1 in CLI mode */
	char bindir[PATH_MAX], libdir[PATH_MAX];
};

void sim_error(struct sim_errors *errs, const char *surface, const char *fmt, ...)
{
	va_list ap;

	if (errs->n >= SIM_MAX_ERRORS)
		return;
	snprintf(errs->e[errs->n].surface, sizeof(errs->e[0].surface), "%s", surface);
	va_start(ap, fmt);
	vsnprintf(errs->e[errs->n].message, sizeof(errs->e[0].message), fmt, ap);
	va_end(ap);
	errs->n++;
}

void sim_daemon_spec_free(struct sim_daemon_spec *d)
{
	for (int i = 0; d->argv[i]; i++)
		free(d->argv[i]);
	for (int i = 0; d->env[i]; i++)
		free(d->env[i]);
	memset(d, 0, sizeof(*d));
}

static struct worker *the_worker;

bool sim_aborted(struct sim_ctx *ctx)
{
	struct worker *w = the_worker;
	char buf[IPC_MAX_MSG + 1];
	struct ipc_msg m;
	char err[256];

	(void)ctx;
	if (!w || w->sock < 0)
		return false;
	/* Peek so that a message other than abort stays queued. */
	ssize_t n = recv(w->sock, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	if (n <= 0)
		return n == 0;	/* EOF: the supervisor is gone, stop too */
	if (ipc_decode(buf, (size_t)n, &m, err, sizeof(err)) == 1) {
		bool abort_op = m.op == IPC_OP_ABORT;
		cJSON_Delete(m.json);
		return abort_op;
	}
	return false;
}

static void manifest_file(const struct worker *w, const char *kind, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s/state/%s.%s.manifest", w->ctx.host.root,
		 w->state.mock_root, w->sim->name, kind);
}

static int ensure_state_dir(struct worker *w)
{
	char dir[PATH_MAX + 300];
	struct host bare = w->ctx.host;

	bare.own = NULL;	/* R/state is the supervisor's, not the simulator's */
	bare.prev = NULL;
	snprintf(dir, sizeof(dir), "%s/state", w->state.mock_root);
	return host_mkdirs(&bare, dir, 0755);
}

/* Stage and Apply share this: run op with a fresh manifest, converge
 * against the previous one, persist the union on failure so nothing we
 * created is ever forgotten. */
static int run_owned(struct worker *w, const char *kind,
		     int (*op)(struct sim_ctx *, const struct state *, struct sim_errors *),
		     struct sim_errors *errs)
{
	struct manifest old, cur;
	char file[PATH_MAX + 400];
	int r;

	if ((r = ensure_state_dir(w)) < 0) {
		sim_error(errs, "state", "%s/state: mkdir: %s", w->state.mock_root, strerror(-r));
		return r;
	}
	manifest_file(w, kind, file, sizeof(file));
	if ((r = manifest_load(&old, file)) < 0) {
		sim_error(errs, "manifest", "%s: %s", file, strerror(-r));
		return r;
	}
	manifest_init(&cur);
	w->ctx.host.own = &cur;
	w->ctx.host.prev = &old;
	r = op(&w->ctx, &w->state, errs);
	if (r == 0 && errs->n > 0)
		r = -EIO;
	w->ctx.host.own = NULL;
	w->ctx.host.prev = NULL;
	if (r == 0) {
		int e = manifest_remove_stale(w->ctx.host.root, &old, &cur);
		if (e < 0)
			log_warn("%s: converge: %s", w->sim->name, strerror(-e));
	} else {
		for (size_t i = 0; i < old.n; i++)
			manifest_add(&cur, old.paths[i], old.kinds[i]);
	}
	int s = manifest_save(&cur, file);
	if (s < 0) {
		sim_error(errs, "manifest", "%s: save: %s", file, strerror(-s));
		if (r == 0)
			r = s;
	}
	manifest_free(&old);
	manifest_free(&cur);
	return r;
}

static int remove_owned(struct worker *w, const char *kind,
			int (*extra)(struct sim_ctx *, struct sim_errors *),
			struct sim_errors *errs)
{
	struct manifest old;
	char file[PATH_MAX + 400];
	int r;

	if (extra && (r = extra(&w->ctx, errs)) < 0)
		sim_error(errs, kind, "%s", strerror(-r));
	manifest_file(w, kind, file, sizeof(file));
	if ((r = manifest_load(&old, file)) < 0) {
		sim_error(errs, "manifest", "%s: %s", file, strerror(-r));
		return r;
	}
	r = manifest_remove_stale(w->ctx.host.root, &old, NULL);
	if (r < 0)
		sim_error(errs, kind, "remove: %s", strerror(-r));
	manifest_free(&old);
	if (r == 0 && unlink(file) < 0 && errno != ENOENT)
		r = -errno;
	return r ? r : errs->n ? -EIO : 0;
}

static int op_stage(struct worker *w, struct sim_errors *errs)
{
	const char *delay = getenv("MOKKA_TEST_STAGE_DELAY_MS");

	/* Test hook: widen the window in which a test kills a worker
	 * mid-Stage. */
	if (delay && atoi(delay) > 0) {
		struct timespec ts = { atoi(delay) / 1000, (long)(atoi(delay) % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
	if (!w->sim->stage)
		return 0;
	return run_owned(w, "stage", w->sim->stage, errs);
}

static int op_apply(struct worker *w, struct sim_errors *errs)
{
	if (!w->sim->apply)
		return 0;
	return run_owned(w, "apply", w->sim->apply, errs);
}

static int op_discard(struct worker *w, struct sim_errors *errs)
{
	int r = remove_owned(w, "stage", w->sim->discard, errs);
	char dir[PATH_MAX + 300];

	/* R/state goes too when nothing else lives there (stand-alone use). */
	snprintf(dir, sizeof(dir), "%s%s/state", w->ctx.host.root, w->state.mock_root);
	if (w->sock < 0)
		rmdir(dir);
	return r;
}

static int op_revoke(struct worker *w, struct sim_errors *errs)
{
	return remove_owned(w, "apply", w->sim->revoke, errs);
}

static bool compute_ready(struct worker *w, char *reason, size_t len)
{
	if (!w->have_state) {
		snprintf(reason, len, "no state received yet");
		return false;
	}
	if (!w->ctx.ready) {
		snprintf(reason, len, "%s", w->ctx.not_ready_reason[0] ?
			 w->ctx.not_ready_reason : "not staged");
		return false;
	}
	if (w->sim->ready)
		return w->sim->ready(&w->ctx, &w->state, reason, len);
	reason[0] = '\0';
	return true;
}

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
	bool ready = compute_ready(w, reason, sizeof(reason));
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
		r = op_stage(w, &errs);
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
		r = op_apply(w, &errs);
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
		r = op_revoke(w, &errs);
		return send_result(w, m->op, m->gen, m->seq, r, &errs);
	case IPC_OP_DISCARD:
		r = op_discard(w, &errs);
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

static int ipc_mode(struct worker *w)
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

/* ---- stand-alone CLI ---- */

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s [OPTIONS] stage|apply|revoke|discard|run|status\n"
		"Run one Mokka simulator alone, for debugging.\n\n"
		"  --host-root DIR     root the host paths live under (default /)\n"
		"  --config FILE       profile (default: the built-in 8x H100 profile)\n"
		"  --topology FILE     ComputeDomain topology document\n"
		"  --node-name NAME    node name (default $NODE_NAME, else hostname)\n"
		"  --log-level LEVEL   error|warn|info|debug (default info)\n"
		"  --log-format FMT    text|json (default text)\n"
		"  --help, --version\n\n"
		"Verbs: stage (render), apply (publish), revoke, discard (remove exactly\n"
		"what was created), run (stage, run the daemon in the foreground until\n"
		"Ctrl-C, then discard), status (print readiness).\n", prog);
}

static int compile_cli(struct worker *w, const char *config, const char *topology,
		       const char *node)
{
	char *prof = NULL, *topo = NULL, err[1024];
	size_t plen = 0, tlen = 0;
	struct compile_opts o = { .node_name = node };
	int r;

	if (config && (r = source_read_file(config, &prof, &plen, err, sizeof(err))) < 0) {
		fprintf(stderr, "%s\n", err);
		return r;
	}
	if (topology && (r = source_read_file(topology, &topo, &tlen, err, sizeof(err))) < 0) {
		fprintf(stderr, "%s\n", err);
		free(prof);
		return r;
	}
	state_init(&w->state);
	r = compile_profile(config ? config : "<built-in>",
			    config ? prof : compile_default_profile,
			    config ? plen : compile_default_profile_len,
			    topology, topo, tlen, &o, &w->state, err, sizeof(err));
	free(prof);
	free(topo);
	if (r < 0) {
		fprintf(stderr, "%s\n", err);
		return r;
	}
	w->state.generation = 1;
	w->have_state = true;
	snprintf(w->ctx.host.mock_root, sizeof(w->ctx.host.mock_root), "%s", w->state.mock_root);
	return 0;
}

static void print_errors(const struct worker *w, const char *verb, int r,
			 const struct sim_errors *errs)
{
	for (int i = 0; i < errs->n; i++)
		fprintf(stderr, "%s: %s: %s: %s\n", w->sim->name, verb, errs->e[i].surface,
			errs->e[i].message);
	if (r < 0 && errs->n == 0)
		fprintf(stderr, "%s: %s: %s\n", w->sim->name, verb, strerror(-r));
}

static pid_t spawn_daemon(const struct sim_daemon_spec *d)
{
	pid_t pid = fork();

	if (pid == 0) {
		for (int i = 0; d->env[i]; i++)
			putenv(d->env[i]);
		execv(d->path, d->argv);
		fprintf(stderr, "exec %s: %s\n", d->path, strerror(errno));
		_exit(127);
	}
	return pid;
}

static int cli_run(struct worker *w)
{
	struct sim_errors errs = { 0 };
	struct sim_daemon_spec d = { 0 };
	pid_t pid = -1;
	int r = op_stage(w, &errs);

	print_errors(w, "stage", r, &errs);
	if (r < 0)
		return WORKER_EXIT_FAILED;
	w->ctx.ready = true;
	if (w->sim->daemon) {
		r = w->sim->daemon(&w->ctx, &w->state, &d, &errs);
		print_errors(w, "daemon", r, &errs);
		if (r == 0)
			pid = spawn_daemon(&d);
	}
	fprintf(stderr, "%s: staged under %s%s; Ctrl-C to discard and exit\n",
		w->sim->name, w->ctx.host.root[0] ? w->ctx.host.root : "", w->state.mock_root);
	while (!got_signal) {
		if (pid > 0) {
			int st;
			if (waitpid(pid, &st, WNOHANG) == pid) {
				fprintf(stderr, "%s: daemon exited (status %d)\n", w->sim->name, st);
				pid = -1;
			}
		}
		usleep(200000);
	}
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
	sim_daemon_spec_free(&d);
	memset(&errs, 0, sizeof(errs));
	r = op_discard(w, &errs);
	print_errors(w, "discard", r, &errs);
	return r < 0 ? WORKER_EXIT_FAILED : WORKER_EXIT_OK;
}

static void locate_dirs(struct worker *w)
{
	char exe[PATH_MAX], probe[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	snprintf(w->bindir, sizeof(w->bindir), "%s", MOKKA_LIBEXECDIR);
	snprintf(w->libdir, sizeof(w->libdir), "%s", MOKKA_PKGLIBDIR);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			/* In the build tree, daemons sit next to us and shims in .libs. */
			snprintf(probe, sizeof(probe), "%s/.libs/libmockfs.so", exe);
			if (access(probe, R_OK) == 0) {
				snprintf(w->bindir, sizeof(w->bindir), "%s", exe);
				snprintf(w->libdir, sizeof(w->libdir), "%s/.libs", exe);
			}
		}
	}
	if (getenv("MOKKA_LIBEXECDIR"))
		snprintf(w->bindir, sizeof(w->bindir), "%s", getenv("MOKKA_LIBEXECDIR"));
	if (getenv("MOKKA_PKGLIBDIR"))
		snprintf(w->libdir, sizeof(w->libdir), "%s", getenv("MOKKA_PKGLIBDIR"));
	w->ctx.bindir = w->bindir;
	w->ctx.libdir = w->libdir;
}

int worker_main(int argc, char **argv, const struct simulator *sim)
{
	static const struct option opts[] = {
		{ "host-root", required_argument, NULL, 'r' },
		{ "config", required_argument, NULL, 'c' },
		{ "topology", required_argument, NULL, 't' },
		{ "node-name", required_argument, NULL, 'n' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "log-format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static struct worker w;
	const char *config = NULL, *topology = NULL, *node = getenv("NODE_NAME");
	enum log_level lvl = LOG_LVL_INFO;
	enum log_format fmt = LOG_FMT_TEXT;
	char comp[64], host[256] = "";
	struct stat st;
	int c;

	the_worker = &w;
	w.sim = sim;
	w.sock = -1;
	w.ctx.name = sim->name;
	snprintf(comp, sizeof(comp), "mokka-worker-%s", sim->name);
	if (getenv("MOKKA_LOG_LEVEL"))
		log_parse_level(getenv("MOKKA_LOG_LEVEL"), &lvl);
	if (getenv("MOKKA_LOG_FORMAT"))
		log_parse_format(getenv("MOKKA_LOG_FORMAT"), &fmt);
	log_setup(comp, lvl, fmt);
	locate_dirs(&w);

	/* Under the supervisor: fd 3 is our socket and no verb is given. */
	if (argc == 1 && fstat(IPC_WORKER_FD, &st) == 0 && S_ISSOCK(st.st_mode)) {
		const char *root = getenv("MOKKA_HOST_ROOT");
		const char *mock = getenv("MOKKA_MOCK_ROOT");
		if (root && strcmp(root, "/") != 0)
			snprintf(w.ctx.host.root, sizeof(w.ctx.host.root), "%s", root);
		state_init(&w.state);
		if (mock && mock[0] == '/')
			snprintf(w.state.mock_root, sizeof(w.state.mock_root), "%s", mock);
		snprintf(w.ctx.host.mock_root, sizeof(w.ctx.host.mock_root), "%s", w.state.mock_root);
		return ipc_mode(&w);
	}

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (strcmp(optarg, "/") != 0)
				snprintf(w.ctx.host.root, sizeof(w.ctx.host.root), "%s", optarg);
			break;
		case 'c': config = optarg; break;
		case 't': topology = optarg; break;
		case 'n': node = optarg; break;
		case 'l':
			if (log_parse_level(optarg, &lvl) < 0) {
				fprintf(stderr, "%s: --log-level: unknown level '%s'\n", comp, optarg);
				return WORKER_EXIT_USAGE;
			}
			break;
		case 'f':
			if (log_parse_format(optarg, &fmt) < 0) {
				fprintf(stderr, "%s: --log-format: want text or json, got '%s'\n", comp, optarg);
				return WORKER_EXIT_USAGE;
			}
			break;
		case 'h': usage(stdout, comp); return 0;
		case 'V': printf("%s %s\n", comp, MOKKA_VERSION); return 0;
		default: usage(stderr, comp); return WORKER_EXIT_USAGE;
		}
	}
	log_setup(comp, lvl, fmt);
	if (optind != argc - 1) {
		usage(stderr, comp);
		return WORKER_EXIT_USAGE;
	}
	/* Strip trailing slashes so root + "/x" never doubles them. */
	for (size_t n = strlen(w.ctx.host.root); n > 0 && w.ctx.host.root[n - 1] == '/'; n--)
		w.ctx.host.root[n - 1] = '\0';
	if (!node) {
		gethostname(host, sizeof(host) - 1);
		node = host;
	}
	if (compile_cli(&w, config, topology, node) < 0)
		return WORKER_EXIT_FAILED;

	const char *verb = argv[optind];
	struct sim_errors errs = { 0 };
	int r;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (strcmp(verb, "stage") == 0)
		r = op_stage(&w, &errs);
	else if (strcmp(verb, "apply") == 0)
		r = op_apply(&w, &errs);
	else if (strcmp(verb, "revoke") == 0)
		r = op_revoke(&w, &errs);
	else if (strcmp(verb, "discard") == 0)
		r = op_discard(&w, &errs);
	else if (strcmp(verb, "run") == 0)
		return cli_run(&w);
	else if (strcmp(verb, "status") == 0) {
		char reason[256], file[PATH_MAX + 400];
		struct manifest m;
		manifest_file(&w, "stage", file, sizeof(file));
		manifest_load(&m, file);
		w.ctx.ready = m.n > 0;
		bool ok = compute_ready(&w, reason, sizeof(reason));
		printf("%s: %s%s%s (%zu staged paths)\n", sim->name, ok ? "ready" : "not ready",
		       ok ? "" : ": ", ok ? "" : reason, m.n);
		manifest_free(&m);
		return ok ? 0 : 1;
	} else {
		fprintf(stderr, "%s: unknown verb '%s'\n", comp, verb);
		usage(stderr, comp);
		return WORKER_EXIT_USAGE;
	}
	print_errors(&w, verb, r, &errs);
	return r < 0 ? WORKER_EXIT_FAILED : WORKER_EXIT_OK;
}
