/* The environment defaults of the profile compiler, read once (env.h),
 * and the value parsers that the supervisor's flags share with them. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ipc/state.h"
#include "profile/env.h"

#define IMEX_DEFAULT_COUNT 2048
#define IMEX_DEFAULT_CHANNEL_MAJOR 235
#define IMEX_DEFAULT_CAPS_MAJOR 236
#define MAX_MAJOR 4095

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int profile_parse_int(const char *what, const char *v, long lo, long hi, int *out,
		      char *err, size_t errlen)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || end == v || *end || n < lo || n > hi)
		return fail(err, errlen, "%s: want an integer %ld..%ld, got '%s'", what, lo, hi, v);
	*out = (int)n;
	return 0;
}

int profile_parse_bool(const char *what, const char *v, bool *out, char *err, size_t errlen)
{
	static const char *const yes[] = { "true", "1", "yes", "on" };
	static const char *const no[] = { "false", "0", "no", "off" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(v, yes[i]))
			return *out = true, 0;
		if (!strcasecmp(v, no[i]))
			return *out = false, 0;
	}
	return fail(err, errlen, "%s: want true or false, got '%s'", what, v);
}

int profile_parse_path(const char *what, const char *v, const char **out, char *err,
		       size_t errlen)
{
	if (!*v || (v[0] == '/' && !strstr(v, "/../") &&
		    strlen(v) < sizeof(((struct state_imex *)0)->archive))) {
		*out = v;
		return 0;
	}
	return fail(err, errlen, "%s: want an absolute path without '..', got '%s'", what, v);
}

static const struct {
	const char *unit;
	double ms;
} duration_units[] = {
	{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
	{ "us", 0.001 }, { "ns", 0.000001 },
};

int parse_duration_ms(const char *s, uint64_t *ms)
{
	double total = 0;

	if (!s || !*s)
		return -EINVAL;
	if (strcmp(s, "0") == 0) {
		*ms = 0;
		return 0;
	}
	while (*s) {
		char *end;
		double v = strtod(s, &end);
		size_t best = 0;
		double mult = 0;

		if (end == s || !(v >= 0))	/* also NaN */
			return -EINVAL;
		for (size_t i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]); i++) {
			size_t n = strlen(duration_units[i].unit);
			/* longest match: "ms" before "m" */
			if (strncmp(end, duration_units[i].unit, n) == 0 && n > best) {
				best = n;
				mult = duration_units[i].ms;
			}
		}
		if (!best)
			return -EINVAL;
		total += v * mult;
		s = end + best;
	}
	if (total > 1e12)
		return -EINVAL;
	*ms = (uint64_t)total;
	return 0;
}

/* ---- the variables ---- */

enum env_kind {
	ENV_STR,	/* const char *, as given */
	ENV_INT,	/* int in lo..hi */
	ENV_BOOL,	/* bool */
	ENV_DURATION,	/* long milliseconds */
	ENV_PATH,	/* const char *, profile_parse_path */
	ENV_LISTEN,	/* a bool that turns a const char * to "0.0.0.0" */
};

#define AT(field) offsetof(struct compile_opts, field)

/* In the order they are applied: MOKKA_NVIDIA_CAPS_MAJOR (gpudriver's own
 * override of the nvidia-caps major) before IMEX_CAPS_MAJOR, so both agree
 * when IMEX is turned on without IMEX_CAPS_MAJOR. */
static const struct env_var {
	const char *name;
	enum env_kind kind;
	size_t off;
	long lo, hi;		/* ENV_INT */
	bool empty_is_value;	/* "" means something rather than unset */
} env_vars[] = {
#define VAR(n, k, f) { .name = n, .kind = k, .off = AT(f) }
#define INT(n, f, l, h) { .name = n, .kind = ENV_INT, .off = AT(f), .lo = l, .hi = h }
	VAR("NODE_NAME", ENV_STR, node_name),
	VAR("DRIVER_VERSION", ENV_STR, driver_version),
	INT("GPU_COUNT", gpu_count_cap, 0, INT_MAX),
	VAR("MOCK_FABRICMANAGER_STATE_DIR", ENV_STR, fabric_state_dir),
	VAR("MOCK_FABRICMANAGER_INIT_DELAY", ENV_DURATION, fabric_init_delay_ms),
	VAR("MOKKA_NVIDIA_SMI", ENV_STR, nvidia_smi_src),
	INT("MOCK_IB_PING_PORT", ib_port, 1, 65535),
	VAR("MOCK_IB_PEERS", ENV_STR, ib_peers),
	VAR("MOCK_IB_PING_FABRIC", ENV_LISTEN, ib_listen),
	VAR("IMEX_MOCK_CHANNELS", ENV_BOOL, imex_enabled),
	INT("IMEX_CHANNEL_COUNT", imex_channel_count, 1, STATE_IMEX_MAX_CHANNELS),
	INT("IMEX_CHANNEL_MAJOR", imex_channel_major, 1, MAX_MAJOR),
	INT("MOKKA_NVIDIA_CAPS_MAJOR", imex_caps_major, 1, MAX_MAJOR),
	INT("IMEX_CAPS_MAJOR", imex_caps_major, 1, MAX_MAJOR),
	VAR("MOKKA_IMEX_ARCHIVE", ENV_PATH, imex_archive),
	VAR("MOKKA_IMEX_CHECKSUMS", ENV_PATH, imex_checksums),
	/* An empty MOCK_NVML_KMSG turns the announcements off (the chart's default). */
	{ .name = "MOCK_NVML_KMSG", .kind = ENV_PATH, .off = AT(kernel_log), .empty_is_value = true },
#undef VAR
#undef INT
};

static int env_set(const struct env_var *e, const char *v, struct compile_opts *co,
		   char *err, size_t errlen)
{
	void *dst = (char *)co + e->off;
	char what[64];
	uint64_t ms;
	bool on;

	snprintf(what, sizeof(what), "$%s", e->name);
	switch (e->kind) {
	case ENV_STR:
		*(const char **)dst = v;
		return 0;
	case ENV_INT:
		return profile_parse_int(what, v, e->lo, e->hi, dst, err, errlen);
	case ENV_BOOL:
		return profile_parse_bool(what, v, dst, err, errlen);
	case ENV_DURATION:
		if (parse_duration_ms(v, &ms) < 0)
			return fail(err, errlen, "%s: want a duration (e.g. 8s, 1m, 500ms), got '%s'",
				    what, v);
		*(long *)dst = (long)ms;
		return 0;
	case ENV_PATH:
		return profile_parse_path(what, v, dst, err, errlen);
	case ENV_LISTEN:
		if (profile_parse_bool(what, v, &on, err, errlen) < 0)
			return -EINVAL;
		*(const char **)dst = on ? "0.0.0.0" : NULL;
		return 0;
	}
	return fail(err, errlen, "%s: unknown kind", what);
}

static const char *find_nvidia_smi(void)
{
	static const char *const candidates[] = {
		MOKKA_PKGDATADIR "/nvidia-smi", "/usr/bin/nvidia-smi",
	};

	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++)
		if (access(candidates[i], X_OK) == 0)
			return candidates[i];
	return NULL;
}

int profile_env_read(struct compile_opts *co, char *err, size_t errlen)
{
	/* The hostname outlives the call: co keeps a pointer to it. */
	static char host[256];

	memset(co, 0, sizeof(*co));
	if (gethostname(host, sizeof(host) - 1) < 0)
		host[0] = '\0';
	co->node_name = host;
	co->imex_channel_count = IMEX_DEFAULT_COUNT;
	co->imex_channel_major = IMEX_DEFAULT_CHANNEL_MAJOR;
	co->imex_caps_major = IMEX_DEFAULT_CAPS_MAJOR;
	co->imex_archive = "";
	co->imex_checksums = "";
	co->kernel_log = "/dev/kmsg";
	for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++) {
		const char *v = getenv(env_vars[i].name);

		if (!v || (!*v && !env_vars[i].empty_is_value))
			continue;
		if (env_set(&env_vars[i], v, co, err, errlen) < 0)
			return -EINVAL;
	}
	/* A fleet's node (the DaemonSet, the systemd unit): its own identities. */
	co->node_identity = co->node_name != host;
	/* Searched only when the environment names none. */
	if (!co->nvidia_smi_src)
		co->nvidia_smi_src = find_nvidia_smi();
	return 0;
}
