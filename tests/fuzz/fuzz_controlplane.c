/* Fuzz the supervisor's reader of the control plane's per-node document
 * (profile/controlplane.c): any input is either refused with a message or
 * parsed into a plan whose merge into the built-in profile yields YAML the
 * profile compiler reads back (accepting it or saying why).  Aborts when
 * a contract breaks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/state.h"
#include "profile/compile.h"
#include "profile/controlplane.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cp_plan plan;
	struct compile_opts o = { 0 };
	char err[512] = "", *merged = NULL;
	struct state st;
	size_t len = 0;
	int rc;

	rc = cp_parse((const char *)data, size, "node-a", &plan, err, sizeof(err));
	if (rc < 0) {
		if (!err[0])
			abort();
		return 0;
	}
	if (plan.ngpus < 0 || plan.ngpus > CP_MAX_GPUS)
		abort();
	err[0] = 0;
	rc = cp_merge_profile(compile_default_profile, compile_default_profile_len, &plan,
			      &merged, &len, err, sizeof(err));
	if (rc < 0) {
		if (!err[0])
			abort();
		return 0;
	}
	/* compiling the 8-GPU profile dominates: every 8th merge (and always
	 * under libFuzzer, where inputs are fewer and chosen) */
#ifndef MOKKA_LIBFUZZER
	static unsigned n;

	if (n++ % 8) {
		free(merged);
		return 0;
	}
#endif
	state_init(&st);
	err[0] = 0;
	if (compile_profile("merged", merged, len, NULL, NULL, 0, &o, &st, err, sizeof(err)) < 0 &&
	    !err[0])
		abort();
	state_free(&st);
	free(merged);
	return 0;
}
