/* Connecting to mock-ib.  Called from inside hooks, so only direct libc
 * entry points that no IB shim interposes (socket is interposed by
 * libibmockverbs, so it is reached through the next definition). */
#include "shims/ib/mockib_dial.h"
#include "shims/ib/ibshim.h"
#include "shims/ib/mockib_proto.h"

#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int next_socket(int domain, int type, int protocol)
{
	REAL(socket, -1);
	return real(domain, type, protocol);
}

static int next_close(int fd)
{
	REAL(close, -1);
	return real(fd);
}

int mockib_dial(const char *path, int sock_flags)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(path);
	int fd, err;

	if (n >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, n + 1);
	fd = next_socket(AF_UNIX, SOCK_SEQPACKET | (sock_flags & SOCK_CLOEXEC), 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = errno;
		next_close(fd);
		return -err;
	}
	if ((sock_flags & SOCK_NONBLOCK) &&
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
		err = errno;
		next_close(fd);
		return -err;
	}
	return fd;
}

int mockib_hello(int fd, uint32_t kind, uint32_t index, uint32_t pid)
{
	struct mockib_hello h = { .kind = kind, .index = index, .pid = pid };
	ssize_t n;

	memcpy(h.magic, MOCKIB_HELLO_MAGIC, sizeof(h.magic));
	do
		n = send(fd, &h, sizeof(h), MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(h) ? 0 : -EIO;
}
