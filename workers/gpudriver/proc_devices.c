/* R/driver/proc/devices: the running kernel's /proc/devices with the
 * driver's character majors in it (SURFACES.md §11.2), for consumers given
 * an alternative proc-devices path (the DRA driver's ALT_PROC_DEVICES_PATH).
 * Lines the host kernel already has for nvidia* are replaced by ours, in
 * major order as the kernel prints them; with IMEX on, the channels' major
 * is one of ours (SURFACES.md §3; the imex worker writes the same text to
 * R/imex/proc-devices).  A major of ours that the list gives another name
 * is an error (a node with it would open that device).  The result is a
 * function of the list and the state: re-rendering it is a no-op. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio/fileio.h"
#include "workers/gpudriver/gpudriver.h"

#define CHAR_HEADER "Character devices:"
#define BLOCK_HEADER "Block devices:"
#define MAX_ENTRIES 1024
#define PROC_DEVICES_MAX (1u << 20)

struct entry {
	unsigned major;
	char name[64];
};

struct devlist {
	int n;
	struct entry e[MAX_ENTRIES];
	char *block;			/* the block section, verbatim (heap) */
};

/* The host's list; NULL when it cannot be opened (no /proc).  What opens
 * but is no regular file of a sane size reads as "": not a list. */
static char *read_list(const char *path)
{
	char *buf;
	size_t len;
	int r = fileio_read(path, PROC_DEVICES_MAX, &buf, &len, NULL, 0);

	if (r == -EISDIR || r == -EINVAL || r == -EFBIG)
		return strdup("");
	return r == 0 ? buf : NULL;
}

static void add(struct devlist *l, unsigned major, const char *name)
{
	int i;

	if (l->n >= MAX_ENTRIES)
		return;
	/* Insert after every entry with a major <= ours: sorted, stable. */
	for (i = l->n; i > 0 && l->e[i - 1].major > major; i--)
		l->e[i] = l->e[i - 1];
	l->e[i].major = major;
	snprintf(l->e[i].name, sizeof(l->e[i].name), "%s", name);
	l->n++;
}

/* Parse the kernel's text; the nvidia* character lines are dropped. */
static void parse(const char *text, struct devlist *l)
{
	const char *p = text ? strstr(text, CHAR_HEADER) : NULL;
	const char *block = text ? strstr(text, BLOCK_HEADER) : NULL;

	l->n = 0;
	for (p = p ? strchr(p, '\n') : NULL; p && (!block || p < block); p = strchr(p + 1, '\n')) {
		unsigned major;
		char name[64];
		if (sscanf(p + 1, "%u %63s", &major, name) == 2 && strncmp(name, "nvidia", 6) != 0)
			add(l, major, name);
	}
	l->block = strdup(block ? block : BLOCK_HEADER "\n");
}

/* Our major must not belong to another name anywhere in the list (the
 * IMEX rules, SURFACES.md §3; a block major is checked too). */
static int check_free(const struct devlist *l, const char *block, unsigned major,
		      const char *ours, const char *src, struct sim_errors *errs)
{
	const char *name = NULL;
	char found[64];

	for (int i = 0; i < l->n && !name; i++)
		if (l->e[i].major == major)
			name = l->e[i].name;
	for (const char *p = block ? strchr(block, '\n') : NULL; p && !name; p = strchr(p + 1, '\n')) {
		unsigned m;
		if (sscanf(p + 1, "%u %63s", &m, found) == 2 && m == major && strncmp(found, "nvidia", 6))
			name = found;
	}
	if (!name)
		return 0;
	sim_error(errs, "proc-devices", "%s major %u already belongs to '%s' in %s; set "
		  "MOKKA_NVIDIA_UVM_MAJOR / MOKKA_NVIDIA_CAPS_MAJOR / IMEX_CHANNEL_MAJOR "
		  "(--imex-*-major) to a free one", ours, major, name, src);
	return -EEXIST;
}

int gd_proc_devices_render(const struct state *s, const struct gd_conf *c, char **out,
			   size_t *len, struct sim_errors *errs)
{
	struct {
		unsigned major;
		const char *name;
	} ours[] = {
		{ GD_NVIDIA_MAJOR, "nvidia" },
		{ GD_NVIDIA_MAJOR, "nvidiactl" },
		{ c->uvm_major, "nvidia-uvm" },
		{ c->caps_major, "nvidia-caps" },
		{ (unsigned)s->imex.channel_major, "nvidia-caps-imex-channels" },
	};
	/* The IMEX channels' line only when IMEX is on. */
	size_t nours = sizeof(ours) / sizeof(ours[0]) - (s->imex.enabled ? 0 : 1);
	struct devlist *l = calloc(1, sizeof(*l));
	const char *ch, *blk;
	char *text;
	FILE *f;
	int r = 0;

	*out = NULL;
	*len = 0;
	if (!l) {
		sim_error(errs, "proc-devices", "out of memory");
		return -ENOMEM;
	}
	/* Without a readable list (no /proc), the driver's lines alone; a
	 * list that is not one is an error, not something to guess at. */
	text = read_list(c->proc_devices_src);
	ch = text ? strstr(text, CHAR_HEADER) : NULL;
	blk = text ? strstr(text, BLOCK_HEADER) : NULL;
	if (text && (!ch || (blk && blk < ch))) {
		sim_error(errs, "proc-devices", "%s: no '" CHAR_HEADER "' section before '"
			  BLOCK_HEADER "': not a /proc/devices list", c->proc_devices_src);
		r = -EINVAL;
	}
	if (r == 0)
		parse(text, l);
	free(text);
	for (size_t i = 0; i < nours && r == 0; i++)
		r = check_free(l, l->block, ours[i].major, ours[i].name, c->proc_devices_src, errs);
	for (size_t i = 0; i < nours && r == 0; i++)
		add(l, ours[i].major, ours[i].name);
	if (r == 0 && (!l->block || !(f = open_memstream(out, len))))
		r = -ENOMEM;
	if (r == 0) {
		fputs(CHAR_HEADER "\n", f);
		for (int i = 0; i < l->n; i++)
			fprintf(f, "%3u %s\n", l->e[i].major, l->e[i].name);
		fprintf(f, "\n%s", l->block);
		if (fclose(f) != 0)
			r = -ENOMEM;
	}
	if (r == -ENOMEM)
		sim_error(errs, "proc-devices", "out of memory");
	if (r < 0) {
		free(*out);
		*out = NULL;
	}
	free(l->block);
	free(l);
	return r;
}

int gd_stage_proc_devices(struct sim_ctx *ctx, const struct state *s, const struct gd_conf *c,
			  struct sim_errors *errs)
{
	char *out = NULL, path[512];
	size_t len = 0;
	int r = gd_proc_devices_render(s, c, &out, &len, errs);

	if (r == 0 &&
	    (r = host_mock_path(s->mock_root, path, sizeof(path), GD_DRIVER "/proc/devices")) == 0 &&
	    (r = host_write(&ctx->host, path, out, len, 0444)) < 0)
		sim_error(errs, path, "write: %s", strerror(-r));
	free(out);
	return r;
}
