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
 * realpath() is interposed because glibc resolves links internally (its
 * readlink calls bypass this shim) and libpci derives the driver name from
 * realpath(); results inside R are given back without the R prefix.
 *
 * Self-contained: only glibc (dlsym and pthread_once live in libc since
 * 2.34), hidden visibility except the interposers.
 */
#undef _FORTIFY_SOURCE		/* we define the functions fortify wraps */
#undef _FILE_OFFSET_BITS	/* keep open/open64 etc. distinct symbols */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* Declarations glibc only exposes under fortify or no longer at all. */
EXPORT int __open_2(const char *path, int flags);
EXPORT int __open64_2(const char *path, int flags);
EXPORT int __openat_2(int dirfd, const char *path, int flags);
EXPORT int __openat64_2(int dirfd, const char *path, int flags);
EXPORT int __xstat(int ver, const char *path, struct stat *st);
EXPORT int __xstat64(int ver, const char *path, struct stat64 *st);
EXPORT int __lxstat(int ver, const char *path, struct stat *st);
EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st);
EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st,
		      int flags);
EXPORT int __fxstatat64(int ver, int dirfd, const char *path,
			struct stat64 *st, int flags);
EXPORT char *__realpath_chk(const char *path, char *resolved, size_t len);
EXPORT ssize_t __readlink_chk(const char *path, char *buf, size_t len,
			      size_t buflen);
EXPORT ssize_t __readlinkat_chk(int dirfd, const char *path, char *buf,
				size_t len, size_t buflen);

/* ---- configuration ---------------------------------------------------- */

static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;
static char *cfg_root;		/* R without trailing '/', NULL = off */
static size_t cfg_rootlen;
static char *cfg_rootreal;	/* realpath(R), for stripping results */
static size_t cfg_rootreallen;

static void *real_sym(void **slot, const char *name);

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
	cfg_root = strndup(r, n);
	if (!cfg_root)
		goto out;
	cfg_rootlen = n;

	static void *rp;
	char *(*rrp)(const char *, char *) = real_sym(&rp, "realpath");
	if (rrp && n < PATH_MAX)
		cfg_rootreal = rrp(cfg_root, NULL);
	if (cfg_rootreal)
		cfg_rootreallen = strlen(cfg_rootreal);
out:
	errno = saved;
}

/* ---- real symbols ------------------------------------------------------ */

/* Lazily resolved next definition; racing threads store the same value. */
static void *real_sym(void **slot, const char *name)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (!p) {
		p = dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	}
	return p;
}

/* Declares `real` as a pointer to the next `name`, or fails with ENOSYS. */
#define REAL(name, failret)						\
	static void *slot_##name;					\
	__typeof__(name) *real =					\
		(__typeof__(name) *)real_sym(&slot_##name, #name);	\
	if (!real) {							\
		errno = ENOSYS;						\
		return failret;						\
	}

/* ---- path mapping ------------------------------------------------------ */

static bool has_dir_prefix(const char *p, const char *pfx, size_t n)
{
	return strncmp(p, pfx, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

static bool is_pci_path(const char *p)
{
	return has_dir_prefix(p, "/sys/bus/pci", 12) ||
	       has_dir_prefix(p, "/proc/bus/pci", 13) ||
	       strncmp(p, "/sys/devices/pci", 16) == 0;
}

/*
 * Sets *out to the path to use: the original or R + path in buf.
 * Returns 0 or -ENAMETOOLONG.
 */
static int map_path(const char *path, char buf[PATH_MAX], const char **out)
{
	size_t n;

	*out = path;
	pthread_once(&cfg_once, cfg_init);
	if (!cfg_root || !path || path[0] != '/' || !is_pci_path(path))
		return 0;
	n = strlen(path);
	if (cfg_rootlen + n + 1 > PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(buf, cfg_root, cfg_rootlen);
	memcpy(buf + cfg_rootlen, path, n + 1);
	*out = buf;
	return 0;
}

/* Maps `path` into local `p` (declares buf_/p) or returns failret. */
#define MAP(path, failret)						\
	char buf_[PATH_MAX];						\
	const char *p;							\
	do {								\
		int rc_ = map_path(path, buf_, &p);			\
		if (rc_ < 0) {						\
			errno = -rc_;					\
			return failret;					\
		}							\
	} while (0)

static bool needs_mode(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

/* ---- open family ------------------------------------------------------- */

#define OPEN_FN(name)							\
EXPORT int name(const char *path, int flags, ...)			\
{									\
	mode_t mode = 0;						\
	if (needs_mode(flags)) {					\
		va_list ap;						\
		va_start(ap, flags);					\
		mode = va_arg(ap, mode_t);				\
		va_end(ap);						\
	}								\
	REAL(name, -1);							\
	MAP(path, -1);							\
	return real(p, flags, mode);					\
}
OPEN_FN(open)
OPEN_FN(open64)

#define OPENAT_FN(name)							\
EXPORT int name(int dirfd, const char *path, int flags, ...)		\
{									\
	mode_t mode = 0;						\
	if (needs_mode(flags)) {					\
		va_list ap;						\
		va_start(ap, flags);					\
		mode = va_arg(ap, mode_t);				\
		va_end(ap);						\
	}								\
	REAL(name, -1);							\
	MAP(path, -1);							\
	return real(dirfd, p, flags, mode);				\
}
OPENAT_FN(openat)
OPENAT_FN(openat64)

#define OPEN2_FN(name)							\
EXPORT int name(const char *path, int flags)				\
{									\
	REAL(name, -1);							\
	MAP(path, -1);							\
	return real(p, flags);						\
}
OPEN2_FN(__open_2)
OPEN2_FN(__open64_2)

#define OPENAT2_FN(name)						\
EXPORT int name(int dirfd, const char *path, int flags)		\
{									\
	REAL(name, -1);							\
	MAP(path, -1);							\
	return real(dirfd, p, flags);					\
}
OPENAT2_FN(__openat_2)
OPENAT2_FN(__openat64_2)

EXPORT DIR *opendir(const char *path)
{
	REAL(opendir, NULL);
	MAP(path, NULL);
	return real(p);
}

#define FOPEN_FN(name)							\
EXPORT FILE *name(const char *path, const char *mode)			\
{									\
	REAL(name, NULL);						\
	MAP(path, NULL);						\
	return real(p, mode);						\
}
FOPEN_FN(fopen)
FOPEN_FN(fopen64)

typedef int (*scan_filter)(const struct dirent *);
typedef int (*scan_cmp)(const struct dirent **, const struct dirent **);

EXPORT int scandir(const char *path, struct dirent ***list, scan_filter filt,
		   scan_cmp cmp)
{
	REAL(scandir, -1);
	MAP(path, -1);
	return real(p, list, filt, cmp);
}

/* _FILE_OFFSET_BITS=64 programs call the 64 variant, even on LP64. */
typedef int (*scan_filter64)(const struct dirent64 *);
typedef int (*scan_cmp64)(const struct dirent64 **, const struct dirent64 **);

EXPORT int scandir64(const char *path, struct dirent64 ***list,
		     scan_filter64 filt, scan_cmp64 cmp)
{
	REAL(scandir64, -1);
	MAP(path, -1);
	return real(p, list, filt, cmp);
}

/* ---- stat family ------------------------------------------------------- */

#define STAT_FN(name, st_t)						\
EXPORT int name(const char *path, st_t *st)				\
{									\
	REAL(name, -1);							\
	MAP(path, -1);							\
	return real(p, st);						\
}
STAT_FN(stat, struct stat)
STAT_FN(stat64, struct stat64)
STAT_FN(lstat, struct stat)
STAT_FN(lstat64, struct stat64)

#define FSTATAT_FN(name, st_t)						\
EXPORT int name(int dirfd, const char *path, st_t *st, int flags)	\
{									\
	REAL(name, -1);							\
	MAP(path, -1);							\
	return real(dirfd, p, st, flags);				\
}
FSTATAT_FN(fstatat, struct stat)
FSTATAT_FN(fstatat64, struct stat64)

/* Fallbacks for the legacy entry points, bypassing our own interposers. */
static int next_fstatat(int dirfd, const char *p, struct stat *st, int flags)
{
	REAL(fstatat, -1);
	return real(dirfd, p, st, flags);
}

static int next_fstatat64(int dirfd, const char *p, struct stat64 *st,
			  int flags)
{
	REAL(fstatat64, -1);
	return real(dirfd, p, st, flags);
}

/*
 * Pre-2.33 binaries call __xstat & co.  Use the real one when libc still
 * exports it; otherwise the modern call, whose struct matches the current
 * stat version on every 64-bit Linux ABI.
 */
#define XSTAT_FN(name, st_t, fallback)					\
EXPORT int name(int ver, const char *path, st_t *st)			\
{									\
	static void *slot;						\
	int (*real)(int, const char *, st_t *) =			\
		(int (*)(int, const char *, st_t *))real_sym(&slot, #name); \
	MAP(path, -1);							\
	if (real)							\
		return real(ver, p, st);				\
	return fallback;						\
}
XSTAT_FN(__xstat, struct stat, next_fstatat(AT_FDCWD, p, st, 0))
XSTAT_FN(__xstat64, struct stat64, next_fstatat64(AT_FDCWD, p, st, 0))
XSTAT_FN(__lxstat, struct stat, next_fstatat(AT_FDCWD, p, st, AT_SYMLINK_NOFOLLOW))
XSTAT_FN(__lxstat64, struct stat64,
	 next_fstatat64(AT_FDCWD, p, st, AT_SYMLINK_NOFOLLOW))

#define FXSTATAT_FN(name, st_t, fallback)				\
EXPORT int name(int ver, int dirfd, const char *path, st_t *st, int flags) \
{									\
	static void *slot;						\
	int (*real)(int, int, const char *, st_t *, int) =		\
		(int (*)(int, int, const char *, st_t *, int))		\
		real_sym(&slot, #name);					\
	MAP(path, -1);							\
	if (real)							\
		return real(ver, dirfd, p, st, flags);			\
	return fallback;						\
}
FXSTATAT_FN(__fxstatat, struct stat, next_fstatat(dirfd, p, st, flags))
FXSTATAT_FN(__fxstatat64, struct stat64, next_fstatat64(dirfd, p, st, flags))

EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask,
		 struct statx *stx)
{
	REAL(statx, -1);
	MAP(path, -1);
	return real(dirfd, p, flags, mask, stx);
}

/* ---- access / readlink ------------------------------------------------- */

EXPORT int access(const char *path, int amode)
{
	REAL(access, -1);
	MAP(path, -1);
	return real(p, amode);
}

EXPORT int faccessat(int dirfd, const char *path, int amode, int flags)
{
	REAL(faccessat, -1);
	MAP(path, -1);
	return real(dirfd, p, amode, flags);
}

/* glibc's euidaccess reaches the kernel internally, past faccessat. */
EXPORT int euidaccess(const char *path, int amode)
{
	REAL(euidaccess, -1);
	MAP(path, -1);
	return real(p, amode);
}

EXPORT int eaccess(const char *path, int amode)
{
	REAL(eaccess, -1);
	MAP(path, -1);
	return real(p, amode);
}

EXPORT ssize_t readlink(const char *path, char *out, size_t len)
{
	REAL(readlink, -1);
	MAP(path, -1);
	return real(p, out, len);
}

EXPORT ssize_t readlinkat(int dirfd, const char *path, char *out, size_t len)
{
	REAL(readlinkat, -1);
	MAP(path, -1);
	return real(dirfd, p, out, len);
}

EXPORT ssize_t __readlink_chk(const char *path, char *out, size_t len,
			      size_t buflen)
{
	REAL(__readlink_chk, -1);
	MAP(path, -1);
	return real(p, out, len, buflen);
}

EXPORT ssize_t __readlinkat_chk(int dirfd, const char *path, char *out,
				size_t len, size_t buflen)
{
	REAL(__readlinkat_chk, -1);
	MAP(path, -1);
	return real(dirfd, p, out, len, buflen);
}

/* ---- realpath ---------------------------------------------------------- */

/* Length of the R prefix `s` starts with (as a whole component), else 0. */
static size_t root_prefix(const char *s)
{
	if (cfg_rootreal && has_dir_prefix(s, cfg_rootreal, cfg_rootreallen))
		return cfg_rootreallen;
	if (has_dir_prefix(s, cfg_root, cfg_rootlen))
		return cfg_rootlen;
	return 0;
}

/* Shared by realpath and __realpath_chk, bound locally (no PLT). */
static char *mock_realpath(const char *path, char *resolved)
{
	REAL(realpath, NULL);
	MAP(path, NULL);
	if (p == path)
		return real(path, resolved);

	char *r = real(p, NULL);
	if (!r)
		return NULL;
	size_t skip = root_prefix(r);
	const char *shown = r + skip;
	if (skip && !*shown)
		shown = "/";	/* R itself: the mock's "/" */
	if (!resolved) {
		if (skip)
			memmove(r, shown, strlen(shown) + 1);
		return r;
	}
	/* Caller's buffer is PATH_MAX by contract; r fits, so shown does. */
	strcpy(resolved, shown);
	free(r);
	return resolved;
}

EXPORT char *realpath(const char *path, char *resolved)
{
	return mock_realpath(path, resolved);
}

EXPORT char *__realpath_chk(const char *path, char *resolved, size_t len)
{
	if (resolved && len < PATH_MAX) {
		/* Same verdict as glibc's checker: a too-small buffer. */
		REAL(__realpath_chk, NULL);
		return real(path, resolved, len);
	}
	return mock_realpath(path, resolved);
}
