/* Profile compiler: the IMEX capability settings (SURFACES.md §3) and the
 * kernel log path (§6), from the profile, the supervisor's flags and
 * environment.  The majors are checked here too, because the state is also
 * built by callers other than the flag parser (tests, a future
 * control-plane source).
 *
 * IMEX is on with --imex-channels / IMEX_MOCK_CHANNELS, or without a flag
 * on a multi-node NVLink profile (the seed: "On multi-node NVLink
 * profiles"): nvlink.multi_node when the profile says so, else a GPU whose
 * name is a rack-scale NVLink product (GB200, GB300 NVL).  Other profiles
 * keep it off unless asked.
 *
 * The IMEXDownload feature gate (--feature-gates IMEXDownload=true) has the
 * imex worker fetch the pinned redist archive into the node cache; the
 * archive's sha256 is the pin and has no default here: a download that
 * cannot be verified is never made. */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>

#include "profile/compile.h"
#include "profile/compile_internal.h"

#define NVIDIA_MAJOR 195
#define MAX_MAJOR 4095
#define IMEX_PINNED_VERSION "595.91.07"
#define IMEX_REDIST "https://developer.download.nvidia.com/compute/nvidia-driver/redist/imex"

/* GPU names of multi-node NVLink (NVL rack) products. */
static const char *const mnnvl_names[] = { "GB200", "GB300", NULL };

/* uname machine -> the redist's platform directory. */
static const struct {
	const char *machine, *arch;
} arches[] = {
	{ "x86_64", "linux-x86_64" },
	{ "aarch64", "linux-sbsa" },
};

/* Feature gates this build knows, by their offset in state_imex. */
static const struct {
	const char *name;
	size_t off;
} gates[] = {
	{ "IMEXDownload", offsetof(struct state_imex, download) },
};

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

/* Does the profile describe a multi-node NVLink node?  *out set. */
static int multi_node(struct cctx *c, const struct ynode *root, const struct state *s, bool *out)
{
	const struct ynode *n = root ? cc_lookup(root, "nvlink.multi_node") : NULL;

	*out = false;
	if (n && !ytree_is_null(n)) {
		if (ytree_bool(n, out) < 0)
			return cc_fail(c, n, "nvlink.multi_node", "'%s' is not true or false",
				       cc_text(n));
		return 0;
	}
	for (int i = 0; i < s->num_devices && !*out; i++)
		for (int k = 0; mnnvl_names[k] && !*out; k++)
			*out = strstr(s->devices[i].name, mnnvl_names[k]) != NULL;
	return 0;
}

/* "IMEXDownload=true,Other=false": every name known, every value a bool. */
static int feature_gates(struct cctx *c, const char *v, struct state_imex *x)
{
	char buf[512], *save = NULL;

	if (!v || !*v)
		return 0;
	if (strlen(v) >= sizeof(buf))
		return cc_fail(c, NULL, "feature-gates", "longer than %zu bytes", sizeof(buf) - 1);
	strcpy(buf, v);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		size_t i;

		while (*tok == ' ')
			tok++;
		if (!eq)
			return cc_fail(c, NULL, "feature-gates", "'%s': want Name=true|false", tok);
		*eq++ = '\0';
		for (i = 0; i < sizeof(gates) / sizeof(gates[0]); i++)
			if (!strcmp(tok, gates[i].name))
				break;
		if (i == sizeof(gates) / sizeof(gates[0]))
			return cc_fail(c, NULL, "feature-gates", "unrecognized feature gate '%s' "
				       "(known: IMEXDownload)", tok);
		if (!strcasecmp(eq, "true"))
			*(bool *)((char *)x + gates[i].off) = true;
		else if (!strcasecmp(eq, "false"))
			*(bool *)((char *)x + gates[i].off) = false;
		else
			return cc_fail(c, NULL, "feature-gates", "%s='%s': want true or false", tok, eq);
	}
	return 0;
}

static bool url_ok(const char *u)
{
	if (strncmp(u, "http://", 7) && strncmp(u, "https://", 8))
		return false;
	for (const unsigned char *p = (const unsigned char *)u; *p; p++)
		if (*p <= ' ' || *p >= 0x7f || *p == '"' || *p == '\\')
			return false;
	return true;
}

/* The download settings: version, arch, URL and the pinned sha256. */
static int download(struct cctx *c, const struct compile_opts *o, struct state_imex *x)
{
	const char *ver = o->imex_download_version && *o->imex_download_version ?
			  o->imex_download_version : IMEX_PINNED_VERSION;
	const char *sum = o->imex_download_sha256 ? o->imex_download_sha256 : "";
	struct utsname u;

	if (strlen(ver) >= sizeof(x->download_version) || strspn(ver, "0123456789.") != strlen(ver) ||
	    ver[0] == '.' || strstr(ver, ".."))
		return cc_fail(c, NULL, "imex-download-version", "'%.40s' is not a version like %s",
			       ver, IMEX_PINNED_VERSION);
	strcpy(x->download_version, ver);
	strcpy(x->download_arch, "linux-x86_64");
	if (uname(&u) == 0)
		for (size_t i = 0; i < sizeof(arches) / sizeof(arches[0]); i++)
			if (!strcmp(u.machine, arches[i].machine))
				strcpy(x->download_arch, arches[i].arch);
	if (o->imex_download_url && *o->imex_download_url)
		snprintf(x->download_url, sizeof(x->download_url), "%s", o->imex_download_url);
	else
		snprintf(x->download_url, sizeof(x->download_url),
			 IMEX_REDIST "/%s/nvidia-imex-%s-%s-archive.tar.xz", x->download_arch,
			 x->download_arch, ver);
	if (!url_ok(x->download_url) || (o->imex_download_url &&
					  strlen(o->imex_download_url) >= sizeof(x->download_url)))
		return cc_fail(c, NULL, "imex-download-url", "'%.64s' is not an http:// or https:// "
			       "URL without spaces or quotes", x->download_url);
	if (*sum && (strlen(sum) != 64 || strspn(sum, "0123456789abcdefABCDEF") != 64))
		return cc_fail(c, NULL, "imex-download-sha256", "'%.70s' is not 64 hex digits", sum);
	for (int i = 0; sum[i]; i++)
		x->download_sha256[i] = (char)tolower((unsigned char)sum[i]);
	x->download_sha256[strlen(sum)] = '\0';
	if (x->download && !*sum)
		return cc_fail(c, NULL, "imex-download-sha256", "IMEXDownload is on but the archive "
			       "has no pinned sha256: give --imex-download-sha256 (nothing unverified "
			       "is ever downloaded)");
	return 0;
}

int compile_imex(struct cctx *c, const struct ynode *root, const struct compile_opts *o,
		 struct state *s)
{
	struct state_imex *x = &s->imex;
	bool mnnvl;
	int rc;

	if ((rc = multi_node(c, root, s, &mnnvl)) < 0)
		return rc;
	x->enabled = o->imex_enabled || mnnvl;
	x->from_profile = !o->imex_enabled && mnnvl;
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
			    sizeof(x->checksums))) < 0 ||
	    (rc = feature_gates(c, o->feature_gates, x)) < 0 ||
	    (rc = download(c, o, x)) < 0)
		return rc;
	return copy_path(c, "kernel_log", o->kernel_log ? o->kernel_log : "/dev/kmsg",
			 s->kernel_log, sizeof(s->kernel_log));
}
