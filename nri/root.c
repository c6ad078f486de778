/* Host paths opened inside the host root, as a chroot would see them.
 * The plugin runs in the node pod with the host's / at --host-root
 * (read-only, the sockets and the mock tree mounted over it), where
 * <root>/var/run is a link to "/run": followed by the kernel from the
 * pod it would land in the pod's own /run.  openat2's RESOLVE_IN_ROOT
 * resolves every link with the root as "/"; a socket is then reached
 * through its directory's fd (/proc/self/fd/N/leaf), which also keeps a
 * deep temp root under sun_path's 108 bytes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "nri/nri.h"

static bool is_root(const char *root)
{
	return !root || !root[0] || !strcmp(root, "/");
}

int nri_root_open(const char *root, const char *path, int flags)
{
	struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC),
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	char joined[8192];
	int rootfd, fd;

	if (is_root(root))
		return (fd = open(path, flags | O_CLOEXEC)) < 0 ? -errno : fd;
	if ((rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS) {
		/* before Linux 5.6: the plain join (a link may lead out) */
		snprintf(joined, sizeof(joined), "%s%s", root, path);
		fd = open(joined, flags | O_CLOEXEC);
	}
	fd = fd < 0 ? -errno : fd;
	close(rootfd);
	return fd;
}

bool nri_root_exists(const char *root, const char *path)
{
	int fd = nri_root_open(root, path, O_PATH);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

int nri_root_socket_path(const char *root, const char *path, char *out, size_t len, int *dirfd)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];

	*dirfd = -1;
	if (!slash || !slash[1])
		return -EINVAL;
	if (is_root(root)) {
		if ((size_t)snprintf(out, len, "%s", path) >= len)
			return -ENAMETOOLONG;
		return 0;
	}
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if ((*dirfd = nri_root_open(root, dir[0] ? dir : "/", O_PATH | O_DIRECTORY)) < 0) {
		int r = *dirfd;
		*dirfd = -1;
		return r;
	}
	if ((size_t)snprintf(out, len, "/proc/self/fd/%d/%s", *dirfd, slash + 1) >= len) {
		close(*dirfd);
		*dirfd = -1;
		return -ENAMETOOLONG;
	}
	return 0;
}
