/*
 * libibmockumad.so — /dev/infiniband/umadN and issmN at the fd level.
 *
 * With MOCK_IB=full, opening /dev/infiniband/umad<N> or issm<N> (or the
 * same below $MOCK_IB_ROOT, the form libibmocksys hands on when it is
 * preloaded first) gives an AF_UNIX SOCK_SEQPACKET connection to mock-ib
 * instead: hello frame, then one frame per write()/read(), so the real
 * libibumad/libibmad run unchanged and poll() works natively (see
 * mockib_proto.h).  The node must exist (stat through whatever redirect is
 * in place), else ENOENT as usual; an unreachable daemon gives ENXIO, like
 * a char node without a driver.
 *
 * On those fds: ioctl does the IB_USER_MAD ioctls itself (agent ids are
 * assigned here, lowest free per fd, and told to the daemon in control
 * frames); read() keeps the kernel's rules (EINVAL below the header size;
 * a packet longer than the buffer: the part that fits is copied, the
 * header's length already says the full size, -1/ENOSPC and the packet
 * stays queued); write() never raises SIGPIPE; close()/dup*() keep the
 * fd table right.  Every other fd goes straight to the next definition.
 *
 * Self-contained: glibc only, hidden visibility except the interposers.
 */
#undef _FORTIFY_SOURCE
#undef _FILE_OFFSET_BITS
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "shims/ib/fdtab.h"
#include "shims/ib/ibshim.h"
#include "shims/ib/mockib_dial.h"
#include "shims/ib/mockib_proto.h"

#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

EXPORT int __open_2(const char *path, int flags);
EXPORT int __open64_2(const char *path, int flags);
EXPORT int __openat_2(int dirfd, const char *path, int flags);
EXPORT int __openat64_2(int dirfd, const char *path, int flags);
EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);

/* <rdma/ib_user_mad.h> numbers (IB.md §2.2); that header is not needed. */
#define UMAD_IOC_REGISTER_AGENT 0xc01c1b01UL
#define UMAD_IOC_UNREGISTER_AGENT 0x40041b02UL
#define UMAD_IOC_ENABLE_PKEY 0x00001b03UL
#define UMAD_IOC_REGISTER_AGENT2 0xc0281b04UL
#define UMAD_REG_FLAGS_CAP 0x1u	/* IB_USER_MAD_USER_RMPP */

struct umad_reg_req {		/* struct ib_user_mad_reg_req: 27 bytes + pad */
	uint32_t id;
	uint32_t method_mask[4];
	uint8_t qpn;
	uint8_t mgmt_class;
	uint8_t mgmt_class_version;
	uint8_t oui[3];
	uint8_t rmpp_version;
};

struct umad_reg_req2 {		/* struct ib_user_mad_reg_req2, 40 bytes */
	uint32_t id;
	uint32_t qpn;
	uint8_t mgmt_class;
	uint8_t mgmt_class_version;
	uint16_t res;
	uint32_t flags;
	uint64_t method_mask[2];
	uint32_t oui;
	uint8_t rmpp_version;
	uint8_t reserved[3];
};

_Static_assert(sizeof(struct umad_reg_req) == 28, "reg_req is 28 bytes");
_Static_assert(sizeof(struct umad_reg_req2) == 40, "reg_req2 is 40 bytes");

/* ---- which paths ------------------------------------------------------- */

/* "umad<N>" / "issm<N>" -> kind and N; else 0. */
static int dev_name_kind(const char *name, uint32_t *index)
{
	static const struct { const char *pfx; int kind; } names[] = {
		{ "umad", MOCKIB_KIND_UMAD },
		{ "issm", MOCKIB_KIND_ISSM },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *d = name + 4;
		char *end;
		unsigned long v;

		if (strncmp(name, names[i].pfx, 4) != 0 || *d < '0' || *d > '9')
			continue;
		v = strtoul(d, &end, 10);
		if (*end || v > 255)
			return 0;
		*index = (uint32_t)v;
		return names[i].kind;
	}
	return 0;
}

#define DEVDIR "/dev/infiniband/"

/* Is `path` one of ours (MOCK_IB=full)?  Returns the kind or 0. */
static int umad_path_kind(const char *path, uint32_t *index)
{
	const struct ibshim_cfg *c;
	const char *rest = NULL;

	if (!path || path[0] != '/')
		return 0;
	c = ibshim_cfg();
	if (c->mode != IBSHIM_FULL)
		return 0;
	if (strncmp(path, DEVDIR, sizeof(DEVDIR) - 1) == 0)
		rest = path + sizeof(DEVDIR) - 1;
	else if (c->tree.root && strncmp(path, c->tree.root, c->tree.rootlen) == 0 &&
		 strncmp(path + c->tree.rootlen, DEVDIR, sizeof(DEVDIR) - 1) == 0)
		rest = path + c->tree.rootlen + sizeof(DEVDIR) - 1;
	return rest ? dev_name_kind(rest, index) : 0;
}

/* ---- open -------------------------------------------------------------- */

static int next_close(int fd)
{
	REAL(close, -1);
	return real(fd);
}

/* The emulated open: a connected session fd, or -1 with errno. */
static int umad_open(const char *path, int flags, int kind, uint32_t index)
{
	const struct ibshim_cfg *c = ibshim_cfg();
	struct stat st;
	int fd, rc;

	/* The node must exist: through the global stat, so a redirect shim
	 * maps the path; without one, look below the root ourselves. */
	if (stat(path, &st) < 0) {
		char alt[PATH_MAX];
		int err = errno;

		if (!c->tree.root || strncmp(path, DEVDIR, sizeof(DEVDIR) - 1) != 0 ||
		    snprintf(alt, sizeof(alt), "%s%s", c->tree.root, path) >= (int)sizeof(alt) ||
		    stat(alt, &st) < 0) {
			errno = err;
			return -1;
		}
	}
	fd = mockib_dial(c->socket, ((flags & O_CLOEXEC) ? SOCK_CLOEXEC : 0));
	if (fd < 0) {
		/* The socket is 0660 like the umad node: no access reads EACCES;
		 * no daemon is a node without a driver. */
		errno = fd == -EACCES || fd == -EPERM ? EACCES : ENXIO;
		return -1;
	}
	rc = mockib_hello(fd, (uint32_t)kind, index, (uint32_t)getpid());
	if (rc == 0 && (flags & O_NONBLOCK))
		rc = fcntl(fd, F_SETFL, O_NONBLOCK) < 0 ? -errno : 0;
	if (rc == 0)
		rc = fdtab_add(fd, kind);
	if (rc < 0) {
		next_close(fd);
		errno = rc == -ENOMEM || rc == -EMFILE ? -rc : ENXIO;
		return -1;
	}
	return fd;
}

#define OPEN_FN(name)							\
EXPORT int name(const char *path, int flags, ...)			\
{									\
	mode_t mode = 0;						\
	uint32_t idx;							\
	int kind;							\
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {	\
		va_list ap;						\
		va_start(ap, flags);					\
		mode = va_arg(ap, mode_t);				\
		va_end(ap);						\
	}								\
	kind = umad_path_kind(path, &idx);				\
	if (kind)							\
		return umad_open(path, flags, kind, idx);		\
	REAL(name, -1);							\
	return real(path, flags, mode);					\
}
OPEN_FN(open)
OPEN_FN(open64)

#define OPENAT_FN(name)							\
EXPORT int name(int dirfd, const char *path, int flags, ...)		\
{									\
	mode_t mode = 0;						\
	uint32_t idx;							\
	int kind;							\
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {	\
		va_list ap;						\
		va_start(ap, flags);					\
		mode = va_arg(ap, mode_t);				\
		va_end(ap);						\
	}								\
	kind = umad_path_kind(path, &idx);				\
	if (kind)							\
		return umad_open(path, flags, kind, idx);		\
	REAL(name, -1);							\
	return real(dirfd, path, flags, mode);				\
}
OPENAT_FN(openat)
OPENAT_FN(openat64)

#define OPEN2_FN(name)							\
EXPORT int name(const char *path, int flags)				\
{									\
	uint32_t idx;							\
	int kind = umad_path_kind(path, &idx);				\
	if (kind)							\
		return umad_open(path, flags, kind, idx);		\
	REAL(name, -1);							\
	return real(path, flags);					\
}
OPEN2_FN(__open_2)
OPEN2_FN(__open64_2)

#define OPENAT2_FN(name)						\
EXPORT int name(int dirfd, const char *path, int flags)		\
{									\
	uint32_t idx;							\
	int kind = umad_path_kind(path, &idx);				\
	if (kind)							\
		return umad_open(path, flags, kind, idx);		\
	REAL(name, -1);							\
	return real(dirfd, path, flags);				\
}
OPENAT2_FN(__openat_2)
OPENAT2_FN(__openat64_2)

/* ---- ioctl ------------------------------------------------------------- */

static int send_ctl(int fd, const struct mockib_ctl *ctl)
{
	ssize_t n;

	do
		n = send(fd, ctl, sizeof(*ctl), MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN) {
		/* a full queue on a non-blocking fd: the ioctl must not fail */
		int fl = fcntl(fd, F_GETFL);
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
		n = send(fd, ctl, sizeof(*ctl), MSG_NOSIGNAL);
		fcntl(fd, F_SETFL, fl);
	}
	return n == (ssize_t)sizeof(*ctl) ? 0 : -EIO;
}

static void ctl_init(struct mockib_ctl *ctl, uint32_t op)
{
	memset(ctl, 0, sizeof(*ctl));
	memcpy(ctl->magic, MOCKIB_CTL_MAGIC, sizeof(ctl->magic));
	ctl->op = op;
}

/* Lowest free agent id of the session, or -ENOMEM (kernel: no slot). */
static int alloc_agent(struct ibfd *s)
{
	for (int i = 0; i < FDTAB_MAX_AGENTS; i++)
		if (!(s->agents & (1u << i)))
			return i;
	return -ENOMEM;
}

/* Registers ctl (agent_id filled in here) on session s of fd.
 * With the table locked. 0 or -errno. */
static int do_register(int fd, struct ibfd *s, struct mockib_ctl *ctl)
{
	int id = alloc_agent(s);
	int rc;

	if (id < 0)
		return id;
	if (ctl->qpn > 1)
		return -EINVAL;
	ctl->agent_id = (uint32_t)id;
	rc = send_ctl(fd, ctl);
	if (rc < 0)
		return rc;
	s->agents |= 1u << id;
	s->used = true;
	return id;
}

static int ioc_register(int fd, struct ibfd *s, void *arg)
{
	struct umad_reg_req req;
	struct mockib_ctl ctl;
	int id;

	memcpy(&req, arg, sizeof(req));
	ctl_init(&ctl, MOCKIB_CTL_REGISTER);
	memcpy(ctl.method_mask, req.method_mask, sizeof(ctl.method_mask));
	ctl.qpn = req.qpn;
	ctl.mgmt_class = req.mgmt_class;
	ctl.mgmt_class_version = req.mgmt_class_version;
	memcpy(ctl.oui, req.oui, sizeof(ctl.oui));
	ctl.rmpp_version = req.rmpp_version;
	id = do_register(fd, s, &ctl);
	if (id < 0)
		return id;
	req.id = (uint32_t)id;
	memcpy(arg, &req, sizeof(req));
	return 0;
}

static int ioc_register2(int fd, struct ibfd *s, void *arg)
{
	struct umad_reg_req2 req;
	struct mockib_ctl ctl;
	int id;

	memcpy(&req, arg, sizeof(req));
	if (req.flags & ~UMAD_REG_FLAGS_CAP) {
		/* the kernel reports what it supports, then refuses */
		req.flags = UMAD_REG_FLAGS_CAP;
		memcpy(arg, &req, sizeof(req));
		return -EINVAL;
	}
	if (req.qpn > 1 || (req.oui & 0xff000000u))
		return -EINVAL;
	ctl_init(&ctl, MOCKIB_CTL_REGISTER);
	for (int i = 0; i < 4; i++)	/* bit m of the 128-bit mask stays bit m */
		ctl.method_mask[i] = (uint32_t)(req.method_mask[i / 2] >> (32 * (i % 2)));
	ctl.qpn = (uint8_t)req.qpn;
	ctl.mgmt_class = req.mgmt_class;
	ctl.mgmt_class_version = req.mgmt_class_version;
	ctl.oui[0] = (uint8_t)(req.oui >> 16);
	ctl.oui[1] = (uint8_t)(req.oui >> 8);
	ctl.oui[2] = (uint8_t)req.oui;
	ctl.rmpp_version = req.rmpp_version;
	id = do_register(fd, s, &ctl);
	if (id < 0)
		return id;
	req.id = (uint32_t)id;
	memcpy(arg, &req, sizeof(req));
	return 0;
}

static int ioc_unregister(int fd, struct ibfd *s, void *arg)
{
	struct mockib_ctl ctl;
	uint32_t id;
	int rc;

	memcpy(&id, arg, sizeof(id));
	if (id >= FDTAB_MAX_AGENTS || !(s->agents & (1u << id)))
		return -EINVAL;
	ctl_init(&ctl, MOCKIB_CTL_UNREGISTER);
	ctl.agent_id = id;
	rc = send_ctl(fd, &ctl);
	s->agents &= ~(1u << id);	/* gone locally even if the daemon is */
	return rc;
}

static int ioc_enable_pkey(int fd, struct ibfd *s)
{
	struct mockib_ctl ctl;
	int rc;

	if (s->used)
		return -EINVAL;	/* kernel: too late once agents exist */
	ctl_init(&ctl, MOCKIB_CTL_ENABLE_PKEY);
	rc = send_ctl(fd, &ctl);
	if (rc == 0)
		s->hdr_size = MOCKIB_UMAD_HDR;
	return rc;
}

static int umad_ioctl(int fd, unsigned long req, void *arg)
{
	struct ibfd *s;
	int rc;

	if ((req == UMAD_IOC_REGISTER_AGENT || req == UMAD_IOC_REGISTER_AGENT2 ||
	     req == UMAD_IOC_UNREGISTER_AGENT) && !arg) {
		errno = EFAULT;
		return -1;
	}
	fdtab_lock();
	s = fdtab_get(fd);
	if (!s)
		rc = -EBADF;
	else if (req == UMAD_IOC_REGISTER_AGENT)
		rc = ioc_register(fd, s, arg);
	else if (req == UMAD_IOC_REGISTER_AGENT2)
		rc = ioc_register2(fd, s, arg);
	else if (req == UMAD_IOC_UNREGISTER_AGENT)
		rc = ioc_unregister(fd, s, arg);
	else if (req == UMAD_IOC_ENABLE_PKEY)
		rc = ioc_enable_pkey(fd, s);
	else
		rc = -ENOTTY;
	fdtab_unlock();
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	return 0;
}

EXPORT int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (fdtab_has(fd))
		return umad_ioctl(fd, req, arg);
	REAL(ioctl, -1);
	return real(fd, req, arg);
}

/* ---- read / write ------------------------------------------------------ */

static unsigned hdr_size_of(int fd)
{
	struct ibfd *s;
	unsigned n = MOCKIB_UMAD_HDR_LEGACY;

	fdtab_lock();
	s = fdtab_get(fd);
	if (s)
		n = s->hdr_size;
	fdtab_unlock();
	return n;
}

static ssize_t umad_read(int fd, void *buf, size_t count)
{
	ssize_t full, n;

	if (count < hdr_size_of(fd)) {
		errno = EINVAL;
		return -1;
	}
	/* Peek at the whole frame's size (blocks/EAGAINs like read would). */
	full = recv(fd, buf, count, MSG_PEEK | MSG_TRUNC);
	if (full < 0)
		return -1;
	if (full == 0) {
		errno = EIO;	/* the daemon went away */
		return -1;
	}
	if ((size_t)full > count) {
		/* buf holds the first count bytes; the frame stays queued */
		errno = ENOSPC;
		return -1;
	}
	n = recv(fd, buf, count, 0);
	if (n == 0) {
		errno = EIO;
		return -1;
	}
	return n;
}

EXPORT ssize_t read(int fd, void *buf, size_t count)
{
	if (fdtab_has(fd))
		return umad_read(fd, buf, count);
	REAL(read, -1);
	return real(fd, buf, count);
}

EXPORT ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen)
{
	if (fdtab_has(fd)) {
		if (count > buflen)
			abort();	/* what glibc's checker does */
		return umad_read(fd, buf, count);
	}
	REAL(__read_chk, -1);
	return real(fd, buf, count, buflen);
}

EXPORT ssize_t write(int fd, const void *buf, size_t count)
{
	ssize_t n;

	if (!fdtab_has(fd)) {
		REAL(write, -1);
		return real(fd, buf, count);
	}
	n = send(fd, buf, count, MSG_NOSIGNAL);
	if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
		errno = EIO;	/* no SIGPIPE: a char device never raises it */
	return n;
}

/* close and dup* are fdtab.c's: the table follows the fds. */
