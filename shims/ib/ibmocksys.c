/*
 * libibmocksys.so — LD_PRELOAD shim that shows programs the mock IB tree.
 *
 * Active when MOCK_IB is full or sysfs; the root R is MOCK_IB_ROOT
 * (default /var/lib/nvml-mock/ib, "/" = no rewriting).  Only absolute
 * paths are considered:
 *   /sys/class/infiniband{,_mad,_verbs,_cm} and /dev/infiniband (the
 *   directory or anything below it) always become R + path: the whole IB
 *   view is the mock's, a name R lacks gives ENOENT;
 *   /sys/devices/... and /sys/bus/pci/... become R + path only when that
 *   exists under R (lstat) and is not a directory the next layer (the host,
 *   or libmockfs after us) also has.  The class entries are relative
 *   symlinks into R/sys/devices, which the kernel resolves inside R; this
 *   second rule catches code that canonicalises paths first (realpath,
 *   readlink + join) and then opens /sys/devices/..., while shared
 *   directories such as /sys/devices or /sys/bus/pci/devices keep listing
 *   the host's (or the PCI mock's) entries.
 * R + path + NUL longer than PATH_MAX fails with ENAMETOOLONG.  *at() calls
 * rewrite absolute paths only; relative lookups need nothing, because a
 * dirfd or cwd obtained through this shim already points into R.
 *
 * The interposers common with libmockfs are shims/redirect/redirect.c
 * (compiled in); this file is the match rule and the IB-only extras
 * (chdir, xattrs).
 *
 * Self-contained: glibc only, hidden visibility except the interposers.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "shims/ib/ibshim.h"
#include "shims/redirect/redirect.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

/* ---- path mapping ------------------------------------------------------ */

enum map_rule {
	MAP_NONE,
	MAP_ALWAYS,	/* IB class dirs and /dev/infiniband */
	MAP_IF_MOCK,	/* /sys/devices, /sys/bus/pci: only what R has */
};

struct prefix {
	const char *s;
	size_t n;
	enum map_rule rule;
};

#define P(str, rule) { str, sizeof(str) - 1, rule }
static const struct prefix prefixes[] = {
	P("/sys/class/infiniband", MAP_ALWAYS),
	P("/sys/class/infiniband_mad", MAP_ALWAYS),
	P("/sys/class/infiniband_verbs", MAP_ALWAYS),
	P("/sys/class/infiniband_cm", MAP_ALWAYS),
	P("/dev/infiniband", MAP_ALWAYS),
	P("/sys/devices", MAP_IF_MOCK),
	P("/sys/bus/pci", MAP_IF_MOCK),
};
#undef P

static enum map_rule rule_for(const char *p)
{
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (redirect_has_dir_prefix(p, prefixes[i].s, prefixes[i].n))
			return prefixes[i].rule;
	return MAP_NONE;
}

/* MAP_IF_MOCK: does R have `mapped`, and is it ours rather than shared? */
static bool mock_owns(const char *mapped, const char *path)
{
	struct stat st;
	int saved = errno;
	bool own = false;

	if (redirect_next_fstatat(AT_FDCWD, mapped, &st, AT_SYMLINK_NOFOLLOW) == 0)
		own = !S_ISDIR(st.st_mode) ||
		      redirect_next_fstatat(AT_FDCWD, path, &st, 0) != 0;
	errno = saved;
	return own;
}

const struct redirect_root *redirect_root(void)
{
	return &ibshim_cfg()->tree;
}

int redirect_map(const char *path, char buf[PATH_MAX], const char **out)
{
	const struct ibshim_cfg *c = ibshim_cfg();
	enum map_rule rule;

	*out = path;
	if (c->mode == IBSHIM_OFF || !c->tree.root || !path || path[0] != '/')
		return 0;
	rule = rule_for(path);
	if (rule == MAP_NONE)
		return 0;
	if (redirect_join(&c->tree, path, buf) < 0)
		return rule == MAP_ALWAYS ? -ENAMETOOLONG : 0;
	if (rule == MAP_IF_MOCK && !mock_owns(buf, path))
		return 0;
	*out = buf;
	return 0;
}

#define MAP REDIRECT_MAP

/* ---- the IB-only interposers ------------------------------------------- */

EXPORT int chdir(const char *path)
{
	REAL(chdir, -1);
	MAP(path, -1);
	return real(p);
}

/* ls -l asks for the ACL/label column. */
#define GETXATTR_FN(name)						\
EXPORT ssize_t name(const char *path, const char *attr, void *val,	\
		    size_t size)					\
{									\
	REAL(name, -1);							\
	MAP(path, -1);							\
	return real(p, attr, val, size);				\
}
GETXATTR_FN(getxattr)
GETXATTR_FN(lgetxattr)

#define LISTXATTR_FN(name)						\
EXPORT ssize_t name(const char *path, char *list, size_t size)		\
{									\
	REAL(name, -1);							\
	MAP(path, -1);							\
	return real(p, list, size);					\
}
LISTXATTR_FN(listxattr)
LISTXATTR_FN(llistxattr)
