/* Host-root helpers for simulators: every path is <host_root> + host path,
 * resolved beneath the root without following any link.
 * All writes are atomic (temp + rename), and every created path is recorded
 * in the simulator's ownership manifest so Discard removes exactly it. */
#ifndef MOKKA_WORKERS_HOST_H
#define MOKKA_WORKERS_HOST_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

struct manifest;

struct host {
	char root[4096];		/* --host-root, no trailing slash ("" for /) */
	struct manifest *own;		/* may be NULL: nothing recorded */
	/* What the previous pass owned, and the mock's own tree R (host path):
	 * a path that already exists is ours only when prev lists it or it lies
	 * strictly under R.  Anything else pre-existing is never recorded, so
	 * never removed. */
	const struct manifest *prev;
	char mock_root[256];
	/* Generational surfaces (simulator.h: gens), paths relative to
	 * mock_root.  While staging, a write to a path at or under one goes to
	 * its shadow <mock_root>/.staged/<simulator><gen> instead, which
	 * consumers never read; Publish swaps shadow and live in one rename.
	 * The manifest records the live (logical) path. */
	const char *const *gens;
	bool staging;
	char shadow[320];	/* host path of this simulator's shadow root */
};

/* "/.staged": beside the live tree under R, on the same filesystem, so a
 * swap is one renameat2(RENAME_EXCHANGE). */
#define HOST_SHADOW_DIR "/.staged"

/* The generational surface path lies in (index into h->gens), or -1. */
int host_gen_of(const struct host *h, const char *path);

/* Join root + host path ("/var/lib/x") into buf; -ENAMETOOLONG, -EINVAL
 * when path is not absolute or contains a ".." component.  While staging,
 * a path in a generational surface is joined to its shadow instead. */
int host_path(const struct host *h, const char *path, char *buf, size_t len);

/* host_path without the root: the physical host path (the shadow's, while
 * staging a generational surface).  Every write resolves it beneath the
 * root (fileio/beneath.h): a link on the way is refused, never followed. */
int host_phys(const struct host *h, const char *path, char *buf, size_t len);

/* When r is a refusal (-ELOOP: a link on the way; -EXDEV: out of the
 * root), log which link, under root (its path, "" for /), and why; r. */
int host_refused(const char *root, int rootfd, const char *phys, int r);

/* mkdir -p of a host path; each directory created is recorded. */
int host_mkdirs(struct host *h, const char *path, mode_t mode);

/* Atomic write of a whole file (parents created).  Skips the write when
 * the content is already identical (no mtime churn). */
int host_write(struct host *h, const char *path, const void *data, size_t len,
	       mode_t mode);
int host_writef(struct host *h, const char *path, mode_t mode,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int host_vwritef(struct host *h, const char *path, mode_t mode, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

/* Symlink path -> target (target written verbatim), swapped atomically. */
int host_symlink(struct host *h, const char *target, const char *path);

/* Character device node, re-made when type or dev differ. */
int host_mknod_chr(struct host *h, const char *path, mode_t mode,
		   unsigned major, unsigned minor);

/* Whether path exists and is reached without a link (its last component
 * included): the check before handing a path to code that follows them. */
bool host_beneath(const struct host *h, const char *path);

/* Open a regular file at path for reading, reached without a link (its
 * last component included; a link on the way is refused and logged).
 * NULL with errno (ENOENT: nothing there). */
FILE *host_fopen(const struct host *h, const char *path);

/* An empty file made when nothing is there (O_EXCL: what is there, a
 * file someone else wrote meanwhile, stays as it is). */
int host_create(struct host *h, const char *path, mode_t mode);

/* Remove a file/link (not dirs); ENOENT is success. */
int host_unlink(struct host *h, const char *path);

/* Largest file host_copy_in takes (binaries and libraries). */
#define HOST_COPY_MAX ((size_t)1 << 30)

/* Copy a file from an absolute path on this machine (not under root). */
int host_copy_in(struct host *h, const char *src, const char *path, mode_t mode);

/* "<mock_root><fmt...>" into buf: a path in the mock's own tree R (a host
 * path, not yet under the host root); -ENAMETOOLONG when it does not fit. */
int host_mock_path(const char *mock_root, char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
