/*
 * Path-redirect interposers shared by the preloaded shims that show
 * programs a mock tree (libmockfs: the PCI view, libibmocksys: the IB
 * view).  A shim compiles redirect.c in (it needs nothing but glibc) and
 * supplies the two hooks below; redirect.c exports the open, opendir,
 * fopen, scandir, stat, access, readlink and realpath families, each
 * mapping its path through redirect_map() before calling the next
 * definition.  *at() calls see the path as given: the hooks rewrite
 * absolute paths only (the kernel ignores dirfd for those).
 *
 * realpath() is interposed because glibc resolves links internally (its
 * readlink calls bypass the shim); results for rewritten paths come back
 * without the root prefix.
 */
#ifndef MOKKA_SHIMS_REDIRECT_REDIRECT_H
#define MOKKA_SHIMS_REDIRECT_REDIRECT_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#ifndef EXPORT
#define EXPORT __attribute__((visibility("default")))
#endif

/* The mock root R; a rewritten path is R + path. */
struct redirect_root {
	const char *root;	/* without trailing '/'; NULL = no rewriting */
	size_t rootlen;
	const char *rootreal;	/* realpath(root) or NULL */
	size_t rootreallen;
};

/* ---- supplied by the shim ---------------------------------------------- */

/* Sets *out to the path to use: `path` itself or its rewrite in buf.
 * 0, or -errno: the call then fails with that errno, never falling back
 * to the host path.  Preserves errno. */
int redirect_map(const char *path, char buf[PATH_MAX], const char **out);

/* The root that paths redirect_map() rewrote start with (realpath strips
 * it from its results). */
const struct redirect_root *redirect_root(void);

/* ---- provided by redirect.c -------------------------------------------- */

/* The next definition of `name` after this object, cached in *slot. */
void *redirect_next(void **slot, const char *name);

/* Does p equal pfx (n bytes) or start with pfx followed by '/'? */
bool redirect_has_dir_prefix(const char *p, const char *pfx, size_t n);

/* buf = r->root + path; 0 or -ENAMETOOLONG when it exceeds PATH_MAX. */
int redirect_join(const struct redirect_root *r, const char *path, char buf[PATH_MAX]);

/* fstatat of the next object, past this shim's own interposer. */
int redirect_next_fstatat(int dirfd, const char *path, struct stat *st, int flags);

/* Declares `real` as a pointer to the next `name`, or fails with ENOSYS. */
#define REDIRECT_REAL(name, failret)					\
	static void *slot_##name;					\
	__typeof__(name) *real =					\
		(__typeof__(name) *)redirect_next(&slot_##name, #name);	\
	if (!real) {							\
		errno = ENOSYS;						\
		return failret;						\
	}

/* Maps `path` into local `p` (declares buf_/p) or returns failret. */
#define REDIRECT_MAP(path, failret)					\
	char buf_[PATH_MAX];						\
	const char *p;							\
	do {								\
		int rc_ = redirect_map(path, buf_, &p);			\
		if (rc_ < 0) {						\
			errno = -rc_;					\
			return failret;					\
		}							\
	} while (0)

#endif
