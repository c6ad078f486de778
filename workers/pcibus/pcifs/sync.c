/* A GPU leaving or joining nvidia changes two surfaces other workers own:
 * the CDI spec (cri, R-independent host path /var/run/cdi/nvidia.yaml)
 * and the NFD features file (the pcibus worker's Apply).  Each keeps its
 * one writer: mokka-pcifs SIGHUPs the supervisor (--notify-parent), whose
 * pass re-renders both from the binding file written just before, and the
 * write(2) that caused it returns only once both files were replaced
 * since and NFD counts the GPUs nvidia holds now (or after PCIFS_SYNC_MS,
 * logged, should a pass not come).  A
 * surface absent when the write came (cri not running) is not waited for.
 *
 * The files are compared by identity (inode, size, mtime): every writer
 * replaces them by rename, and rewrites them only when their content
 * changes, which a GPU joining or leaving always does (the GPU's CDI
 * device, mokka.gpu.count). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "workers/pcibus/pcifs/pcifs.h"

/* workers/cri/cri.h CRI_SPEC and workers/pcibus/pcibus.h NFD_FEATURES_FILE. */
static const char *const surfaces[PCIFS_SYNC_SURFACES] = {
	"/var/run/cdi/nvidia.yaml",
	"/etc/kubernetes/node-feature-discovery/features.d/nvml-mock.features",
};

static bool same(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static void path_of(const char *host, int i, char *out, size_t len)
{
	snprintf(out, len, "%s%s", host, surfaces[i]);
}

/* NFD's mokka.gpu.count is the pass's view of the binding file: a pass
 * that was already running when the write came rewrites the files with
 * the old binding, and the wait goes on for the next. */
static bool nfd_agrees(const char *path, int gpus)
{
	char line[128];
	bool ok = gpus < 0;
	FILE *f;

	if (ok || !(f = fopen(path, "re")))
		return true;
	while (!ok && fgets(line, sizeof(line), f)) {
		int n;

		ok = sscanf(line, "mokka.gpu.count=%d", &n) == 1 && n == gpus;
	}
	fclose(f);
	return ok;
}

void pcifs_sync_mark(const char *host, struct pcifs_sync *s)
{
	char path[PATH_MAX];

	for (int i = 0; i < PCIFS_SYNC_SURFACES; i++) {
		path_of(host, i, path, sizeof(path));
		s->had[i] = stat(path, &s->st[i]) == 0;
	}
}

int pcifs_sync_wait(const char *host, const struct pcifs_sync *s, int timeout_ms)
{
	const struct timespec step = { 0, 10 * 1000 * 1000 };
	char path[PATH_MAX];
	struct stat now;

	for (int waited = 0;; waited += 10) {
		int left = 0;

		for (int i = 0; i < PCIFS_SYNC_SURFACES; i++) {
			path_of(host, i, path, sizeof(path));
			left += s->had[i] && stat(path, &now) == 0 && same(&now, &s->st[i]);
		}
		path_of(host, PCIFS_SYNC_SURFACES - 1, path, sizeof(path));
		left += s->had[PCIFS_SYNC_SURFACES - 1] && !nfd_agrees(path, s->gpus);
		if (!left)
			return 0;
		if (waited >= timeout_ms)
			return -ETIMEDOUT;
		nanosleep(&step, NULL);
	}
}
