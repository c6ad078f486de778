/* cri: the simulator table (SURFACES.md §2, §7.6).
 *
 * Publish (after the barrier, only for a pass whose every Stage succeeded;
 * before every other simulator's Publish, ROLE_STAGE_FIRST): withdraw
 *   nvml-mock-nri.yaml, so the NRI plugin falls back to raw device nodes
 *   while gpudriver's publish prunes; re-render a published nvidia.yaml
 *   for the new state, so entries of departing GPUs go before their nodes.
 *   (In Stage this changed the specs of a pass that then failed.)
 * Apply: toolkit and containerd setup (setup.c), both specs, then one
 *   restart of containerd when its configuration bytes changed, and once
 *   when the node pod starts; a containerd that does not come back makes
 *   cri not ready until it runs again (podstart.c).
 * Revoke: the drop-in goes and a restart is queued; the manifest removes
 *   the specs (and a config.toml we created).  The imports entry stays. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ipc/log.h"
#include "workers/cri/cri.h"

/* What Revoke needs when the worker was started for teardown without a
 * state: written by Apply under R/state, removed by Revoke. */
#define REVOKE_FILE "/state/cri.revoke"

static struct {
	bool setup_ok;
	char reason[256];
	bool restart_pending;
	bool down;			/* containerd did not come back (podstart.c) */
	bool refused;			/* ... because systemctl refused the restart */
	char down_reason[768];
} cri;

static void test_delay(void)
{
	/* Test hook: hold the withdrawal so a test can watch the ordering. */
	const char *v = getenv("MOKKA_TEST_CRI_STAGE_DELAY_MS");
	long ms = v ? atol(v) : 0;

	if (ms > 0) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
}

static bool published(const struct host *h, const char *spec)
{
	char res[4096], full[8192];
	struct stat st;

	return cri_resolve_parent(h, spec, res, sizeof(res)) == 0 &&
	       host_path(h, res, full, sizeof(full)) == 0 && lstat(full, &st) == 0;
}

static int cri_withdraw(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	struct host h = ctx->host;
	char *text = NULL;
	size_t len = 0;
	int r;

	/* Withdrawing is not a creation: nothing goes in the stage manifest. */
	h.own = NULL;
	h.prev = NULL;
	test_delay();
	if ((r = cri_publish(&h, CRI_NRI_SPEC, NULL, 0, errs)) < 0)
		return r;
	if (!published(&h, CRI_SPEC))
		return 0;	/* nothing published: Apply publishes after the barrier */
	if ((r = cri_render_spec(&h, s, &text, &len)) < 0) {
		sim_error(errs, CRI_SPEC, "render: %s", strerror(-r));
		return r;
	}
	r = cri_publish(&h, CRI_SPEC, text, len, errs);
	free(text);
	return r;
}

static void remember_for_revoke(struct sim_ctx *ctx, const struct state *s)
{
	struct host bare = ctx->host;
	char path[512];

	bare.own = NULL;
	bare.prev = NULL;
	snprintf(path, sizeof(path), "%s" REVOKE_FILE, s->mock_root);
	if (host_writef(&bare, path, 0644, "%s\n%s\n%s/%s\n", s->cri.systemd_unit,
			s->cri.restart, s->cri.config_dir, CRI_DROPIN_NAME) < 0)
		log_warn("cri: %s: cannot remember the unit for shutdown", path);
}

static void restart(struct sim_ctx *ctx, const struct state *s)
{
	const char *unit = s->cri.systemd_unit;
	char why[512];

	if (!cri.restart_pending)
		return;
	if (strcmp(s->cri.restart, "systemd") != 0) {
		log_warn("cri: containerd's configuration changed or the node pod started: restart "
			 "pending (--container-runtime-restart %s); restart %s to load it",
			 s->cri.restart, unit);
		cri.restart_pending = false;
		cri_pod_restart_done(&ctx->host, s->mock_root);
		return;
	}
	/* kept pending on failure: the next Apply tries again */
	cri.refused = cri_restart_unit(&ctx->host, unit, false, why, sizeof(why)) < 0;
	if (cri.refused || cri_wait_comeback(&ctx->host, unit, why, sizeof(why)) < 0) {
		cri.down = true;
		snprintf(cri.down_reason, sizeof(cri.down_reason), "%s did not come back after its "
			 "restart: %s (journalctl -u %s on the node says why; no container starts "
			 "until it runs again)", unit, why, unit);
		log_error("cri: %s", cri.down_reason);
		return;
	}
	log_info("cri: restarted %s: it loads the nvidia handler and CDI", unit);
	cri.restart_pending = false;
	cri.down = false;
	cri_pod_restart_done(&ctx->host, s->mock_root);
}

static int cri_apply(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	static const struct {
		const char *spec;
		int (*render)(const struct host *, const struct state *, char **, size_t *);
	} specs[] = {
		{ CRI_SPEC, cri_render_spec },
		{ CRI_NRI_SPEC, cri_render_nri_spec },
	};
	struct cri_setup_result res;
	int r;

	/* The toolkit before the specs that name its hook (SURFACES.md §7.6). */
	cri_setup(ctx, s, &res);
	cri.setup_ok = res.ready;
	snprintf(cri.reason, sizeof(cri.reason), "%s", res.reason);
	if (res.installed)
		remember_for_revoke(ctx, s);
	cri.restart_pending |= res.changed;
	/* once per node pod, even with the file unchanged (podstart.c) */
	if (res.installed && !cri.restart_pending && cri_pod_first_apply(&ctx->host, s->mock_root)) {
		log_info("cri: the node pod started: restarting %s once", s->cri.systemd_unit);
		cri.restart_pending = true;
	}
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		char *text = NULL;
		size_t len = 0;

		if (sim_aborted(ctx)) {
			sim_error(errs, specs[i].spec, "aborted");
			return -ECANCELED;
		}
		if ((r = specs[i].render(&ctx->host, s, &text, &len)) < 0) {
			sim_error(errs, specs[i].spec, "render: %s", strerror(-r));
			return r;
		}
		if (!text)
			log_warn("cri: no GPU has a device node under %s%s/driver/dev: %s not published",
				 ctx->host.root, s->mock_root, specs[i].spec);
		r = cri_publish(&ctx->host, specs[i].spec, text, len, errs);
		free(text);
		if (r < 0)
			return r;
	}
	restart(ctx, s);
	return 0;
}

/* Revoke's extra step: our drop-in goes and containerd is told to reload
 * (queued: --no-block).  The unit and mode come from what Apply used. */
static int cri_revoke(struct sim_ctx *ctx, struct sim_errors *errs)
{
	char path[512], *text = NULL, *mark = NULL, unit[256] = "", mode[32] = "", dropin[512] = "";
	char res[4096], why[512];
	size_t len = 0, mlen = 0;
	int r;

	cri_pod_forget(&ctx->host, ctx->host.mock_root);
	snprintf(path, sizeof(path), "%s" REVOKE_FILE, ctx->host.mock_root);
	if (cri_read(&ctx->host, path, &text, &len) < 0)
		return 0;	/* Apply never set containerd up */
	if (sscanf(text, "%255[^\n]\n%31[^\n]\n%511[^\n]", unit, mode, dropin) != 3) {
		free(text);
		sim_error(errs, path, "unreadable; remove %s by hand and restart containerd",
			  CRI_DROPIN_NAME);
		return -EINVAL;
	}
	free(text);
	r = cri_resolve_parent(&ctx->host, dropin, res, sizeof(res));
	if (r == 0 && cri_read(&ctx->host, res, &mark, &mlen) == 0 &&
	    strncmp(mark, CRI_DROPIN_MARK, strlen(CRI_DROPIN_MARK)) == 0) {
		if ((r = host_unlink(&ctx->host, res)) < 0)
			sim_error(errs, dropin, "remove: %s", strerror(-r));
		else if (strcmp(mode, "systemd") != 0)
			log_warn("cri: removed %s: restart pending (--container-runtime-restart %s); "
				 "restart %s to unload it", dropin, mode, unit);
		else if (cri_restart_unit(&ctx->host, unit, true, why, sizeof(why)) < 0)
			log_error("cri: removed %s, but restarting %s failed: %s", dropin, unit, why);
		else
			log_info("cri: removed %s; restart of %s queued", dropin, unit);
	}
	free(mark);
	host_unlink(&ctx->host, path);
	return errs->n ? -EIO : 0;
}

static bool cri_ready(struct sim_ctx *ctx, const struct state *s, char *reason, size_t len)
{
	char why[512];

	if (cri.down && !cri.refused &&
	    cri_unit_active(&ctx->host, s->cri.systemd_unit, why, sizeof(why)) == 0) {
		/* restarted after our file was written: it runs with it (after a
		 * refused restart an active unit may be the old instance) */
		log_info("cri: %s runs again", s->cri.systemd_unit);
		cri.down = false;
		cri.restart_pending = false;
		cri_pod_restart_done(&ctx->host, s->mock_root);
	}
	if (cri.down) {
		snprintf(reason, len, "%s", cri.down_reason);
		return false;
	}
	if (cri.setup_ok) {
		reason[0] = '\0';
		return true;
	}
	snprintf(reason, len, "%s", cri.reason[0] ? cri.reason : "container runtime setup pending");
	return false;
}

const struct simulator cri_simulator = {
	.name = "cri",
	.roles = SIM_ROLE_STAGE | SIM_ROLE_APPLY | SIM_ROLE_DAEMON,
	.publish = cri_withdraw,
	.daemon = cri_nri_daemon,
	.apply = cri_apply,
	.revoke = cri_revoke,
	.ready = cri_ready,
};
