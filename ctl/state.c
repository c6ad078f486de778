/* mokka-ctl reset also forgets what consumers set through NVML: the GPU's
 * (or every GPU's) document in the device state store (devstate/) beside
 * the engine config, R/driver/config/state, or $MOCK_NVML_STATE_DIR as the
 * library reads it.  The next Stage applies a declared MIG layout again. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"
#include "devstate/devstate.h"

int ctl_state_reset(struct ctl_call *call)
{
	const char *env = getenv("MOCK_NVML_STATE_DIR");
	char dir[PATH_MAX + 16];
	struct ds_store st;
	struct ds_gpu empty = { 0 };
	char *slash;
	int r;

	if (env && *env) {
		snprintf(dir, sizeof(dir), "%s", env);
	} else {
		snprintf(dir, sizeof(dir), "%s", call->prof->path);
		slash = strrchr(dir, '/');
		snprintf(slash ? slash + 1 : dir, sizeof(dir) - (size_t)(slash ? slash + 1 - dir : 0),
			 "state");
	}
	if ((r = ds_open(&st, dir, false)) == -ENOENT)
		return 0;	/* nothing was ever set */
	if (r < 0 || (r = ds_lock(&st)) < 0) {
		snprintf(call->err, call->errlen, "%s: the device state store: %s", dir, strerror(-r));
		if (r != -ENOENT)
			ds_close(&st);
		return r;
	}
	r = call->target.all ? ds_clear(&st)
			     : ds_save(&st, call->prof->gpu[call->target.gpu].uuid, &empty);
	ds_unlock(&st);
	ds_close(&st);
	if (r < 0)
		snprintf(call->err, call->errlen, "%s: clearing the device state: %s", dir,
			 strerror(-r));
	return r;
}
