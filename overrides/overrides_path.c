/* Where the overrides document lives: the one place its file name and
 * layout are spelled (overrides.h). */
#include <errno.h>
#include <stdio.h>

#include "overrides/overrides.h"

static int fit(int n, size_t size)
{
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int ovr_path(char *buf, size_t size, const char *host_root, const char *mock_root)
{
	/* Beside the engine config of the staged driver root. */
	return fit(snprintf(buf, size, "%s%s/driver/config/" OVR_DOC_NAME, host_root, mock_root),
		   size);
}

int ovr_path_beside(char *buf, size_t size, const char *config_dir)
{
	return fit(snprintf(buf, size, "%s/" OVR_DOC_NAME, config_dir), size);
}

int ovr_lock_path(char *buf, size_t size, const char *doc_path)
{
	return fit(snprintf(buf, size, "%s.lock", doc_path), size);
}
