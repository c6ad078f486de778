/* fabricmanager: stages the marker directory and the daemon's config, and
 * describes the nv-fabricmanager stand-in the supervisor runs
 * (SURFACES.md §5, §11.9).  Reload = rewrite the config + SIGHUP. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "workers/simulator.h"

#define FM_CONF "/fabricmanager/fabricmanager.conf"
#define FM_MARKER "fabricmanager.ready"

static int fm_stage(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	char conf[512];
	int r;

	if (!s->fabric.enabled)
		return 0;
	if (s->fabric.state_dir[0] != '/' || strstr(s->fabric.state_dir, "..")) {
		sim_error(errs, "fabric-state", "state dir '%s' must be an absolute path without '..'",
			  s->fabric.state_dir);
		return -EINVAL;
	}
	if ((r = host_mkdirs(&ctx->host, s->fabric.state_dir, 0755)) < 0) {
		sim_error(errs, "fabric-state", "%s: mkdir: %s", s->fabric.state_dir, strerror(-r));
		return r;
	}
	snprintf(conf, sizeof(conf), "%s%s", s->mock_root, FM_CONF);
	r = host_writef(&ctx->host, conf, 0644,
			"# written by mokka-worker-fabricmanager; re-read on SIGHUP\n"
			"STATE_DIR=%s\nINIT_DELAY_MS=%ld\nCLUSTER_UUID=%s\nCLIQUE_ID=%u\n",
			s->fabric.state_dir, s->fabric.init_delay_ms,
			s->fabric.cluster_uuid, s->fabric.clique_id);
	if (r < 0)
		sim_error(errs, conf, "write: %s", strerror(-r));
	return r;
}

static int fm_daemon(struct sim_ctx *ctx, const struct state *s,
		     struct ipc_daemon_spec *d, struct sim_errors *errs)
{
	char conf[4200];
	const char *argv[] = { "nv-fabricmanager", "-c", conf, "--host-root",
			       ctx->host.root[0] ? ctx->host.root : "/" };

	/* Fabric off: describe no daemon; the supervisor stops a running one. */
	if (!s->fabric.enabled)
		return 0;
	snprintf(conf, sizeof(conf), "%s%s", s->mock_root, FM_CONF);
	snprintf(d->name, sizeof(d->name), "mokka-fabricmanager");
	snprintf(d->reload_file, sizeof(d->reload_file), "%s", conf);
	for (size_t i = 0; i < sizeof(argv) / sizeof(argv[0]); i++)
		if (ipc_daemon_spec_add_arg(d, argv[i]) < 0) {
			sim_error(errs, "daemon", "out of memory");
			return -ENOMEM;
		}
	return 0;
}

static int fm_discard(struct sim_ctx *ctx, struct sim_errors *errs)
{
	/* The daemon normally removes its marker on SIGTERM; a crashed one
	 * leaves it, so Discard removes it too (it is inside the state dir). */
	char conf[8192], line[512];
	FILE *f;

	snprintf(conf, sizeof(conf), "%s%s%s", ctx->host.root, ctx->host.mock_root, FM_CONF);
	if (!(f = fopen(conf, "re")))
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "STATE_DIR=", 10) == 0) {
			char marker[1024];
			line[strcspn(line, "\n")] = '\0';
			snprintf(marker, sizeof(marker), "%s/%s", line + 10, FM_MARKER);
			int r = host_unlink(&ctx->host, marker);
			if (r < 0)
				sim_error(errs, marker, "unlink: %s", strerror(-r));
		}
	}
	fclose(f);
	return 0;
}

static bool fm_ready(struct sim_ctx *ctx, const struct state *s, char *reason, size_t len)
{
	char marker[8192];

	if (!s->fabric.enabled)
		return true;
	snprintf(marker, sizeof(marker), "%s%s/%s", ctx->host.root, s->fabric.state_dir, FM_MARKER);
	if (access(marker, F_OK) == 0)
		return true;
	snprintf(reason, len, "fabric manager marker %s not written yet", FM_MARKER);
	return false;
}

static const struct simulator fabricmanager_simulator = {
	.name = "fabricmanager",
	.roles = SIM_ROLE_STAGE | SIM_ROLE_DAEMON,
	.stage = fm_stage,
	.daemon = fm_daemon,
	.discard = fm_discard,
	.ready = fm_ready,
};

int main(int argc, char **argv)
{
	return worker_main(argc, argv, &fabricmanager_simulator);
}
