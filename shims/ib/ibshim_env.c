/* MOCK_IB / MOCK_IB_ROOT / MOCK_IB_SOCKET, read once (see ibshim.h). */
#include "shims/ib/ibshim.h"
#include "shims/ib/mockib_proto.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;
static struct ibshim_cfg cfg;

void *ibshim_next(void **slot, const char *name)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (!p) {
		p = dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	}
	return p;
}

static enum ibshim_mode parse_mode(const char *v)
{
	if (!v)
		return IBSHIM_OFF;
	if (strcasecmp(v, "full") == 0)
		return IBSHIM_FULL;
	if (strcasecmp(v, "sysfs") == 0)
		return IBSHIM_SYSFS;
	return IBSHIM_OFF;
}

static void cfg_init(void)
{
	const char *r, *s;
	size_t n;

	cfg.mode = parse_mode(getenv("MOCK_IB"));
	if (cfg.mode == IBSHIM_OFF)
		return;
	s = getenv(MOCKIB_SOCKET_ENV);
	cfg.socket = (s && *s) ? s : MOCKIB_DEFAULT_SOCKET;

	r = getenv("MOCK_IB_ROOT");
	if (!r || !*r)
		r = IBSHIM_DEFAULT_ROOT;
	n = strlen(r);
	while (n > 1 && r[n - 1] == '/')
		n--;
	if ((n == 1 && r[0] == '/') || r[0] != '/' || n >= PATH_MAX)
		return;	/* "/" (or a relative root): no rewriting */
	char *root = strndup(r, n);
	if (!root)
		return;
	cfg.tree.root = root;
	cfg.tree.rootlen = n;

	/* realpath() results come back canonical: strip that form too.
	 * The next realpath, not ours (this runs inside the shim). */
	static void *rp;
	char *(*rrp)(const char *, char *) =
		(char *(*)(const char *, char *))ibshim_next(&rp, "realpath");
	if (rrp)
		cfg.tree.rootreal = rrp(root, NULL);
	if (cfg.tree.rootreal)
		cfg.tree.rootreallen = strlen(cfg.tree.rootreal);
}

const struct ibshim_cfg *ibshim_cfg(void)
{
	int saved = errno;	/* init must not leak errno into callers */

	pthread_once(&cfg_once, cfg_init);
	errno = saved;
	return &cfg;
}
