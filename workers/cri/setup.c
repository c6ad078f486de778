/* The container runtime setup of one Apply (SURFACES.md §2.1): decide
 * whether to stand aside, install the toolkit, write the drop-in and the
 * imports entry.  It never fails Apply: the specs are published either
 * way, and a problem only makes the simulator not ready until a later
 * pass gets through.
 *
 * Stand aside (install nothing, stay ready, say why in the log):
 *   --container-runtime none;
 *   no containerd on the host PATH (k3s, rke2 and CRI-O bring their own);
 *   a toolkit another installer placed (a package path that is not our
 *   link): theirs wins, we neither touch containerd nor revert anything;
 *   a config.toml that does not parse: we would only make it worse. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio/fileio.h"
#include "ipc/log.h"
#include "workers/cri/cri.h"
#include "workers/manifest.h"

int cri_read(const struct host *h, const char *path, char **out, size_t *len)
{
	char full[8192];
	int r;

	*out = NULL;
	*len = 0;
	if ((r = host_path(h, path, full, sizeof(full))) < 0)
		return r;
	r = fileio_read(full, TOML_MAX_INPUT, out, len, NULL, 0);
	return r == -EISDIR ? -EINVAL : r;	/* not a file */
}

/* Standing aside changes nothing, and removes nothing either: whatever
 * an earlier pass of ours installed stays owned (Revoke still cleans it). */
static void keep_previous(struct host *h)
{
	for (size_t i = 0; h->prev && h->own && i < h->prev->n; i++)
		manifest_add(h->own, h->prev->paths[i], h->prev->kinds[i]);
}

static void stand_aside(struct sim_ctx *ctx, struct cri_setup_result *res, const char *fmt,
			const char *what)
{
	char msg[768];

	snprintf(msg, sizeof(msg), fmt, what);
	log_warn("cri: %s; the CDI specs are still published", msg);
	keep_previous(&ctx->host);
	res->ready = true;
}

/* Write text at path (a resolved host path) when it differs; mode of the
 * file there, else dflt.  *changed when bytes changed. */
static int put(struct host *h, const char *path, const char *text, size_t len, mode_t dflt,
	       bool *changed)
{
	char *cur = NULL, full[8192];
	size_t curlen = 0;
	struct stat st;
	mode_t mode = dflt;
	int r;

	if (host_path(h, path, full, sizeof(full)) == 0 && stat(full, &st) == 0)
		mode = st.st_mode & 07777;
	r = cri_read(h, path, &cur, &curlen);
	if (r < 0 && r != -ENOENT)
		return r;
	if (r < 0 || curlen != len || memcmp(cur, text, len) != 0)
		*changed = true;
	free(cur);
	return host_write(h, path, text, len, mode);
}

static void not_ready(struct cri_setup_result *res, const char *fmt, const char *a,
		      const char *b)
{
	res->ready = false;
	snprintf(res->reason, sizeof(res->reason), fmt, a, b);
	log_error("cri: %s", res->reason);
}

/* Stand-aside rules that need no config: 1 = stand aside (done), 0 = go on. */
static int standing_aside(struct sim_ctx *ctx, const struct state_cri *c,
			  struct cri_setup_result *res)
{
	char found[512];
	int r;

	if (strcmp(c->runtime, "containerd") != 0) {
		log_info("cri: container runtime setup off (--container-runtime %s)", c->runtime);
		keep_previous(&ctx->host);
		return 1;
	}
	if (!cri_host_has(&ctx->host, "containerd", found, sizeof(found))) {
		stand_aside(ctx, res, "no containerd on the host PATH under %s (k3s, rke2 or CRI-O "
			    "run their own): installing nothing",
			    ctx->host.root[0] ? ctx->host.root : "/");
		return 1;
	}
	if ((r = cri_foreign_toolkit(&ctx->host, found, sizeof(found))) > 0) {
		stand_aside(ctx, res, "%s exists and is not Mokka's link: another installer owns "
			    "the NVIDIA Container Toolkit; leaving containerd alone", found);
		return 1;
	}
	if (r < 0) {
		not_ready(res, "toolkit paths: %s%s", strerror(-r), "");
		return 1;
	}
	return 0;
}

/* Write the plan: the drop-in first (an import of an empty directory is
 * harmless, a drop-in nothing imports is inert), then config.toml. */
static void write_plan(struct sim_ctx *ctx, const struct state_cri *c, const char *config,
		       const struct cri_plan *plan, struct cri_setup_result *res)
{
	char dropin[4096];
	int r;

	if ((r = cri_resolve_parent(&ctx->host, plan->dropin_path, dropin, sizeof(dropin))) < 0 ||
	    (r = put(&ctx->host, dropin, plan->dropin, plan->dropin_len, 0644, &res->changed)) < 0) {
		not_ready(res, "%s: write: %s", plan->dropin_path, strerror(-r));
		return;
	}
	if (plan->config &&
	    (r = put(&ctx->host, config, plan->config, plan->config_len, 0644, &res->changed)) < 0) {
		not_ready(res, "%s: write: %s", c->config, strerror(-r));
		return;
	}
	if (plan->config)
		log_info("cri: %s: added the imports entry %s/*.toml (it stays on shutdown)",
			 c->config, c->config_dir);
	res->installed = true;
}

void cri_setup(struct sim_ctx *ctx, const struct state *s, struct cri_setup_result *res)
{
	const struct state_cri *c = &s->cri;
	struct sim_errors errs = { 0 };
	struct cri_plan plan;
	char config[4096], why[512], binary[512];
	char *text = NULL;
	size_t len = 0;
	bool tk, have_runtime, exists;
	int r;

	memset(res, 0, sizeof(*res));
	res->ready = true;
	if (standing_aside(ctx, c, res))
		return;
	/* config.toml through its links: we edit the file, not the link. */
	if ((r = cri_resolve(&ctx->host, c->config, config, sizeof(config))) < 0) {
		not_ready(res, "%s: %s", c->config, strerror(-r));
		return;
	}
	r = cri_read(&ctx->host, config, &text, &len);
	if (r < 0 && r != -ENOENT) {
		not_ready(res, "%s: read: %s", c->config, strerror(-r));
		return;
	}
	exists = r == 0;
	/* A broken config is found before anything is installed. */
	if (exists && cri_validate_config(c->config, text, len, why, sizeof(why)) < 0) {
		free(text);
		stand_aside(ctx, res, "containerd's config does not parse (%s): installing nothing "
			    "and leaving it as it is", why);
		return;
	}
	if ((r = cri_toolkit_install(&ctx->host, &tk, &errs)) < 0) {
		free(text);
		not_ready(res, "toolkit: %s: %s", errs.n ? errs.e[0].surface : "install",
			  errs.n ? errs.e[0].message : strerror(-r));
		return;
	}
	/* The handler runs the toolkit's runtime when the host has ours or
	 * its own at the package path. */
	have_runtime = cri_host_has(&ctx->host, "nvidia-container-runtime", binary,
				    sizeof(binary)) && strcmp(binary, CRI_RUNTIME_PATH) == 0;
	if (!have_runtime)
		log_warn("cri: no %s on the host: the nvidia handler runs containerd's runc; "
			 "CDI devices come from containerd's own CDI support", CRI_RUNTIME_PATH);
	r = cri_containerd_plan(c, text, len, exists, have_runtime ? CRI_RUNTIME_PATH : NULL,
				&plan, why, sizeof(why));
	free(text);
	if (r == -EINVAL) {
		stand_aside(ctx, res, "%s: installing nothing and leaving containerd's config as it is",
			    why);
		return;
	}
	if (r < 0) {
		not_ready(res, "containerd config: %s%s", strerror(-r), "");
		return;
	}
	if (cri_ctk_available(&ctx->host))
		cri_ctk_configure(ctx, c, config, plan.dropin_path, res);
	else
		write_plan(ctx, c, config, &plan, res);
	cri_plan_free(&plan);
}
