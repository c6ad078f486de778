/* Paths beneath a root directory, never through a symbolic link.
 *
 * A node agent runs as root and writes under a host root that others may
 * also write to: a link planted anywhere below the root (a directory
 * swapped for a link to /etc, say) must be refused, never followed.  Every
 * lookup here is relative to an fd of the root and resolved with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS),
 * or, on kernels without openat2, by an fd-relative walk with O_NOFOLLOW.
 * The leaf of a path is operated on through its parent's fd with the *at
 * calls, which never follow a final link either.  Programs only (not the
 * shims: openat2 needs Linux 5.6 headers). */
#ifndef MOKKA_FILEIO_BENEATH_H
#define MOKKA_FILEIO_BENEATH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* The root itself (the operator named it: its own path is followed);
 * "" is "/".  An O_PATH directory fd, or -errno. */
int beneath_root(const char *root);

/* Open rel ("/a/b" or "a/b": relative to rootfd either way; "" or "/" is
 * the root) as openat(2) would with flags and mode, refusing every link on
 * the way, the last component included.  fd or -errno: -ELOOP when a
 * component is a symbolic link, -EXDEV when a ".." would leave the root. */
int beneath_open(int rootfd, const char *rel, int flags, mode_t mode);

/* Open rel as a chroot to rootfd would: links are followed, an absolute
 * target or ".." resolved inside the root, never out of it (openat2
 * RESOLVE_IN_ROOT; without openat2, beneath_open: no link followed).  For
 * host paths that are links by design on a host (/var/run -> /run). */
int beneath_open_in_root(int rootfd, const char *rel, int flags, mode_t mode);

/* The parent directory of rel (an O_PATH fd, usable with every *at call)
 * and, in *leaf, rel's last component (a pointer into rel).  -EINVAL when
 * rel has no last component (the root itself). */
int beneath_parent(int rootfd, const char *rel, const char **leaf);

/* mkdir of rel's last component in its existing parent: 0 made, -EEXIST
 * when a directory is already there, -ENOTDIR when something else is,
 * -ELOOP when it is a symbolic link. */
int beneath_mkdir(int rootfd, const char *rel, mode_t mode);

/* Why rel was refused: "<shown><prefix> is a symbolic link (to <target>)
 * ..." naming its first link (shown: how to name the root, e.g. its path),
 * else strerror(-r). */
void beneath_explain(int rootfd, const char *shown, const char *rel, int r, char *buf,
		     size_t len);

/* One entry of a walk. */
struct beneath_entry {
	int dirfd;		/* the entry's parent directory */
	const char *name;	/* its name in dirfd */
	const char *rel;	/* path from the walk's start ("" for the start) */
	const struct stat *st;	/* lstat of the entry */
	int level;		/* 0: the start */
	bool post;		/* a directory, after its contents */
};

typedef int (*beneath_fn)(const struct beneath_entry *e, void *arg);

/* Walk the tree at rel beneath rootfd, parents before children, and each
 * directory again after its contents (post) when post is set.  Links are
 * entries, never followed; a directory on another filesystem is not
 * entered (a mount is not ours).  A start that does not exist: 0; one that
 * is a link: -ELOOP.  fn's negative return stops the walk and is returned;
 * other errors are returned once the walk is done. */
int beneath_walk(int rootfd, const char *rel, bool post, beneath_fn fn, void *arg);

/* mkdir -p of rel: every missing directory made with mode, never through
 * a link.  0, or -errno (-ELOOP: a component is a link; beneath_explain
 * names it). */
int beneath_mkdirs(int rootfd, const char *rel, mode_t mode);

#define BENEATH_REPLACE_SYNC 1	/* fsync the file and its directory */
#define BENEATH_REPLACE_LINK 2	/* a link at name is ours: replace it */

/* Replace name in dirfd atomically: "<name>" BENEATH_TMP "<pid>" written
 * with mode, then renamed over name.  A name that is a symbolic link is
 * refused (-ELOOP) unless flags say it is ours; never written through. */
int beneath_replace(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
		    int flags);

/* unlinkat(parent, leaf, flags) of rel: absent (or its parent) is 0. */
int beneath_unlink(int rootfd, const char *rel, int flags);

/* "/proc/self/fd/<fd>[/<leaf>]": a path for the calls that take no fd
 * (bind(2) of a socket, mount(2)); the kernel resolves it to fd's very
 * directory, whatever links were planted since. */
int beneath_fdpath(int fd, const char *leaf, char *buf, size_t len);

/* Temporary files of atomic writes are "<leaf>" BENEATH_TMP "<pid>". */
#define BENEATH_TMP ".mokka-tmp."

/* Whether name is such a temporary file whose writer is gone (its pid no
 * longer runs, or is this process: a single-threaded writer never sweeps
 * mid-write). */
bool beneath_stale_tmp(const char *name);

/* Remove every stale temporary file directly in dirfd; how many, or
 * -errno. */
int beneath_sweep_tmp(int dirfd);

#endif
