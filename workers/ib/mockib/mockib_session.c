/* mock-ib's shim sessions: the SEQPACKET listener, the hello, control
 * frames (ENABLE_PKEY, agent registration) and bounded nonblocking output
 * queues.  Data frames go to mockib_mad.c (UMAD) or mockib_netlink.c. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "fileio/beneath.h"
#include "ipc/log.h"
#include "workers/ib/mockib/mockib.h"
#include "workers/ib/mockib/mockib_netlink.h"

#define READS_PER_EVENT 64		/* fairness between clients */
#define SESSION_SNDBUF (4 << 20)

static const char *const kind_names[] = {
	[MOCKIB_KIND_UMAD] = "umad", [MOCKIB_KIND_ISSM] = "issm",
	[MOCKIB_KIND_NETLINK] = "netlink",
};

static const char *kind_name(uint32_t k)
{
	return k < sizeof(kind_names) / sizeof(kind_names[0]) && kind_names[k] ? kind_names[k]
										: "?";
}

/* The socket's directory, made beneath the host root and never through a
 * link (a link planted at any level, the leaf's included, is refused and
 * named): an O_PATH fd of it, and the socket's name in it in *leaf. */
static int sock_dir(const struct mockib *d, const char **leaf)
{
	char why[PATH_MAX + 300], dir[PATH_MAX];
	const char *rel = d->ib->socket, *slash = strrchr(rel, '/');
	int rootfd = beneath_root(d->host_root), fd = -EINVAL;

	if (rootfd < 0)
		return rootfd;
	if (slash && (size_t)(slash - rel) < sizeof(dir)) {
		memcpy(dir, rel, (size_t)(slash - rel));
		dir[slash - rel] = '\0';
		fd = beneath_mkdirs(rootfd, dir, 0755);
	}
	if (fd == 0)
		fd = beneath_parent(rootfd, rel, leaf);
	if (fd >= 0 && (**leaf == '\0' || strchr(*leaf, '/')))
		close(fd), fd = -EINVAL;
	if (fd < 0) {
		beneath_explain(rootfd, d->host_root, rel, fd, why, sizeof(why));
		log_error("socket directory: %s", why);
	}
	close(rootfd);
	return fd;
}

int mib_session_ca(struct mib_session *s)
{
	char name[32];

	if (!s->d->fab_ok || s->kind == MOCKIB_KIND_NETLINK)
		return -1;
	/* A lookup by name per MAD would be linear in the fabric's CAs. */
	if (s->ca_gen != s->d->fab_gen) {
		snprintf(name, sizeof(name), "mlx5_%u", s->index);
		s->ca = ib_fabric_local_ca(&s->d->fab, name);
		s->ca_gen = s->d->fab_gen;
	}
	return s->ca;
}

void mib_session_close(struct mib_session *s, const char *why)
{
	if (s->dead)
		return;
	log_debug("session %llu (%s%u, pid %u): closed: %s", (unsigned long long)s->id,
		  kind_name(s->kind), s->index, s->pid, why);
	s->dead = true;
	mib_watch_del(s->d, &s->w);
	close(s->w.fd);
	s->w.fd = -1;
	mib_pending_drop_session(s->d, s);
}

static void session_free(struct mib_session *s)
{
	while (s->qhead) {
		struct mib_frame *f = s->qhead;

		s->qhead = f->next;
		free(f);
	}
	free(s);
}

void mib_sessions_reap(struct mockib *d)
{
	struct mib_session **pp = &d->sessions;

	while (*pp) {
		struct mib_session *s = *pp;

		if (s->dead) {
			*pp = s->next;
			d->nsessions--;
			session_free(s);
			mib_listen_resume(d);
		} else {
			pp = &s->next;
		}
	}
}

void mib_sessions_close_all(struct mockib *d)
{
	for (struct mib_session *s = d->sessions; s; s = s->next)
		mib_session_close(s, "daemon stopping");
	mib_sessions_reap(d);
}

/* Returns 1 sent, 0 would block, -1 the session is gone. */
static int try_send(struct mib_session *s, const void *buf, size_t len)
{
	ssize_t n = send(s->w.fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);

	if (n >= 0)
		return 1;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
		return 0;
	if (errno == EMSGSIZE) {
		log_warn("session %llu: a %zu-byte frame exceeds the socket's limit; dropped",
			 (unsigned long long)s->id, len);
		return 1;
	}
	mib_session_close(s, strerror(errno));
	return -1;
}

void mib_session_send(struct mib_session *s, const void *buf, size_t len)
{
	struct mib_frame *f;

	if (s->dead)
		return;
	if (!s->qhead) {
		int r = try_send(s, buf, len);

		if (r != 0)
			return;
	}
	if (s->qframes >= MIB_QUEUE_FRAMES || s->qbytes + len > MIB_QUEUE_BYTES) {
		/* A client that does not read loses frames, never the daemon. */
		if (!s->dropped++ || !(s->dropped % 1000))
			log_warn("session %llu (pid %u): output queue full (%d frames); dropped "
				 "a %zu-byte frame (%llu so far)", (unsigned long long)s->id, s->pid,
				 s->qframes, len, (unsigned long long)s->dropped);
		s->d->drops++;
		return;
	}
	if (!(f = malloc(sizeof(*f) + len))) {
		log_warn("session %llu: out of memory queueing a frame; dropped",
			 (unsigned long long)s->id);
		return;
	}
	f->next = NULL;
	f->len = len;
	memcpy(f->data, buf, len);
	if (s->qtail)
		s->qtail->next = f;
	else
		s->qhead = f;
	s->qtail = f;
	s->qframes++;
	s->qbytes += len;
	if (s->qframes == 1)
		mib_watch_mod(s->d, &s->w, EPOLLIN | EPOLLRDHUP | EPOLLOUT);
}

static void flush_queue(struct mib_session *s)
{
	while (s->qhead && !s->dead) {
		struct mib_frame *f = s->qhead;
		int r = try_send(s, f->data, f->len);

		if (r <= 0)
			return;
		s->qhead = f->next;
		if (!s->qhead)
			s->qtail = NULL;
		s->qframes--;
		s->qbytes -= f->len;
		free(f);
	}
	if (!s->dead)
		mib_watch_mod(s->d, &s->w, EPOLLIN | EPOLLRDHUP);
}

static void on_hello(struct mib_session *s, const uint8_t *buf, size_t len)
{
	struct mockib_hello h;

	if (len != sizeof(h) || memcmp(buf, MOCKIB_HELLO_MAGIC, 8) != 0) {
		log_warn("session %llu: first frame is not a hello (%zu bytes); closing",
			 (unsigned long long)s->id, len);
		mib_session_close(s, "bad hello");
		return;
	}
	memcpy(&h, buf, sizeof(h));
	s->kind = h.kind;
	s->index = h.index;
	s->pid = h.pid;
	s->hello = true;
	if (h.kind != MOCKIB_KIND_UMAD && h.kind != MOCKIB_KIND_ISSM &&
	    h.kind != MOCKIB_KIND_NETLINK) {
		log_warn("session %llu (pid %u): unknown kind %u; closing",
			 (unsigned long long)s->id, h.pid, h.kind);
		mib_session_close(s, "unknown kind");
		return;
	}
	/* umadN / issmN exist only for our HCAs, as in /dev/infiniband. */
	if (h.kind != MOCKIB_KIND_NETLINK && mib_session_ca(s) < 0) {
		log_info("session %llu (pid %u): %s%u: no such HCA here; closing",
			 (unsigned long long)s->id, h.pid, kind_name(h.kind), h.index);
		mib_session_close(s, "unknown HCA");
		return;
	}
	log_debug("session %llu: %s%u for pid %u", (unsigned long long)s->id, kind_name(h.kind),
		  h.index, h.pid);
}

static void on_ctl(struct mib_session *s, const struct mockib_ctl *c)
{
	switch (c->op) {
	case MOCKIB_CTL_ENABLE_PKEY:
		s->hdr_len = MOCKIB_UMAD_HDR;
		return;
	case MOCKIB_CTL_REGISTER:
		if (c->agent_id >= MIB_MAX_AGENTS) {
			log_warn("session %llu: REGISTER of agent %u (max %d); ignored",
				 (unsigned long long)s->id, c->agent_id, MIB_MAX_AGENTS - 1);
			return;
		}
		s->agents[c->agent_id].used = true;
		s->agents[c->agent_id].reg = *c;
		log_debug("session %llu: agent %u: qpn %u class 0x%02x v%u oui %02x%02x%02x rmpp %u",
			  (unsigned long long)s->id, c->agent_id, c->qpn, c->mgmt_class,
			  c->mgmt_class_version, c->oui[0], c->oui[1], c->oui[2], c->rmpp_version);
		return;
	case MOCKIB_CTL_UNREGISTER:
		if (c->agent_id < MIB_MAX_AGENTS)
			s->agents[c->agent_id].used = false;
		return;
	default:
		log_warn("session %llu: unknown control op %u; ignored", (unsigned long long)s->id,
			 c->op);
	}
}

void mib_session_input(struct mib_session *s, const uint8_t *buf, size_t len)
{
	if (!s->hello) {
		on_hello(s, buf, len);
		return;
	}
	if (s->kind == MOCKIB_KIND_NETLINK) {
		mib_netlink_request(s, buf, len);
		return;
	}
	if (len == sizeof(struct mockib_ctl) && memcmp(buf, MOCKIB_CTL_MAGIC, 8) == 0) {
		struct mockib_ctl c;

		memcpy(&c, buf, sizeof(c));
		on_ctl(s, &c);
		return;
	}
	if (s->kind == MOCKIB_KIND_ISSM) {
		log_debug("session %llu: data on an issm session; ignored",
			  (unsigned long long)s->id);
		return;
	}
	mib_mad_from_session(s, buf, len);
}

static void on_session(struct mockib *d, struct mib_watch *w, uint32_t events)
{
	struct mib_session *s = (struct mib_session *)w;
	static uint8_t buf[MIB_IN_MAX];

	if (s->dead)
		return;
	if (events & EPOLLOUT)
		flush_queue(s);
	if (s->dead || !(events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		return;
	for (int i = 0; i < READS_PER_EVENT && !s->dead; i++) {
		struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n = recvmsg(s->w.fd, &mh, MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return;
			mib_session_close(s, strerror(errno));
			return;
		}
		/* 0 is EOF, or an empty datagram (SEQPACKET delivers those
		 * too), even from a peer that has since hung up with frames
		 * still queued behind it: close only once nothing is left. */
		if (n == 0) {
			int queued = 0;

			if ((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) &&
			    (ioctl(s->w.fd, SIOCINQ, &queued) < 0 || queued == 0)) {
				mib_session_close(s, "peer closed");
				return;
			}
			continue;
		}
		if (mh.msg_flags & MSG_TRUNC) {
			log_warn("session %llu (pid %u): frame larger than %d bytes; dropped",
				 (unsigned long long)s->id, s->pid, MIB_IN_MAX);
			continue;
		}
		mib_session_input(s, buf, (size_t)n);
	}
}

static void on_accept(struct mockib *d, struct mib_watch *w, uint32_t events)
{
	for (int i = 0; i < 64; i++) {
		int fd = accept4(w->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), sz = SESSION_SNDBUF;
		struct mib_session *s;

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE) {
				/* The listener stays readable: stop watching it until
				 * a session closes (or the next tick), or epoll spins. */
				log_warn("accept on %s: %s; %d sessions open, pausing accepts",
					 d->sock_path, strerror(errno), d->nsessions);
				mib_watch_mod(d, &d->listen_w, 0);
				d->listen_paused = true;
			} else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				log_warn("accept on %s: %s", d->sock_path, strerror(errno));
			}
			return;
		}
		if (d->nsessions >= MIB_MAX_SESSIONS || !(s = calloc(1, sizeof(*s)))) {
			log_warn("accept on %s: %d sessions open; refusing one", d->sock_path,
				 d->nsessions);
			close(fd);
			continue;
		}
		/* Large RMPP replies (a fabric's NodeRecords) go out as one frame. */
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		s->w.fd = fd;
		s->w.cb = on_session;
		s->d = d;
		s->id = ++d->next_session_id;
		s->hdr_len = MOCKIB_UMAD_HDR_LEGACY;
		if (mib_watch_add(d, &s->w, EPOLLIN | EPOLLRDHUP) < 0) {
			log_warn("session: epoll add: %s", strerror(errno));
			close(fd);
			free(s);
			continue;
		}
		s->next = d->sessions;
		d->sessions = s;
		d->nsessions++;
	}
}

/* bind with no access for others from the first moment (the socket file
 * takes the umask; the chmod after only narrows it further). */
static int bind_private(int fd, const struct sockaddr_un *sa)
{
	mode_t old = umask(0777 & ~MIB_SOCKET_MODE);
	int r = bind(fd, (const struct sockaddr *)sa, sizeof(*sa));
	int e = errno;

	umask(old);
	errno = e;
	return r;
}

int mib_listen_open(struct mockib *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *leaf;
	struct stat st;
	int fd, dfd;

	if ((size_t)snprintf(d->sock_path, sizeof(d->sock_path), "%s%s", d->host_root,
			     d->ib->socket) >= sizeof(sa.sun_path) || !d->ib->socket[0]) {
		log_error("socket path '%s%s' is empty or longer than %zu bytes", d->host_root,
			  d->ib->socket, sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	if ((dfd = sock_dir(d, &leaf)) < 0)
		return dfd;
	/* bind(2) takes a path: the directory's own fd through /proc, so a
	 * link planted since sock_dir is never followed. */
	if (beneath_fdpath(dfd, leaf, sa.sun_path, sizeof(sa.sun_path)) < 0) {
		log_error("%s: socket name too long", d->sock_path);
		close(dfd);
		return -ENAMETOOLONG;
	}
	/* A stale socket of a previous run (kill -9) would make bind fail;
	 * a link or anything else there is not ours to remove. */
	if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISSOCK(st.st_mode)) {
		char target[PATH_MAX] = "";
		ssize_t n = readlinkat(dfd, leaf, target, sizeof(target) - 1);

		target[n < 0 ? 0 : n] = '\0';
		if (S_ISLNK(st.st_mode))
			log_error("%s is a symbolic link (to %s) that Mokka did not make: refusing "
				  "to replace it", d->sock_path, target);
		else
			log_error("%s is there and is not a socket: refusing to replace it",
				  d->sock_path);
		close(dfd);
		return S_ISLNK(st.st_mode) ? -ELOOP : -EEXIST;
	}
	if (unlinkat(dfd, leaf, 0) < 0 && errno != ENOENT)
		log_warn("%s: unlink stale socket: %s", d->sock_path, strerror(errno));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind_private(fd, &sa) < 0 || listen(fd, 128) < 0) {
		int e = errno;

		log_error("%s: cannot listen: %s", d->sock_path, strerror(e));
		if (fd >= 0)
			close(fd);
		close(dfd);
		return -e;
	}
	/* Like /dev/infiniband/umad*: root and one group (--socket-group), so
	 * only they may feed the MAD and netlink parsers.  A group that cannot
	 * be set leaves root's: closed, never open. */
	if (fchownat(dfd, leaf, (uid_t)-1, d->sock_gid, AT_SYMLINK_NOFOLLOW) < 0)
		log_error("%s: chgrp %u: %s; only root can connect", d->sock_path,
			  (unsigned)d->sock_gid, strerror(errno));
	/* The one use of CAP_CHOWN (the supervisor grants it for this): gone
	 * for the rest of the daemon's life. */
	mib_drop_chown();
	if (fchmodat(dfd, leaf, MIB_SOCKET_MODE, AT_SYMLINK_NOFOLLOW) < 0)
		log_warn("%s: chmod %04o: %s", d->sock_path, MIB_SOCKET_MODE, strerror(errno));
	close(dfd);
	d->listen_w.fd = fd;
	d->listen_w.cb = on_accept;
	if (mib_watch_add(d, &d->listen_w, EPOLLIN) < 0) {
		int e = errno;

		close(fd);
		d->listen_w.fd = -1;
		return -e;
	}
	log_info("listening on %s", d->sock_path);
	return 0;
}

void mib_drop_chown(void)
{
	cap_value_t v = CAP_CHOWN;
	cap_t c = cap_get_proc();
	cap_flag_value_t had = CAP_CLEAR;

	if (!c)
		return;
	cap_get_flag(c, CAP_CHOWN, CAP_PERMITTED, &had);
	if (had == CAP_SET && (cap_set_flag(c, CAP_EFFECTIVE, 1, &v, CAP_CLEAR) < 0 ||
			       cap_set_flag(c, CAP_PERMITTED, 1, &v, CAP_CLEAR) < 0 ||
			       cap_set_proc(c) < 0))
		log_warn("cannot drop CAP_CHOWN: %s", strerror(errno));
	else if (had == CAP_SET)
		log_debug("dropped CAP_CHOWN");
	cap_free(c);
}

void mib_listen_resume(struct mockib *d)
{
	if (!d->listen_paused || d->listen_w.fd < 0)
		return;
	d->listen_paused = false;
	mib_watch_mod(d, &d->listen_w, EPOLLIN);
}

void mib_listen_close(struct mockib *d)
{
	char why[PATH_MAX + 300];
	const char *rel;
	int rootfd, r;

	if (d->listen_w.fd < 0)
		return;
	mib_watch_del(d, &d->listen_w);
	close(d->listen_w.fd);
	d->listen_w.fd = -1;
	d->listen_paused = false;
	if ((rootfd = beneath_root(d->host_root)) < 0)
		return;
	/* The socket opened (sock_path: host root + the socket then; a reload
	 * has d->ib point at the new one already), beneath the root, never
	 * through a link planted meanwhile. */
	rel = d->sock_path + strlen(d->host_root);
	if ((r = beneath_unlink(rootfd, rel, 0)) < 0) {
		beneath_explain(rootfd, d->host_root, rel, r, why, sizeof(why));
		log_warn("unlink the socket: %s", why);
	}
	close(rootfd);
}
