/* The IMEX and kernellog flags of mokka-supervisor, with the reference's
 * environment as fallbacks (SURFACES.md §3, §6): IMEX_MOCK_CHANNELS,
 * IMEX_CHANNEL_COUNT, IMEX_CHANNEL_MAJOR, IMEX_CAPS_MAJOR, MOCK_NVML_KMSG;
 * plus MOKKA_IMEX_ARCHIVE and MOKKA_IMEX_CHECKSUMS.  Values are checked
 * here, at start, so a bad one is a usage error rather than a rejected
 * state on every pass. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ipc/state.h"
#include "supervisor/options.h"

#define IMEX_DEFAULT_COUNT 2048
#define IMEX_DEFAULT_CHANNEL_MAJOR 235
#define IMEX_DEFAULT_CAPS_MAJOR 236
#define NVIDIA_MAJOR 195
#define MAX_MAJOR 4095

static int number(const char *what, const char *v, long lo, long hi, int *out)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || end == v || *end || n < lo || n > hi) {
		fprintf(stderr, "mokka-supervisor: %s: want an integer %ld..%ld, got '%s'\n",
			what, lo, hi, v);
		return -EINVAL;
	}
	*out = (int)n;
	return 0;
}

static int boolean(const char *what, const char *v, bool *out)
{
	static const char *const yes[] = { "true", "1", "yes", "on" };
	static const char *const no[] = { "false", "0", "no", "off" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(v, yes[i]))
			return *out = true, 0;
		if (!strcasecmp(v, no[i]))
			return *out = false, 0;
	}
	fprintf(stderr, "mokka-supervisor: %s: want true or false, got '%s'\n", what, v);
	return -EINVAL;
}

static int path(const char *what, const char *v, bool empty_ok, const char **out)
{
	if ((!*v && empty_ok) || (v[0] == '/' && !strstr(v, "/../") &&
				  strlen(v) < sizeof(((struct state_imex *)0)->archive))) {
		*out = v;
		return 0;
	}
	fprintf(stderr, "mokka-supervisor: %s: want an absolute path without '..', got '%s'\n",
		what, v);
	return -EINVAL;
}

static const struct {
	const char *flag, *env;
} names[] = {
	[OPT_IMEX_CHANNELS] = { "--imex-channels", "IMEX_MOCK_CHANNELS" },
	[OPT_IMEX_COUNT] = { "--imex-channel-count", "IMEX_CHANNEL_COUNT" },
	[OPT_IMEX_MAJOR] = { "--imex-channel-major", "IMEX_CHANNEL_MAJOR" },
	[OPT_IMEX_CAPS_MAJOR] = { "--imex-caps-major", "IMEX_CAPS_MAJOR" },
	[OPT_IMEX_ARCHIVE] = { "--imex-archive", "MOKKA_IMEX_ARCHIVE" },
	[OPT_IMEX_CHECKSUMS] = { "--imex-checksums", "MOKKA_IMEX_CHECKSUMS" },
	[OPT_KERNEL_LOG] = { "--kernel-log", "MOCK_NVML_KMSG" },
};

static int set(struct options *o, enum options_imex which, const char *what, const char *v)
{
	switch (which) {
	case OPT_IMEX_CHANNELS: return boolean(what, v, &o->imex_enabled);
	case OPT_IMEX_COUNT:
		return number(what, v, 1, STATE_IMEX_MAX_CHANNELS, &o->imex_channel_count);
	case OPT_IMEX_MAJOR: return number(what, v, 1, MAX_MAJOR, &o->imex_channel_major);
	case OPT_IMEX_CAPS_MAJOR: return number(what, v, 1, MAX_MAJOR, &o->imex_caps_major);
	case OPT_IMEX_ARCHIVE: return path(what, v, true, &o->imex_archive);
	case OPT_IMEX_CHECKSUMS: return path(what, v, true, &o->imex_checksums);
	case OPT_KERNEL_LOG:
		/* "" turns the announcements off (the chart's default). */
		return path(what, v, true, &o->kernel_log);
	}
	return -EINVAL;
}

int options_imex_defaults(struct options *o)
{
	o->imex_channel_count = IMEX_DEFAULT_COUNT;
	o->imex_channel_major = IMEX_DEFAULT_CHANNEL_MAJOR;
	o->imex_caps_major = IMEX_DEFAULT_CAPS_MAJOR;
	o->imex_archive = "";
	o->imex_checksums = "";
	o->kernel_log = "/dev/kmsg";
	/* gpudriver's own override of the nvidia-caps major, so that both
	 * agree when IMEX is turned on without IMEX_CAPS_MAJOR. */
	if (getenv("MOKKA_NVIDIA_CAPS_MAJOR") && *getenv("MOKKA_NVIDIA_CAPS_MAJOR") &&
	    set(o, OPT_IMEX_CAPS_MAJOR, "$MOKKA_NVIDIA_CAPS_MAJOR",
		getenv("MOKKA_NVIDIA_CAPS_MAJOR")) < 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *v = getenv(names[i].env);
		char what[64];

		/* An empty MOCK_NVML_KMSG means "off"; other empty ones are unset. */
		if (!v || (!*v && i != OPT_KERNEL_LOG))
			continue;
		snprintf(what, sizeof(what), "$%s", names[i].env);
		if (set(o, (enum options_imex)i, what, v) < 0)
			return -EINVAL;
	}
	return 0;
}

int options_imex_flag(struct options *o, enum options_imex which, const char *arg)
{
	if ((size_t)which >= sizeof(names) / sizeof(names[0]))
		return -EINVAL;
	return set(o, which, names[which].flag, arg ? arg : "true");
}

int options_imex_check(const struct options *o)
{
	if (o->imex_channel_major == o->imex_caps_major ||
	    o->imex_channel_major == NVIDIA_MAJOR || o->imex_caps_major == NVIDIA_MAJOR) {
		fprintf(stderr, "mokka-supervisor: IMEX majors: channel %d and caps %d must differ "
			"from each other and from nvidia's %d\n", o->imex_channel_major,
			o->imex_caps_major, NVIDIA_MAJOR);
		return -EINVAL;
	}
	return 0;
}
