/* Where the overrides document lives: the one place its file name and
 * layout are spelled (overrides.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

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
	const char *slash = strrchr(doc_path, '/');
	int dir = slash ? (int)(slash - doc_path + 1) : 0;

	return fit(snprintf(buf, size, "%.*s" OVR_LOCK_NAME, dir, doc_path), size);
}

const struct ovr_file ovr_files[] = {
	{ OVR_DOC_NAME, 0644 },		/* the engine reads it as any user */
	{ OVR_LOCK_NAME, OVR_LOCK_MODE },
	{ OVR_XIDS_NAME, 0644 },
	{ NULL, 0 },
};
