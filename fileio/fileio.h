/* Whole-file I/O shared by every layer (glibc only). */
#ifndef MOKKA_FILEIO_FILEIO_H
#define MOKKA_FILEIO_FILEIO_H

#include <stddef.h>

/* Read a whole regular file of at most max bytes into a malloc'd,
 * NUL-terminated buffer.  Refuses directories (-EISDIR), FIFOs and other
 * non-regular files (-EINVAL, never blocking on them) and files over max
 * (-EFBIG).  0, or -errno with "path: why" in msg (msg may be NULL when
 * msglen is 0). */
int fileio_read(const char *path, size_t max, char **buf, size_t *len, char *msg, size_t msglen);

/* fileio_read with extra open(2) flags, e.g. O_NOFOLLOW to refuse a
 * symlink (-ELOOP) where a checked path must not be swapped for one. */
int fileio_read_flags(const char *path, int oflags, size_t max, char **buf, size_t *len,
		      char *msg, size_t msglen);

/* Write all len bytes to fd, retrying short writes and EINTR: 0 or -errno. */
int fileio_write_all(int fd, const void *data, size_t len);

#endif
