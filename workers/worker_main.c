/* The worker entry point and its stand-alone CLI for debugging one
 * simulator. */
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
#include "profile/env.h"
#include "fileio/fileio.h"
#include "workers/manifest.h"
#include "workers/simulator.h"
#include "workers/worker.h"

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
		"Verbs: stage (render; alone, also publish), apply (expose outside the\n"
		"mock tree), revoke, discard (remove exactly\n"
		"what was created), run (stage, run the daemon in the foreground until\n"
		"Ctrl-C, then discard), status (print readiness).\n", prog);
}

/* The stand-alone CLI's flags; NULL = the default (the environment's, as
 * the supervisor reads it: profile/env.h). */
struct cli {
	char comp[64];			/* mokka-worker-NAME */
	const char *config, *topology, *node;
	enum log_level lvl;
	enum log_format fmt;
};

static int compile_cli(struct worker *w, const struct cli *a)
{
	char *prof = NULL, *topo = NULL, err[1024];
	size_t plen = 0, tlen = 0;
	struct compile_opts o;
	int r;

	if ((r = profile_env_read(&o, err, sizeof(err))) < 0) {
		fprintf(stderr, "%s: %s\n", a->comp, err);
		return r;
	}
	if (a->node)	/* as $NODE_NAME: the node's own identities */
		o.node_name = a->node, o.node_identity = true;
	if (a->config &&
	    (r = fileio_read(a->config, PROFILE_MAX_FILE, &prof, &plen, err, sizeof(err))) < 0) {
		fprintf(stderr, "%s\n", err);
		return r;
	}
	if (a->topology &&
	    (r = fileio_read(a->topology, PROFILE_MAX_FILE, &topo, &tlen, err, sizeof(err))) < 0) {
		fprintf(stderr, "%s\n", err);
		free(prof);
		return r;
	}
	state_init(&w->state);
	r = compile_profile(a->config ? a->config : "<built-in>",
			    a->config ? prof : compile_default_profile,
			    a->config ? plen : compile_default_profile_len,
			    a->topology, topo, tlen, &o, &w->state, err, sizeof(err));
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

static pid_t spawn_daemon(const struct worker *w, const struct ipc_daemon_spec *d)
{
	char path[PATH_MAX + IPC_DAEMON_NAME_MAX];
	pid_t pid;

	if (!d->name[0])
		return -1;	/* the state calls for no daemon */
	snprintf(path, sizeof(path), "%s/%s", w->bindir, d->name);
	if ((pid = fork()) == 0) {
		for (int i = 0; d->env[i]; i++)
			putenv(d->env[i]);
		execv(path, d->argv);
		fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	return pid;
}

static int cli_run(struct worker *w)
{
	struct sim_errors errs = { 0 };
	struct ipc_daemon_spec d = { 0 };
	pid_t pid = -1;
	int r = worker_stage(w, &errs);

	print_errors(w, "stage", r, &errs);
	if (r < 0)
		return WORKER_EXIT_FAILED;
	w->ctx.ready = true;
	if (w->sim->daemon) {
		r = w->sim->daemon(&w->ctx, &w->state, &d, &errs);
		print_errors(w, "daemon", r, &errs);
		if (r == 0)
			pid = spawn_daemon(w, &d);
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
	ipc_daemon_spec_free(&d);
	memset(&errs, 0, sizeof(errs));
	r = worker_discard(w, &errs);
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

static int cli_status(struct worker *w)
{
	char reason[256], file[PATH_MAX + 400];
	struct manifest m;
	bool ok;

	worker_manifest_file(w, "stage", file, sizeof(file));
	manifest_load_at(&m, w->ctx.host.root, file);
	w->ctx.ready = m.n > 0;
	ok = worker_ready(w, reason, sizeof(reason));
	printf("%s: %s%s%s (%zu staged paths)\n", w->sim->name, ok ? "ready" : "not ready",
	       ok ? "" : ": ", ok ? "" : reason, m.n);
	manifest_free(&m);
	return ok ? 0 : 1;
}

/* A worker op with its errors printed. */
static int cli_op(struct worker *w, const char *verb,
		  int (*op)(struct worker *, struct sim_errors *))
{
	struct sim_errors errs = { 0 };
	int r = op(w, &errs);

	print_errors(w, verb, r, &errs);
	return r < 0 ? WORKER_EXIT_FAILED : WORKER_EXIT_OK;
}

static const struct cli_verb {
	const char *name;
	int (*op)(struct worker *, struct sim_errors *);	/* a worker op, */
	int (*cmd)(struct worker *);				/* or a command: its exit code */
} cli_verbs[] = {
	{ "stage", worker_stage, NULL },
	{ "apply", worker_apply, NULL },
	{ "revoke", worker_revoke, NULL },
	{ "discard", worker_discard, NULL },
	{ "run", NULL, cli_run },
	{ "status", NULL, cli_status },
};

/* The flags into a and w's host root: -1 to go on with argv[optind] the
 * verb, else the exit code (help, version, usage error). */
static int cli_parse(int argc, char **argv, struct worker *w, struct cli *a)
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
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (strcmp(optarg, "/") != 0)
				snprintf(w->ctx.host.root, sizeof(w->ctx.host.root), "%s", optarg);
			break;
		case 'c': a->config = optarg; break;
		case 't': a->topology = optarg; break;
		case 'n': a->node = optarg; break;
		case 'l':
			if (log_parse_level(optarg, &a->lvl) < 0) {
				fprintf(stderr, "%s: --log-level: unknown level '%s'\n", a->comp, optarg);
				return WORKER_EXIT_USAGE;
			}
			break;
		case 'f':
			if (log_parse_format(optarg, &a->fmt) < 0) {
				fprintf(stderr, "%s: --log-format: want text or json, got '%s'\n",
					a->comp, optarg);
				return WORKER_EXIT_USAGE;
			}
			break;
		case 'h': usage(stdout, a->comp); return 0;
		case 'V': printf("%s %s\n", a->comp, MOKKA_VERSION); return 0;
		default: usage(stderr, a->comp); return WORKER_EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		usage(stderr, a->comp);
		return WORKER_EXIT_USAGE;
	}
	/* Strip trailing slashes so root + "/x" never doubles them. */
	for (size_t n = strlen(w->ctx.host.root); n > 0 && w->ctx.host.root[n - 1] == '/'; n--)
		w->ctx.host.root[n - 1] = '\0';
	return -1;
}

/* Under the supervisor: the roots come in the environment it sets. */
static int ipc_start(struct worker *w)
{
	const char *root = getenv("MOKKA_HOST_ROOT");
	const char *mock = getenv("MOKKA_MOCK_ROOT");

	if (root && strcmp(root, "/") != 0)
		snprintf(w->ctx.host.root, sizeof(w->ctx.host.root), "%s", root);
	state_init(&w->state);
	if (mock && mock[0] == '/')
		snprintf(w->state.mock_root, sizeof(w->state.mock_root), "%s", mock);
	snprintf(w->ctx.host.mock_root, sizeof(w->ctx.host.mock_root), "%s", w->state.mock_root);
	return worker_ipc_mode(w);
}

int worker_main(int argc, char **argv, const struct simulator *sim)
{
	static struct worker w;
	struct cli a = { .lvl = LOG_LVL_INFO, .fmt = LOG_FMT_TEXT };
	const struct cli_verb *v = NULL;
	struct stat st;
	int r;

	the_worker = &w;
	w.sim = sim;
	w.sock = -1;
	w.ctx.name = sim->name;
	snprintf(a.comp, sizeof(a.comp), "mokka-worker-%s", sim->name);
	log_env(&a.lvl, &a.fmt);
	log_setup(a.comp, a.lvl, a.fmt);
	locate_dirs(&w);

	/* Under the supervisor: fd 3 is our socket and no verb is given. */
	if (argc == 1 && fstat(IPC_WORKER_FD, &st) == 0 && S_ISSOCK(st.st_mode))
		return ipc_start(&w);
	if ((r = cli_parse(argc, argv, &w, &a)) >= 0)
		return r;
	log_setup(a.comp, a.lvl, a.fmt);
	for (size_t i = 0; i < sizeof(cli_verbs) / sizeof(cli_verbs[0]) && !v; i++)
		if (strcmp(argv[optind], cli_verbs[i].name) == 0)
			v = &cli_verbs[i];
	if (!v) {
		fprintf(stderr, "%s: unknown verb '%s'\n", a.comp, argv[optind]);
		usage(stderr, a.comp);
		return WORKER_EXIT_USAGE;
	}
	if (compile_cli(&w, &a) < 0)
		return WORKER_EXIT_FAILED;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	return v->op ? cli_op(&w, v->name, v->op) : v->cmd(&w);
}
