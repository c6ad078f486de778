/*
 * libibmockverbs.so, part 2: socket(AF_NETLINK, *, NETLINK_RDMA).
 *
 * MOCK_IB=full: the socket is an AF_UNIX SOCK_SEQPACKET connection to
 * mock-ib (hello kind NETLINK), which answers NLDEV requests one datagram
 * per frame.  The netlink addressing is faked here: bind/connect record
 * the port id (autobind: the pid for the first socket, then -4096, -4097,
 * ... like the kernel), getsockname/getpeername report sockaddr_nl,
 * sendto/sendmsg drop the destination, recvfrom/recvmsg name the kernel
 * (nl_pid 0, msg_namelen = sizeof(struct sockaddr_nl), which libmnl
 * insists on), SOL_NETLINK options are accepted.  MSG_PEEK|MSG_TRUNC work
 * natively on SEQPACKET.  The hello, which carries the port id the
 * daemon's replies must use (libmnl checks nlmsg_pid), is sent when the
 * socket gets bound: explicitly or on first send/connect.
 *
 * MOCK_IB=sysfs, or full with the daemon unreachable: EPROTONOSUPPORT,
 * which sends libibverbs to its sysfs scan (and is what a host without
 * ib_core says).  Other sockets and fds are untouched.
 */
#undef _FORTIFY_SOURCE
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "shims/ib/fdtab.h"
#include "shims/ib/ibshim.h"
#include "shims/ib/mockib_dial.h"
#include "shims/ib/mockib_proto.h"

#include <linux/netlink.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef NETLINK_RDMA
#define NETLINK_RDMA 20
#endif
#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

#define AUTOBIND_ROVER_START 4096u	/* kernel: -4096, -4097, ... */

/* ---- port ids ---------------------------------------------------------- */

struct port_probe {
	uint32_t pid;
	bool taken;
};

static void probe_port(int fd, struct ibfd *s, void *arg)
{
	struct port_probe *p = arg;

	if (s->kind == MOCKIB_KIND_NETLINK && s->nl_pid == p->pid)
		p->taken = true;
}

/* With the table locked. */
static bool port_taken(uint32_t pid)
{
	struct port_probe p = { .pid = pid };

	fdtab_each(probe_port, &p);
	return p.taken;
}

/* With the table locked: a free port id the way netlink_autobind picks. */
static uint32_t autobind_pid(void)
{
	static uint32_t rover = AUTOBIND_ROVER_START;
	uint32_t pid = (uint32_t)getpid();

	while (port_taken(pid))
		pid = -(rover++);
	return pid;
}

/*
 * Binds session s of fd to `want` (0 = autobind) if it is not bound yet
 * and sends the hello.  With the table locked.  0 or -errno.
 */
static int nl_bind_locked(int fd, struct ibfd *s, uint32_t want)
{
	uint32_t pid;
	int rc;

	if (s->nl_pid)
		return want && want != s->nl_pid ? -EINVAL : 0;
	if (want && port_taken(want))
		return -EADDRINUSE;
	pid = want ? want : autobind_pid();
	rc = mockib_hello(fd, MOCKIB_KIND_NETLINK, 0, pid);
	if (rc < 0)
		return rc == -EAGAIN ? -ENOBUFS : -ECONNREFUSED;
	s->nl_pid = pid;
	return 0;
}

static int nl_autobind(int fd)
{
	struct ibfd *s;
	int rc = -EBADF;

	fdtab_lock();
	s = fdtab_get(fd);
	if (s)
		rc = nl_bind_locked(fd, s, 0);
	fdtab_unlock();
	return rc;
}

/* The session's field under the lock (0 if gone). */
static uint32_t nl_field(int fd, bool groups)
{
	struct ibfd *s;
	uint32_t v = 0;

	fdtab_lock();
	s = fdtab_get(fd);
	if (s)
		v = groups ? s->nl_groups : s->nl_pid;
	fdtab_unlock();
	return v;
}

/* Copies a sockaddr_nl into a caller's (addr, len) the way the kernel does:
 * truncated to *len, *len set to the full size. */
static void put_name(struct sockaddr *addr, socklen_t *len, uint32_t pid,
		     uint32_t groups)
{
	struct sockaddr_nl nl = {
		.nl_family = AF_NETLINK, .nl_pid = pid, .nl_groups = groups,
	};

	if (!addr || !len)
		return;
	memcpy(addr, &nl, *len < sizeof(nl) ? *len : sizeof(nl));
	*len = sizeof(nl);
}

static bool is_nl(int fd)
{
	struct ibfd *s;
	bool yes;

	if (!fdtab_has(fd))
		return false;
	fdtab_lock();
	s = fdtab_get(fd);
	yes = s && s->kind == MOCKIB_KIND_NETLINK;
	fdtab_unlock();
	return yes;
}

/* ---- socket ------------------------------------------------------------ */

static int next_close(int fd)
{
	REAL(close, -1);
	return real(fd);
}

EXPORT int socket(int domain, int type, int protocol)
{
	const struct ibshim_cfg *c;
	int base = type & ~(SOCK_CLOEXEC | SOCK_NONBLOCK);
	int fd, rc;

	c = domain == AF_NETLINK && protocol == NETLINK_RDMA ? ibshim_cfg() : NULL;
	if (!c || c->mode == IBSHIM_OFF) {
		REAL(socket, -1);
		return real(domain, type, protocol);
	}
	if (base != SOCK_RAW && base != SOCK_DGRAM) {
		errno = ESOCKTNOSUPPORT;
		return -1;
	}
	if (c->mode != IBSHIM_FULL) {
		errno = EPROTONOSUPPORT;
		return -1;
	}
	fd = mockib_dial(c->socket, type & (SOCK_CLOEXEC | SOCK_NONBLOCK));
	if (fd < 0) {
		errno = EPROTONOSUPPORT;	/* no daemon: no RDMA netlink */
		return -1;
	}
	rc = fdtab_add(fd, MOCKIB_KIND_NETLINK);
	if (rc < 0) {
		next_close(fd);
		errno = -rc;
		return -1;
	}
	fdtab_lock();
	fdtab_get(fd)->nl_type = base;
	fdtab_unlock();
	return fd;
}

/* ---- addressing -------------------------------------------------------- */

static int check_nl_addr(const struct sockaddr *addr, socklen_t len)
{
	if (!addr || len < sizeof(struct sockaddr_nl))
		return -EINVAL;
	if (addr->sa_family != AF_NETLINK)
		return -EINVAL;
	return 0;
}

EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct sockaddr_nl nl;
	struct ibfd *s;
	int rc;

	if (!is_nl(fd)) {
		REAL(bind, -1);
		return real(fd, addr, len);
	}
	rc = check_nl_addr(addr, len);
	if (rc == 0) {
		memcpy(&nl, addr, sizeof(nl));
		fdtab_lock();
		s = fdtab_get(fd);
		rc = s ? nl_bind_locked(fd, s, nl.nl_pid) : -EBADF;
		if (rc == 0)
			s->nl_groups = nl.nl_groups;	/* multicast: recorded only */
		fdtab_unlock();
	}
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	return 0;
}

EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	int rc;

	if (!is_nl(fd)) {
		REAL(connect, -1);
		return real(fd, addr, len);
	}
	if (addr && len >= sizeof(sa_family_t) && addr->sa_family == AF_UNSPEC)
		return 0;	/* "disconnect": the kernel stays the peer */
	rc = check_nl_addr(addr, len);
	if (rc == 0)
		rc = nl_autobind(fd);
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	return 0;
}

EXPORT int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	if (!is_nl(fd)) {
		REAL(getsockname, -1);
		return real(fd, addr, len);
	}
	if (!addr || !len) {
		errno = EFAULT;
		return -1;
	}
	put_name(addr, len, nl_field(fd, false), nl_field(fd, true));
	return 0;
}

EXPORT int getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	if (!is_nl(fd)) {
		REAL(getpeername, -1);
		return real(fd, addr, len);
	}
	if (!addr || !len) {
		errno = EFAULT;
		return -1;
	}
	put_name(addr, len, 0, 0);	/* the kernel */
	return 0;
}

/* ---- options ----------------------------------------------------------- */

EXPORT int setsockopt(int fd, int level, int opt, const void *val,
		      socklen_t len)
{
	REAL(setsockopt, -1);
	if (!is_nl(fd) || level != SOL_NETLINK)
		return real(fd, level, opt, val, len);
	/* NETLINK_EXT_ACK, CAP_ACK, ADD_MEMBERSHIP, ...: nothing to do */
	if (!val || len < sizeof(int)) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

static int put_int(void *val, socklen_t *len, int v)
{
	if (!val || !len || *len < sizeof(int)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(val, &v, sizeof(v));
	*len = sizeof(v);
	return 0;
}

EXPORT int getsockopt(int fd, int level, int opt, void *val, socklen_t *len)
{
	REAL(getsockopt, -1);
	if (!is_nl(fd))
		return real(fd, level, opt, val, len);
	if (level == SOL_NETLINK)
		return put_int(val, len, 0);
	if (level == SOL_SOCKET && opt == SO_DOMAIN)
		return put_int(val, len, AF_NETLINK);
	if (level == SOL_SOCKET && opt == SO_PROTOCOL)
		return put_int(val, len, NETLINK_RDMA);
	if (level == SOL_SOCKET && opt == SO_TYPE) {
		struct ibfd *s;
		int t = SOCK_RAW;

		fdtab_lock();
		s = fdtab_get(fd);
		if (s)
			t = s->nl_type;
		fdtab_unlock();
		return put_int(val, len, t);
	}
	return real(fd, level, opt, val, len);
}

/* ---- data -------------------------------------------------------------- */

/* The kernel answers a dead daemon's socket with ECONNREFUSED (no such
 * peer), never SIGPIPE. */
static ssize_t sent(ssize_t n)
{
	if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
		errno = ECONNREFUSED;
	return n;
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags,
		      const struct sockaddr *addr, socklen_t alen)
{
	int rc;

	REAL(sendto, -1);
	if (!is_nl(fd))
		return real(fd, buf, len, flags, addr, alen);
	if (addr && check_nl_addr(addr, alen) < 0) {
		errno = EINVAL;
		return -1;
	}
	rc = nl_autobind(fd);
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	return sent(real(fd, buf, len, flags | MSG_NOSIGNAL, NULL, 0));
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct msghdr m;
	int rc;

	REAL(sendmsg, -1);
	if (!is_nl(fd))
		return real(fd, msg, flags);
	if (msg->msg_name && check_nl_addr(msg->msg_name, msg->msg_namelen) < 0) {
		errno = EINVAL;
		return -1;
	}
	rc = nl_autobind(fd);
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	m = *msg;
	m.msg_name = NULL;
	m.msg_namelen = 0;
	return sent(real(fd, &m, flags | MSG_NOSIGNAL));
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct msghdr m;
	ssize_t n;

	REAL(recvmsg, -1);
	if (!is_nl(fd))
		return real(fd, msg, flags);
	m = *msg;
	m.msg_name = NULL;
	m.msg_namelen = 0;
	n = real(fd, &m, flags);
	if (n < 0)
		return n;
	msg->msg_flags = m.msg_flags;
	msg->msg_controllen = m.msg_controllen;
	if (msg->msg_name)
		put_name(msg->msg_name, &msg->msg_namelen, 0, 0);
	else
		msg->msg_namelen = 0;
	return n;
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags,
			struct sockaddr *addr, socklen_t *alen)
{
	ssize_t n;

	REAL(recvfrom, -1);
	if (!is_nl(fd))
		return real(fd, buf, len, flags, addr, alen);
	n = real(fd, buf, len, flags, NULL, NULL);
	if (n >= 0 && addr)
		put_name(addr, alen, 0, 0);
	return n;
}

/* close and dup* are fdtab.c's: the table follows the fds. */
