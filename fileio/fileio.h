/* Whole-file I/O shared by every layer (glibc only). */
#ifndef MOKKA_FILEIO_FILEIO_H
#define MOKKA_FILEIO_FILEIO_H

#include <stddef.h>

/* Read a whole regular file of at most max bytes into a malloc'd,
 * NUL-terminated buffer.  Refuses directories, FIFOs and other
 * non-regular files (never blocks on them) and files over max.  0, or
 * -errno with "path: why" in msg. */
int fileio_read(const char *path, size_t max, char **buf, size_t *len, char *msg, size_t msglen);

#endif
