/* ib: the simulator table, Stage as a table of independent surfaces (a
 * failing one does not stop the others; every error is collected), the
 * mock-ib configuration, the daemon spec and readiness.
 *
 * Reload is "rewrite R/ib/mock-ib.json + SIGHUP": Stage writes the file
 * (so a standalone `stage` leaves one a test can start mock-ib on), the
 * supervisor signals the daemon after the pass.  ib disabled: no tree, no
 * file, no daemon. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fileio/fileio.h"
#include "ipc/log.h"
#include "workers/ib/ib.h"

/* mock-ib.json is a few KiB; a larger one is not ours. */
#define IB_CONFIG_MAX (1u << 20)

/* mock-ib.json (state_ib_encode: the daemon's config and its peers'
 * registration payload), and the directory its socket goes in, so the
 * daemon never creates anything the manifest does not know. */
int ib_stage_config(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	struct ib_out o = { &ctx->host, errs, 0 };
	char path[512], dir[sizeof(s->ib.socket)], *json = NULL, *slash;
	size_t len = 0;
	int r;

	if (!s->ib.enabled)
		return 0;
	if ((r = host_mock_path(s->mock_root, path, sizeof(path), IB_CONFIG)) < 0)
		return ib_fail(&o, "config", r, "%s%s", s->mock_root, IB_CONFIG);
	if ((r = state_ib_encode(s->node_name, &s->ib, &json, &len)) < 0)
		return ib_fail(&o, path, r, "%s: encode", path);
	r = host_write(&ctx->host, path, json, len, 0644);
	free(json);
	if (r < 0)
		return ib_fail(&o, path, r, "%s: write", path);
	snprintf(dir, sizeof(dir), "%s", s->ib.socket);
	if (dir[0] != '/' || !(slash = strrchr(dir, '/')))
		return ib_fail(&o, "config", -EINVAL, "socket \"%s\": not an absolute path",
			       s->ib.socket);
	if (slash != dir) {
		*slash = '\0';
		ib_mkdir(&o, dir);
	}
	return o.first;
}

static const struct {
	const char *name;
	int (*fn)(struct sim_ctx *, const struct state *, struct sim_errors *);
} surfaces[] = {
	{ "sysfs", ib_stage_sysfs },
	{ "devnodes", ib_stage_devnodes },
	{ "shims", ib_stage_shims },
	{ "config", ib_stage_config },
};

static int ib_stage(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	int first = 0;

	/* "/" or a relative R would put the tree over the host's own /sys. */
	if (s->mock_root[0] != '/' || strspn(s->mock_root, "/") == strlen(s->mock_root)) {
		sim_error(errs, "mock_root", "ib: mock root \"%s\": not an absolute path below /",
			  s->mock_root);
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(surfaces) / sizeof(surfaces[0]); i++) {
		int before = errs->n, r = surfaces[i].fn(ctx, s, errs);

		if (r < 0 && errs->n == before)
			sim_error(errs, surfaces[i].name, "ib: %s", strerror(-r));
		if (r < 0 && !first)
			first = r;
	}
	if (s->ib.enabled)
		log_debug("ib: staged %d HCA(s) under %s%s", s->ib.num_hcas, s->mock_root, IB_DIR);
	return first;
}

static int ib_daemon(struct sim_ctx *ctx, const struct state *s, struct ipc_daemon_spec *d,
		     struct sim_errors *errs)
{
	const char *argv[] = { IB_DAEMON, "--config", NULL, "--host-root",
			       ctx->host.root[0] ? ctx->host.root : "/" };
	char conf[512];
	int r;

	/* IB off: describe no daemon; the supervisor stops a running one. */
	if (!s->ib.enabled)
		return 0;
	if ((r = host_mock_path(s->mock_root, conf, sizeof(conf), IB_CONFIG)) < 0) {
		sim_error(errs, "daemon", "ib: %s%s: %s", s->mock_root, IB_CONFIG, strerror(-r));
		return r;
	}
	argv[2] = conf;
	snprintf(d->name, sizeof(d->name), IB_DAEMON);
	snprintf(d->reload_file, sizeof(d->reload_file), "%s", conf);
	for (size_t i = 0; i < sizeof(argv) / sizeof(argv[0]); i++)
		if (ipc_daemon_spec_add_arg(d, argv[i]) < 0) {
			sim_error(errs, "daemon", "ib: out of memory");
			return -ENOMEM;
		}
	return 0;
}

/* 0 when something accepts on the unix socket at path; a path too long
 * for sun_path is judged by its type alone. */
static int socket_accepts(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, r = 0;

	if (strlen(path) >= sizeof(sa.sun_path))
		return stat(path, &st) == 0 && S_ISSOCK(st.st_mode) ? 0 : -ENOENT;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
		return -errno;
	/* EAGAIN: a full backlog, but a listener. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EAGAIN)
		r = -errno;
	close(fd);
	return r;
}

/* Ready once mock-ib serves its socket (the tree alone answers no MAD). */
static bool ib_ready(struct sim_ctx *ctx, const struct state *s, char *reason, size_t len)
{
	char sock[8192];
	int r;

	if (!s->ib.enabled)
		return true;
	snprintf(sock, sizeof(sock), "%s%s", ctx->host.root, s->ib.socket);
	if ((r = socket_accepts(sock)) == 0)
		return true;
	snprintf(reason, len, "%s not serving %s yet: %s", IB_DAEMON, s->ib.socket, strerror(-r));
	return false;
}

/* Discard runs after the supervisor stopped mock-ib, which removes its
 * socket on SIGTERM; one killed outright leaves it, in the directory
 * Stage owns.  The socket path comes from the config Stage wrote. */
static int ib_discard(struct sim_ctx *ctx, struct sim_errors *errs)
{
	char conf[8192], node[STATE_NAME_MAX], err[256], sock[8192];
	char *json = NULL;
	size_t len = 0;
	struct state_ib *ib;
	struct stat st;

	snprintf(conf, sizeof(conf), "%s%s%s", ctx->host.root, ctx->host.mock_root, IB_CONFIG);
	if (fileio_read(conf, IB_CONFIG_MAX, &json, &len, NULL, 0) < 0)
		return 0;	/* no config: no socket of ours to clean up */
	if ((ib = calloc(1, sizeof(*ib))) &&
	    state_ib_decode(json, len, node, ib, err, sizeof(err)) == 0 && ib->socket[0] == '/') {
		snprintf(sock, sizeof(sock), "%s%s", ctx->host.root, ib->socket);
		/* Only a socket reached without a link (fileio/beneath.h). */
		if (host_beneath(&ctx->host, ib->socket) && lstat(sock, &st) == 0 &&
		    S_ISSOCK(st.st_mode) && socket_accepts(sock) < 0 &&
		    host_unlink(&ctx->host, ib->socket) == 0)
			log_info("ib: removed mock-ib's stale socket %s", ib->socket);
	}
	free(ib);
	free(json);
	return 0;
}

/* The HCAs' sysfs tree, their device nodes, the shims and mock-ib's
 * config each swap as one (workers/generation.h): a restarted mock-ib
 * never reads the config of a pass that failed. */
static const char *const ib_gens[] = { IB_SYS, IB_DEV, IB_LIB, IB_CONFIG, NULL };

/* Incremental reconcile (workers/stage_skip.h): Stage reads the state's
 * ib section and top-level fields, and copies the shims in. */
static const char *const ib_stage_ignores[] = {
	"devices", "roots", "fabric", "cri", "imex", "pci", "topology_doc", "profile_doc",
	"profile", NULL,
};

static void ib_inputs(struct sim_ctx *ctx, const struct state *s, struct skip_key *k)
{
	char src[4200];

	for (int i = 0; ib_shim_files[i]; i++) {
		snprintf(src, sizeof(src), "%s/%s", ctx->libdir ? ctx->libdir : ".", ib_shim_files[i]);
		skip_key_stat(k, src);
	}
}

const struct simulator ib_simulator = {
	.name = "ib",
	.roles = SIM_ROLE_STAGE | SIM_ROLE_DAEMON,
	.stage = ib_stage,
	.daemon = ib_daemon,
	.discard = ib_discard,
	.ready = ib_ready,
	.gens = ib_gens,
	.inputs = ib_inputs,
	.stage_ignores = ib_stage_ignores,
};
