/* The restart rules of the seed (SURFACES.md §2.1 "Restart policy"):
 * containerd restarts when Mokka's config file changed *and once when a
 * node pod starts*; a containerd that does not come back leaves the node
 * not ready, the error in the log.
 *
 * "A node pod starts" is a new supervisor, not a new worker: the worker is
 * restarted by the supervisor after a crash and must not restart
 * containerd again.  The supervisor (the worker's parent) is named by its
 * pid and start time (/proc/<pid>/stat field 22), kept in R/state/cri.pod
 * once its restart is done; a pod killed without Revoke leaves an
 * unchanged drop-in behind, and the next pod still restarts containerd
 * once, so it surely runs with the file.
 *
 * "Comes back": after the restart `systemctl is-active <unit>` must say
 * active within COMEBACK_MS (a containerd that fails its start or dies
 * right after is caught either way); until it does, cri is not ready and
 * each readiness poll asks again. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ipc/log.h"
#include "workers/cri/cri.h"

#define POD_FILE "/state/cri.pod"
#define COMEBACK_MS 8000
#define CLEAN_ENV { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "SYSTEMD_IN_CHROOT=0", \
		    "SYSTEMD_IGNORE_CHROOT=1", NULL }

/* "<pid> <starttime>" of the supervisor (this worker's parent). */
static int pod_id(char *id, size_t len)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	pid_t pp = getppid();
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pp);
	if (!(f = fopen(path, "re")))
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: fields count from the last ')' */
	if (!(p = strrchr(buf, ')')))
		return -EINVAL;
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &start) != 1)
		return -EINVAL;
	snprintf(id, len, "%d %llu", (int)pp, start);
	return 0;
}

bool cri_pod_first_apply(const struct host *h, const char *mock_root)
{
	char path[512], id[64], *cur = NULL;
	size_t len = 0;
	bool first;

	if (pod_id(id, sizeof(id)) < 0)
		return false;
	snprintf(path, sizeof(path), "%s" POD_FILE, mock_root);
	first = cri_read(h, path, &cur, &len) < 0 || strncmp(cur, id, strlen(id)) != 0 ||
		(cur[strlen(id)] != '\n' && cur[strlen(id)] != '\0');
	free(cur);
	return first;
}

void cri_pod_restart_done(const struct host *h, const char *mock_root)
{
	struct host bare = *h;
	char path[512], id[64];

	bare.own = NULL;	/* a record of this pod, not a surface */
	bare.prev = NULL;
	if (pod_id(id, sizeof(id)) < 0)
		return;
	snprintf(path, sizeof(path), "%s" POD_FILE, mock_root);
	if (host_writef(&bare, path, 0644, "%s\n", id) < 0)
		log_warn("cri: %s: cannot record this pod's restart (the next pass restarts again)",
			 path);
}

void cri_pod_forget(const struct host *h, const char *mock_root)
{
	struct host bare = *h;
	char path[512];

	bare.own = NULL;
	bare.prev = NULL;
	snprintf(path, sizeof(path), "%s" POD_FILE, mock_root);
	host_unlink(&bare, path);
}

int cri_unit_active(const struct host *h, const char *unit, char *why, size_t whylen)
{
	static const char *const env[] = CLEAN_ENV;
	char systemctl[512], said[512];
	char *argv[] = { systemctl, "is-active", (char *)unit, NULL };
	int r;

	if (!cri_host_has(h, "systemctl", systemctl, sizeof(systemctl))) {
		snprintf(why, whylen, "no systemctl on the host PATH");
		return -ENOENT;
	}
	r = cri_run_in_root(h, argv, env, 5000, said, sizeof(said));
	if (r == 0)
		return 0;
	snprintf(why, whylen, "systemctl is-active %s: %s", unit,
		 said[0] ? said : r < 0 ? strerror(-r) : "not active");
	return r < 0 ? r : -EIO;
}

static void test_comeback(long *ms)
{
	const char *v = getenv("MOKKA_TEST_CRI_COMEBACK_MS");

	if (v && atol(v) > 0)
		*ms = atol(v);
}

int cri_wait_comeback(const struct host *h, const char *unit, char *why, size_t whylen)
{
	long ms = COMEBACK_MS, waited = 0;
	int r;

	test_comeback(&ms);
	for (;;) {
		struct timespec ts = { 0, 200 * 1000000L };

		if ((r = cri_unit_active(h, unit, why, whylen)) == 0 || r == -ENOENT || waited >= ms)
			return r;
		nanosleep(&ts, NULL);
		waited += 200;
	}
}
