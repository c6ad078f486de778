/* Profile compiler: the IMEX capability settings (SURFACES.md §3) and the
 * kernel log path (§6), from the supervisor's flags and environment.  The
 * majors are checked here too, because the state is also built by callers
 * other than the flag parser (tests, a future control-plane source). */
#include <stdio.h>
#include <string.h>

#include "profile/compile.h"
#include "profile/compile_internal.h"

#define NVIDIA_MAJOR 195
#define MAX_MAJOR 4095

static int pick(int v, int def)
{
	return v ? v : def;
}

static int copy_path(struct cctx *c, const char *what, const char *v, char *dst, size_t size)
{
	if (!v || !*v) {
		dst[0] = '\0';
		return 0;
	}
	if (v[0] != '/' || strstr(v, "/../") || strlen(v) >= size)
		return cc_fail(c, NULL, what, "'%s' is not an absolute path without '..' "
			       "shorter than %zu bytes", v, size);
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

int compile_imex(struct cctx *c, const struct compile_opts *o, struct state *s)
{
	struct state_imex *x = &s->imex;
	int rc;

	x->enabled = o->imex_enabled;
	x->channel_count = pick(o->imex_channel_count, 2048);
	x->channel_major = pick(o->imex_channel_major, 235);
	x->caps_major = pick(o->imex_caps_major, 236);
	if (x->channel_count < 1 || x->channel_count > STATE_IMEX_MAX_CHANNELS)
		return cc_fail(c, NULL, "imex.channel_count", "%d is out of range (1..%d)",
			       x->channel_count, STATE_IMEX_MAX_CHANNELS);
	if (x->channel_major < 1 || x->channel_major > MAX_MAJOR ||
	    x->caps_major < 1 || x->caps_major > MAX_MAJOR ||
	    x->channel_major == x->caps_major || x->channel_major == NVIDIA_MAJOR ||
	    x->caps_major == NVIDIA_MAJOR)
		return cc_fail(c, NULL, "imex", "majors %d (channels) and %d (caps) must be "
			       "distinct, 1..%d and not nvidia's %d", x->channel_major,
			       x->caps_major, MAX_MAJOR, NVIDIA_MAJOR);
	if ((rc = copy_path(c, "imex.archive", o->imex_archive, x->archive,
			    sizeof(x->archive))) < 0 ||
	    (rc = copy_path(c, "imex.checksums", o->imex_checksums, x->checksums,
			    sizeof(x->checksums))) < 0)
		return rc;
	return copy_path(c, "kernel_log", o->kernel_log ? o->kernel_log : "/dev/kmsg",
			 s->kernel_log, sizeof(s->kernel_log));
}
