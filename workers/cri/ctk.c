/* `nvidia-ctk runtime configure`, when the toolkit we installed brings
 * nvidia-ctk: the seed's command line (SURFACES.md §2.1), run chrooted into
 * the host root with a clean environment, so the tool writes the paths the
 * host sees.  Its results are checked like our own: both files must parse
 * (else the old bytes go back), the drop-in gets our first line (Revoke
 * knows it by that) and, with the NRI plugin on, the NRI table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipc/log.h"
#include "workers/cri/cri.h"
#include "workers/manifest.h"

#define CTK "/usr/bin/nvidia-ctk"
#define CTK_TIMEOUT_MS 10000	/* with the restart, inside the 30 s Apply deadline */

bool cri_ctk_available(const struct host *h)
{
	char full[8192], target[4096];
	ssize_t n;

	/* Only our own link: a foreign toolkit made us stand aside already. */
	if (host_path(h, CTK, full, sizeof(full)) < 0 ||
	    (n = readlink(full, target, sizeof(target) - 1)) < 0)
		return false;
	target[n] = '\0';
	return strcmp(target, CRI_TOOLKIT_DIR "/nvidia-ctk") == 0 &&
	       cri_host_has(h, "nvidia-ctk", full, sizeof(full));
}

struct saved {
	char path[4096];	/* resolved host path */
	char *text;		/* NULL: did not exist */
	size_t len;
};

static void save(const struct host *h, struct saved *s, const char *path)
{
	snprintf(s->path, sizeof(s->path), "%s", path);
	if (cri_read(h, path, &s->text, &s->len) < 0)
		s->text = NULL;
}

static void restore(const struct host *h, const struct saved *s)
{
	struct host bare = *h;

	bare.own = NULL;
	bare.prev = NULL;
	if (s->text)
		host_write(&bare, s->path, s->text, s->len, 0644);
	else
		host_unlink(&bare, s->path);
}

/* The drop-in nvidia-ctk wrote, as we publish it: our first line, the NRI
 * table when on.  0 or -EINVAL/-ENOMEM with why. */
static int finish_dropin(const struct state_cri *c, const char *config_text, size_t config_len,
			 const char *ctk_text, size_t ctk_len, char **out, size_t *len,
			 char *why, size_t whylen)
{
	struct toml_doc d, cfg = { 0 };
	struct toml_error e;
	char *body = NULL;
	size_t blen;
	int r;

	if ((r = toml_parse(ctk_text, ctk_len, &d, &e)) < 0) {
		snprintf(why, whylen, "nvidia-ctk wrote a drop-in that does not parse: %d:%d: %s",
			 e.line, e.col, e.msg);
		return r;
	}
	if (c->nri) {
		if (config_text)
			toml_parse(config_text, config_len, &cfg, &e);
		if ((r = cri_add_nri(d.root, cfg.root, c)) < 0 ||
		    (r = toml_write(d.root, &body, &blen)) < 0) {
			toml_doc_free(&d);
			toml_doc_free(&cfg);
			return r;
		}
		toml_doc_free(&cfg);
	}
	toml_doc_free(&d);
	if (asprintf(out, "%s: nvidia-ctk runtime configure wrote the rest.\n%.*s",
		     CRI_DROPIN_MARK, (int)(body ? blen : ctk_len), body ? body : ctk_text) < 0) {
		free(body);
		return -ENOMEM;
	}
	free(body);
	*len = strlen(*out);
	return 0;
}

/* The directory of host path path, in buf. */
static const char *dirname_of(const char *path, char *buf, size_t len)
{
	const char *slash = strrchr(path, '/');

	snprintf(buf, len, "%.*s", slash && slash != path ? (int)(slash - path) : 1, path);
	return buf;
}

/* Whether the drop-in's directory is there before the tool runs: if the
 * tool makes it, it is ours to remove, as when cri writes the drop-in. */
static bool dir_exists(const struct host *h, const char *path)
{
	char dir[4096], full[8192];
	struct stat st;

	return host_path(h, dirname_of(path, dir, sizeof(dir)), full, sizeof(full)) == 0 &&
	       lstat(full, &st) == 0 && S_ISDIR(st.st_mode);
}

/* nvidia-ctk rewrites config.toml in its own key order even when its
 * imports already cover the drop-in: then the host's own bytes go back,
 * so the node's config is what it was (and teardown leaves it so). */
static bool imports_already_cover(const struct saved *old, const struct state_cri *c,
				  const char *dropin_host)
{
	struct toml_doc d;
	struct toml_error e;
	bool yes;

	if (!old->text || toml_parse(old->text, old->len, &d, &e) < 0)
		return false;
	yes = cri_imports_cover(toml_get(d.root, "imports"), c->config, dropin_host);
	toml_doc_free(&d);
	return yes;
}

static bool same(const struct saved *s, const char *text, size_t len)
{
	return s->text && s->len == len && memcmp(s->text, text, len) == 0;
}

void cri_ctk_configure(struct sim_ctx *ctx, const struct state_cri *c, const char *config,
		       const char *dropin_host, struct cri_setup_result *res)
{
	static const char *const env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
	char a_config[600], a_dropin[600], dropin[4096], dirbuf[4096], said[512], why[512] = "";
	char *argv[] = { CTK, "runtime", "configure", "--runtime=containerd",
			 "--config-source=file", a_config, a_dropin,
			 "--nvidia-runtime-name=" CRI_RUNTIME_NAME,
			 "--nvidia-runtime-path=" CRI_RUNTIME_PATH, "--nvidia-set-as-default",
			 "--cdi.enabled", NULL };
	struct saved old_config, old_dropin;
	char *ctk_dropin = NULL, *new_config = NULL, *final = NULL;
	size_t ctk_len = 0, config_len = 0, final_len = 0;
	bool dir_was;
	int r;

	res->ready = false;
	if ((r = cri_resolve_parent(&ctx->host, dropin_host, dropin, sizeof(dropin))) < 0) {
		snprintf(res->reason, sizeof(res->reason), "%s: %s", dropin_host, strerror(-r));
		return;
	}
	save(&ctx->host, &old_config, config);
	save(&ctx->host, &old_dropin, dropin);
	dir_was = dir_exists(&ctx->host, dropin);
	snprintf(a_config, sizeof(a_config), "--config=%s", c->config);
	snprintf(a_dropin, sizeof(a_dropin), "--drop-in-config=%s", dropin_host);
	r = cri_run_in_root(&ctx->host, argv, env, CTK_TIMEOUT_MS, said, sizeof(said));
	if (r != 0) {
		snprintf(why, sizeof(why), "nvidia-ctk runtime configure: %s%s%s",
			 r < 0 ? strerror(-r) : "failed", said[0] ? ": " : "", said);
		goto undo;
	}
	if ((r = cri_read(&ctx->host, dropin, &ctk_dropin, &ctk_len)) < 0) {
		snprintf(why, sizeof(why), "nvidia-ctk wrote no %s: %s", dropin_host, strerror(-r));
		goto undo;
	}
	if ((r = cri_read(&ctx->host, config, &new_config, &config_len)) == 0 &&
	    cri_validate_config(c->config, new_config, config_len, why, sizeof(why)) < 0)
		goto undo;
	if (new_config && imports_already_cover(&old_config, c, dropin_host)) {
		restore(&ctx->host, &old_config);
		free(new_config);
		new_config = NULL;
	}
	if (finish_dropin(c, new_config, config_len, ctk_dropin, ctk_len, &final, &final_len,
			  why, sizeof(why)) < 0 ||
	    cri_validate_config(dropin_host, final, final_len, why, sizeof(why)) < 0)
		goto undo;
	if ((r = host_write(&ctx->host, dropin, final, final_len, 0644)) < 0) {
		snprintf(why, sizeof(why), "%s: write: %s", dropin_host, strerror(-r));
		goto undo;
	}
	/* What the tool created is ours to remove; a config.toml that was
	 * there before is not. */
	if (ctx->host.own) {
		if (!dir_was)
			manifest_add(ctx->host.own, dirname_of(dropin, dirbuf, sizeof(dirbuf)), 'd');
		manifest_add(ctx->host.own, dropin, 'f');
		if (!old_config.text && new_config)
			manifest_add(ctx->host.own, config, 'f');
	}
	res->changed = !same(&old_dropin, final, final_len) ||
		       (new_config && !same(&old_config, new_config, config_len));
	res->installed = true;
	res->ready = true;
	log_info("cri: nvidia-ctk runtime configure wrote %s", dropin_host);
	goto out;
undo:
	restore(&ctx->host, &old_config);
	restore(&ctx->host, &old_dropin);
	snprintf(res->reason, sizeof(res->reason), "%s (its changes undone)", why);
	log_error("cri: %s", res->reason);
out:
	free(old_config.text);
	free(old_dropin.text);
	free(ctk_dropin);
	free(new_config);
	free(final);
}
