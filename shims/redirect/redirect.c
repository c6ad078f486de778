/*
 * The path-redirect interposers (see redirect.h), compiled into each shim
 * that shows a mock tree.  Self-contained: only glibc (dlsym lives in libc
 * since 2.34); the shims build with hidden visibility, so only EXPORT
 * functions leave the object.
 */
#undef _FORTIFY_SOURCE		/* we define the functions fortify wraps */
#undef _FILE_OFFSET_BITS	/* keep open/open64 etc. distinct symbols */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "shims/redirect/redirect.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REAL REDIRECT_REAL
#define MAP REDIRECT_MAP

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

/* ---- helpers ----------------------------------------------------------- */

/* Lazily resolved next definition; racing threads store the same value. */
void *redirect_next(void **slot, const char *name)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (!p) {
		p = dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	}
	return p;
}

bool redirect_has_dir_prefix(const char *p, const char *pfx, size_t n)
{
	return strncmp(p, pfx, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

int redirect_join(const struct redirect_root *r, const char *path, char buf[PATH_MAX])
{
	size_t n = strlen(path);

	if (r->rootlen + n + 1 > PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(buf, r->root, r->rootlen);
	memcpy(buf + r->rootlen, path, n + 1);
	return 0;
}

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

#define FOPEN_FN(name)							\
EXPORT FILE *name(const char *path, const char *mode)			\
{									\
	REAL(name, NULL);						\
	MAP(path, NULL);						\
	return real(p, mode);						\
}
FOPEN_FN(fopen)
FOPEN_FN(fopen64)

EXPORT DIR *opendir(const char *path)
{
	REAL(opendir, NULL);
	MAP(path, NULL);
	return real(p);
}

/* glibc's scandir opens the directory internally, past opendir. */
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
int redirect_next_fstatat(int dirfd, const char *p, struct stat *st, int flags)
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
		(int (*)(int, const char *, st_t *))redirect_next(&slot, #name); \
	MAP(path, -1);							\
	if (real)							\
		return real(ver, p, st);				\
	return fallback;						\
}
XSTAT_FN(__xstat, struct stat, redirect_next_fstatat(AT_FDCWD, p, st, 0))
XSTAT_FN(__xstat64, struct stat64, next_fstatat64(AT_FDCWD, p, st, 0))
XSTAT_FN(__lxstat, struct stat,
	 redirect_next_fstatat(AT_FDCWD, p, st, AT_SYMLINK_NOFOLLOW))
XSTAT_FN(__lxstat64, struct stat64,
	 next_fstatat64(AT_FDCWD, p, st, AT_SYMLINK_NOFOLLOW))

#define FXSTATAT_FN(name, st_t, fallback)				\
EXPORT int name(int ver, int dirfd, const char *path, st_t *st, int flags) \
{									\
	static void *slot;						\
	int (*real)(int, int, const char *, st_t *, int) =		\
		(int (*)(int, int, const char *, st_t *, int))		\
		redirect_next(&slot, #name);				\
	MAP(path, -1);							\
	if (real)							\
		return real(ver, dirfd, p, st, flags);			\
	return fallback;						\
}
FXSTATAT_FN(__fxstatat, struct stat, redirect_next_fstatat(dirfd, p, st, flags))
FXSTATAT_FN(__fxstatat64, struct stat64, next_fstatat64(dirfd, p, st, flags))

EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask,
		 struct statx *stx)
{
	REAL(statx, -1);
	MAP(path, -1);
	return real(dirfd, p, flags, mask, stx);
}

/* ---- access ------------------------------------------------------------ */

EXPORT int access(const char *path, int amode)
{
	REAL(access, -1);
	MAP(path, -1);
	return real(p, amode);
}

/* dash's `[ -r ]` */
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

/* ---- readlink ---------------------------------------------------------- */

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
static size_t root_prefix(const struct redirect_root *r, const char *s)
{
	if (r->rootreal && redirect_has_dir_prefix(s, r->rootreal, r->rootreallen))
		return r->rootreallen;
	if (r->root && redirect_has_dir_prefix(s, r->root, r->rootlen))
		return r->rootlen;
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
	size_t skip = root_prefix(redirect_root(), r);
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
