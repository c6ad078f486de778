/* The engine config the mock NVML reads, R/driver/config/config.yaml: the
 * profile bytes as given, except that when the compiled device count is
 * smaller than the profile's list (GPU_COUNT) `num_devices: N` is set
 * under `system:` so the library caps its count the same way.  Written
 * atomically.  The overrides document beside it belongs to mokka-ctl;
 * Stage only makes sure it exists (empty) so the library's watcher has a
 * file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "overrides/overrides.h"
#include "workers/gpudriver/gpudriver.h"
#include "workers/gpudriver/nvml_image.h"
#include "workers/manifest.h"

struct line {
	const char *p;
	size_t len;		/* without the newline */
	size_t indent;
	bool content;		/* not blank, not a comment */
};

static const char *next_line(const char *p, const char *end, struct line *l)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	size_t i = 0;

	l->p = p;
	l->len = (size_t)((nl ? nl : end) - p);
	while (i < l->len && l->p[i] == ' ')
		i++;
	l->indent = i;
	l->content = i < l->len && l->p[i] != '#' && l->p[i] != '\r';
	return nl ? nl + 1 : end;
}

/* "system:" alone on its line (a trailing comment allowed). */
static bool is_system_block(const struct line *l)
{
	size_t i = 7;

	if (l->indent != 0 || l->len < 7 || memcmp(l->p, "system:", 7) != 0)
		return false;
	while (i < l->len && (l->p[i] == ' ' || l->p[i] == '\t' || l->p[i] == '\r'))
		i++;
	return i == l->len || l->p[i] == '#';
}

int gd_engine_config_render(const struct state *s, int profile_devices,
			    bool profile_has_num_devices, char **out, size_t *len,
			    char *err, size_t errlen)
{
	const char *doc = s->profile_doc ? s->profile_doc : "", *end = doc + s->profile_len;
	const char *p = doc, *insert = NULL, *replace = NULL, *replace_end = NULL;
	size_t indent = 2;
	struct line l;
	FILE *f;

	*out = NULL;
	if (!profile_has_num_devices && (profile_devices < 0 || s->num_devices >= profile_devices)) {
		if (!(*out = malloc(s->profile_len + 1)))
			return -ENOMEM;
		memcpy(*out, doc, s->profile_len);
		(*out)[s->profile_len] = '\0';
		*len = s->profile_len;
		return 0;
	}
	while (p < end && !insert) {
		p = next_line(p, end, &l);
		if (is_system_block(&l))
			insert = p;
	}
	if (!insert) {
		snprintf(err, errlen, "no block-style 'system:' mapping at the top level "
			 "to set num_devices: %d under", s->num_devices);
		return -EINVAL;
	}
	/* The block runs until the next top-level key; its first key sets the
	 * indentation, and an existing num_devices line is replaced. */
	bool first = true;
	for (p = insert; p < end;) {
		const char *start = p;
		p = next_line(p, end, &l);
		if (!l.content)
			continue;
		if (l.indent == 0)
			break;
		if (first)
			indent = l.indent;
		first = false;
		if (l.indent == indent && l.len - l.indent >= 12 &&
		    memcmp(l.p + l.indent, "num_devices:", 12) == 0) {
			replace = start;
			replace_end = p;
		}
	}
	if (!(f = open_memstream(out, len)))
		return -ENOMEM;
	if (replace) {
		fwrite(doc, 1, (size_t)(replace - doc), f);
		fprintf(f, "%*snum_devices: %d\n", (int)indent, "", s->num_devices);
		fwrite(replace_end, 1, (size_t)(end - replace_end), f);
	} else {
		fwrite(doc, 1, (size_t)(insert - doc), f);
		if (insert == end && end > doc && end[-1] != '\n')
			fputc('\n', f);
		fprintf(f, "%*snum_devices: %d\n", (int)indent, "", s->num_devices);
		fwrite(insert, 1, (size_t)(end - insert), f);
	}
	if (fclose(f) != 0) {
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Exists, empty, when nobody wrote one; never overwritten (O_EXCL: a
 * document mokka-ctl writes meanwhile wins).  Recorded either way so
 * Discard removes it with the rest of the driver root.  The same for the
 * sibling lock file every writer of the document flocks (NVML.md §5):
 * made here so it is ours to remove, not left behind by mokka-ctl. */
static int ensure_empty(struct sim_ctx *ctx, const struct state *s, const char *name,
			mode_t mode, struct sim_errors *errs)
{
	char path[512];
	int r;

	if ((r = host_mock_path(s->mock_root, path, sizeof(path), GD_CONFIG "/%s", name)) < 0) {
		sim_error(errs, "engine-config", "%s%s/%s: path too long",
			  s->mock_root, GD_CONFIG, name);
		return r;
	}
	/* Beneath the root, never through a link (workers/host.h). */
	if ((r = host_create(&ctx->host, path, mode)) < 0) {
		sim_error(errs, path, "create: %s", strerror(-r));
		return r;
	}
	if (ctx->host.own)
		manifest_add(ctx->host.own, path, 'f');
	return 0;
}

static int ensure_overrides(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs)
{
	int r = 0;

	/* The document, its 0600 lock and the Xid journal (overrides.h). */
	for (size_t i = 0; r == 0 && ovr_files[i].name; i++)
		r = ensure_empty(ctx, s, ovr_files[i].name, ovr_files[i].mode, errs);
	return r;
}

int gd_stage_engine_config(struct sim_ctx *ctx, const struct state *s, const struct gd_conf *c,
			   struct sim_errors *errs)
{
	struct gd_profile *p = gd_profile_open(s);
	char path[512], err[256] = "", *doc = NULL;
	size_t len = 0;
	int r;

	if (!p) {
		sim_error(errs, "engine-config", "out of memory reading the profile");
		return -ENOMEM;
	}
	if (!s->profile_doc) {
		sim_error(errs, "engine-config", "the state carries no profile document");
		r = -EINVAL;
	} else {
		r = gd_engine_config_render(s, gd_profile_device_count(p),
					    gd_profile_has_system_key(p, "num_devices"),
					    &doc, &len, err, sizeof(err));
		if (r < 0)
			sim_error(errs, "engine-config", "config.yaml: %s",
				  err[0] ? err : strerror(-r));
	}
	gd_profile_close(p);
	if (r == 0 &&
	    (r = host_mock_path(s->mock_root, path, sizeof(path), GD_CONFIG "/config.yaml")) == 0 &&
	    (r = host_write(&ctx->host, path, doc, len, 0644)) < 0)
		sim_error(errs, path, "write: %s", strerror(-r));
	if (r == 0)	/* its compiled copy for the library (nvml_image.c) */
		r = gd_stage_nvml_image(ctx, s, doc, len, errs);
	free(doc);
	if (r == 0)
		r = ensure_overrides(ctx, s, errs);
	return r;
}
