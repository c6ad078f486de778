/* Reading a whole file: the one home for it.  Programs and shims alike
 * compile this file in (it needs nothing but libc). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio/fileio.h"

int fileio_read(const char *path, size_t max, char **buf, size_t *len, char *msg, size_t msglen)
{
	return fileio_read_flags(path, 0, max, buf, len, msg, msglen);
}

int fileio_read_flags(const char *path, int oflags, size_t max, char **buf, size_t *len,
		      char *msg, size_t msglen)
{
	struct stat st;
	size_t cap, n = 0;
	char *b;
	int fd, e;

	*buf = NULL;
	*len = 0;
	/* O_NONBLOCK: opening a FIFO must not hang the loop; it is refused
	 * below as not a regular file. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | oflags);
	if (fd < 0) {
		e = errno;
		if (e == ENOENT && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
			snprintf(msg, msglen, "%s: dangling symlink (its target does not exist)", path);
		else
			snprintf(msg, msglen, "%s: open: %s", path, strerror(e));
		return -e;
	}
	if (fstat(fd, &st) < 0) {
		e = errno;
		snprintf(msg, msglen, "%s: fstat: %s", path, strerror(e));
		close(fd);
		return -e;
	}
	if (S_ISDIR(st.st_mode) || !S_ISREG(st.st_mode)) {
		e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		snprintf(msg, msglen, "%s: %s", path,
			 e == EISDIR ? "is a directory" : "not a regular file");
		close(fd);
		return -e;
	}
	if ((uint64_t)st.st_size > max)
		goto too_big;
	/* st_size is a hint: the file may grow (or shrink) while we read. */
	cap = (size_t)st.st_size + 1;
	b = malloc(cap);
	if (!b)
		goto nomem;
	for (;;) {
		ssize_t r;
		char probe;

		if (n + 1 < cap)
			r = read(fd, b + n, cap - 1 - n);
		else
			r = read(fd, &probe, 1);	/* full: at EOF yet? */
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			e = errno;
			snprintf(msg, msglen, "%s: read: %s", path, strerror(e));
			free(b);
			close(fd);
			return -e;
		}
		if (r == 0)
			break;
		if (n + 1 == cap) {
			char *nb;

			if (n >= max) {
				free(b);
				goto too_big;
			}
			cap = cap * 2 + 64 > max + 1 ? max + 1 : cap * 2 + 64;
			nb = realloc(b, cap);
			if (!nb) {
				free(b);
				goto nomem;
			}
			b = nb;
			b[n] = probe;
		}
		n += (size_t)r;
	}
	close(fd);
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
too_big:
	snprintf(msg, msglen, "%s: larger than the %zu byte limit", path, max);
	close(fd);
	return -EFBIG;
nomem:
	snprintf(msg, msglen, "%s: read: %s", path, strerror(ENOMEM));
	close(fd);
	return -ENOMEM;
}

int fileio_write_all(int fd, const void *data, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = write(fd, (const char *)data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		off += (size_t)n;
	}
	return 0;
}
