/* The IMEX majors of mokka-supervisor checked together, at start, so a bad
 * pair is a usage error rather than a rejected state on every pass.  Each
 * value alone is parsed by the flag table (options.c) or the environment
 * (profile/env.c: IMEX_MOCK_CHANNELS, IMEX_CHANNEL_COUNT, IMEX_CHANNEL_MAJOR,
 * IMEX_CAPS_MAJOR, MOCK_NVML_KMSG, MOKKA_IMEX_ARCHIVE, MOKKA_IMEX_CHECKSUMS). */
#include <errno.h>
#include <stdio.h>

#include "supervisor/options.h"

#define NVIDIA_MAJOR 195

int options_imex_check(const struct options *o)
{
	const struct compile_opts *c = &o->compile;

	if (c->imex_channel_major == c->imex_caps_major ||
	    c->imex_channel_major == NVIDIA_MAJOR || c->imex_caps_major == NVIDIA_MAJOR) {
		fprintf(stderr, "mokka-supervisor: IMEX majors: channel %d and caps %d must differ "
			"from each other and from nvidia's %d\n", c->imex_channel_major,
			c->imex_caps_major, NVIDIA_MAJOR);
		return -EINVAL;
	}
	return 0;
}
