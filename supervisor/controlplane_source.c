/* The control plane's per-node document as a state source (see
 * controlplane_source.h).  One per process: the supervisor's. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ipc/log.h"
#include "profile/controlplane.h"
#include "supervisor/controlplane_source.h"
#include "supervisor/source.h"

#define CPS_PREFIX "controlplane:"
#define CPS_DEBOUNCE_MS 50		/* a policy edit reaches NVML within a second */

static struct {
	bool active, have_plan, have_profile;
	char path[PATH_MAX], node[256];
	struct source *src;
	struct cp_plan plan, next;
	char *profile, *topo;
	size_t plen, tlen;
	cps_rerun_fn rerun;
	void *arg;
} cps;

static int keep_copy(char **dst, size_t *dlen, const char *src, size_t len)
{
	char *p;

	if (src == *dst)
		return 0;	/* our own copy, handed back by rerun */
	p = src ? malloc(len + 1) : NULL;
	if (src && !p)
		return -ENOMEM;
	if (p) {
		memcpy(p, src, len);
		p[len] = 0;
	}
	free(*dst);
	*dst = p;
	*dlen = len;
	return 0;
}

static void on_plan(void *arg, const char *unused, size_t ulen, const char *doc, size_t len)
{
	char err[512];
	int r;

	(void)arg;
	(void)unused;
	(void)ulen;
	if (!doc) {
		log_warn("control plane: %s: no document for node %s; keeping %s", cps.path, cps.node,
			 cps.have_plan ? "the last good plan" : "the profile as is");
		return;
	}
	r = cp_parse(doc, len, cps.node, &cps.next, err, sizeof(err));
	if (r < 0) {
		log_error("control plane: %s: %s; keeping %s", cps.path, err,
			  cps.have_plan ? "the last good plan" : "the profile as is");
		return;
	}
	if (cps.have_plan && !memcmp(&cps.next, &cps.plan, sizeof(cps.plan)))
		return;
	cps.plan = cps.next;
	cps.have_plan = true;
	log_info("control plane: node %s: plan for %d GPUs from %s", cps.node, cps.plan.ngpus,
		 cps.path);
	if (cps.have_profile)
		cps.rerun(cps.arg, cps.profile, cps.plen, cps.topo, cps.tlen);
}

static void on_error(void *arg, const char *msg)
{
	(void)arg;
	log_error("control plane: %s; keeping %s", msg,
		  cps.have_plan ? "the last good plan" : "the profile as is");
}

int cps_start(struct loop *l, const char *spec, const char *node, uint64_t resync_ms,
	      cps_rerun_fn rerun, void *arg)
{
	const char *path = spec + strlen(CPS_PREFIX);
	struct source_opts o = { .resync_ms = resync_ms, .debounce_ms = CPS_DEBOUNCE_MS };
	struct stat st;
	int n;

	if (strncmp(spec, CPS_PREFIX, strlen(CPS_PREFIX)) || !*path) {
		log_error("--state-source %s: want controlplane:FILE or controlplane:DIR", spec);
		return -EINVAL;
	}
	if (!node || !*node) {
		log_error("--state-source %s: needs a node name (--node-name)", spec);
		return -EINVAL;
	}
	/* a directory holds mokka-plan's nodes/<node>.yaml */
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		n = snprintf(cps.path, sizeof(cps.path), "%s/%s.yaml", path, node);
	else
		n = snprintf(cps.path, sizeof(cps.path), "%s", path);
	if (n < 0 || (size_t)n >= sizeof(cps.path))
		return -ENAMETOOLONG;
	snprintf(cps.node, sizeof(cps.node), "%s", node);
	cps.rerun = rerun;
	cps.arg = arg;
	cps.active = true;
	/* the "topology" slot: absent is a valid state there */
	o.topology_path = cps.path;
	return source_start(l, &o, on_plan, on_error, NULL, &cps.src);
}

void cps_stop(void)
{
	if (cps.src)
		source_stop(cps.src);
	free(cps.profile);
	free(cps.topo);
	memset(&cps, 0, sizeof(cps));
}

int cps_filter(const char *profile, size_t plen, const char *topo, size_t tlen, char **out,
	       size_t *olen, char *err, size_t errlen)
{
	*out = NULL;
	*olen = 0;
	if (!cps.active)
		return 0;
	if (keep_copy(&cps.profile, &cps.plen, profile, plen) < 0 ||
	    keep_copy(&cps.topo, &cps.tlen, topo, tlen) < 0)
		return -ENOMEM;
	cps.have_profile = true;
	if (!cps.have_plan)
		return 0;
	return cp_merge_profile(cps.profile, cps.plen, &cps.plan, out, olen, err, errlen);
}
