/*
 * libmockfs.so — LD_PRELOAD shim that shows C tools the mock PCI tree.
 *
 * Config: env MOCK_PCI_ROOT (the mock root R, e.g. /var/lib/nvml-mock),
 * read once.  Unset or empty means pure pass-through: every call goes to
 * libc untouched.
 *
 * Match rule: only absolute paths.  A path is rewritten to R + path (plain
 * concatenation, nothing normalized) when it is
 *   /sys/bus/pci     or starts with /sys/bus/pci/     (devices, drivers, slots)
 *   /proc/bus/pci    or starts with /proc/bus/pci/    (devices, <bb>/<dd>.<f>)
 *   anything starting /sys/devices/pci                (raw prefix)
 * The whole PCI view is replaced (design decision 11): a host path under
 * these prefixes that R lacks gives ENOENT, never the host's file.
 * If R + path + NUL exceeds PATH_MAX the call fails with ENAMETOOLONG; it
 * never falls back to the host path.  *at() calls rewrite absolute paths
 * only (the kernel ignores dirfd for those); relative and dirfd-relative
 * lookups, chdir, openat2, scandirat, nftw and fdopendir are not covered.
 *
 * The interposers are shims/redirect/redirect.c (compiled in); this file
 * is the configuration and the match rule.  realpath() matters here
 * because libpci derives the driver name from it.
 *
 * Self-contained: only glibc (dlsym and pthread_once live in libc since
 * 2.34), hidden visibility except the interposers.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "shims/redirect/redirect.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;
static struct redirect_root cfg;	/* root NULL = off */

static void cfg_init(void)
{
	int saved = errno;	/* init must not leak errno into callers */
	const char *r = getenv("MOCK_PCI_ROOT");
	size_t n;

	if (!r || !*r)
		goto out;
	n = strlen(r);
	while (n > 1 && r[n - 1] == '/')
		n--;
	if (n == 1 && r[0] == '/')
		goto out;	/* R = "/" maps every path onto itself */
	cfg.root = strndup(r, n);
	if (!cfg.root)
		goto out;
	cfg.rootlen = n;

	static void *rp;
	char *(*rrp)(const char *, char *) =
		(char *(*)(const char *, char *))redirect_next(&rp, "realpath");
	if (rrp && n < PATH_MAX)
		cfg.rootreal = rrp(cfg.root, NULL);
	if (cfg.rootreal)
		cfg.rootreallen = strlen(cfg.rootreal);
out:
	errno = saved;
}

const struct redirect_root *redirect_root(void)
{
	pthread_once(&cfg_once, cfg_init);
	return &cfg;
}

static bool is_pci_path(const char *p)
{
	return redirect_has_dir_prefix(p, "/sys/bus/pci", 12) ||
	       redirect_has_dir_prefix(p, "/proc/bus/pci", 13) ||
	       strncmp(p, "/sys/devices/pci", 16) == 0;
}

int redirect_map(const char *path, char buf[PATH_MAX], const char **out)
{
	const struct redirect_root *r = redirect_root();
	int rc;

	*out = path;
	if (!r->root || !path || path[0] != '/' || !is_pci_path(path))
		return 0;
	rc = redirect_join(r, path, buf);
	if (rc == 0)
		*out = buf;
	return rc;
}
