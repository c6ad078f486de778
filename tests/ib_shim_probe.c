/*
 * ib_shim_probe — exercises libibmockumad / libibmockverbs from inside a
 * preloaded process, against a fake mock-ib that this process itself
 * serves.  A unix SEQPACKET connect completes as soon as it is queued on
 * the listener, so one thread can play both sides: the shim connects
 * (inside open/socket), then we accept and look at what arrived.
 *
 * Run by tests/integration/ib_shim_umad.sh with LD_PRELOAD, MOCK_IB=full,
 * MOCK_IB_ROOT (a tree with umad0/issm0) and MOCK_IB_SOCKET (where we
 * listen).  Modes:
 *   umad          fd-level: hello, ioctls -> control frames, write, read
 *                 with ENOSPC, poll, dup/close
 *   libibumad     the real libibumad on top: umad_open_port/register/
 *                 send/recv, including the -ENOSPC length report
 *   netlink       NETLINK_RDMA hooks: bind/getsockname/options/sendto/
 *                 recvmsg names, MSG_PEEK|MSG_TRUNC, autobind ids
 *   libnl         a libnl-3 dump round trip, the way libibverbs talks
 *   verbs         the verbs API shim on its own (MOCK_IB=sysfs, hand tree):
 *                 open/query_device/query_port/GIDs/GID types/P_Keys
 *   open-errno PATH ERRNO     open(PATH) must fail with ERRNO (no server)
 *   socket-errno ERRNO        socket(NETLINK_RDMA) must fail with ERRNO
 * Prints "ok: ..." / "FAIL: ..." lines; exit 0 only if all passed.
 */
#include "shims/ib/mockib_proto.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/umad.h>
#include <infiniband/verbs.h>
#include <linux/netlink.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define NETLINK_RDMA_PROTO 20
#define IOC_REGISTER_AGENT 0xc01c1b01UL
#define IOC_UNREGISTER_AGENT 0x40041b02UL
#define IOC_ENABLE_PKEY 0x00001b03UL
#define IOC_REGISTER_AGENT2 0xc0281b04UL

struct reg_req {
	uint32_t id;
	uint32_t method_mask[4];
	uint8_t qpn, mgmt_class, mgmt_class_version, oui[3], rmpp_version;
};

struct reg_req2 {
	uint32_t id, qpn;
	uint8_t mgmt_class, mgmt_class_version;
	uint16_t res;
	uint32_t flags;
	uint64_t method_mask[2];
	uint32_t oui;
	uint8_t rmpp_version, reserved[3];
};

static int fails;

static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf(ok ? "ok: " : "FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		fails++;
}

/* ---- the fake daemon side ---------------------------------------------- */

static int listener(void)
{
	const char *path = getenv("MOCK_IB_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (!path || strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "MOCK_IB_SOCKET unset or too long\n");
		exit(2);
	}
	strcpy(sa.sun_path, path);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 16) < 0) {
		perror("fake daemon: listen");
		exit(2);
	}
	return fd;
}

/* One frame from the client, waiting at most 2 s.  Length or -1. */
static ssize_t frame(int fd, void *buf, size_t len)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, 2000) != 1)
		return -1;
	return recv(fd, buf, len, 0);
}

static int accept_one(int lfd)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };

	if (poll(&p, 1, 2000) != 1)
		return -1;
	return accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
}

static bool got_hello(int c, uint32_t kind, uint32_t index, uint32_t pid)
{
	struct mockib_hello h;
	ssize_t n = frame(c, &h, sizeof(h));

	return n == (ssize_t)sizeof(h) &&
	       memcmp(h.magic, MOCKIB_HELLO_MAGIC, 8) == 0 && h.kind == kind &&
	       h.index == index && h.pid == pid;
}

static bool got_ctl(int c, struct mockib_ctl *ctl, uint32_t op)
{
	ssize_t n = frame(c, ctl, sizeof(*ctl));

	return n == (ssize_t)sizeof(*ctl) &&
	       memcmp(ctl->magic, MOCKIB_CTL_MAGIC, 8) == 0 && ctl->op == op;
}

/* ---- umad: the fd level ------------------------------------------------ */

static void umad_registers(int fd, int c)
{
	struct reg_req r = { .method_mask = { 0x2, 0, 0, 0x80000000 }, .qpn = 1,
			     .mgmt_class = 0x03, .mgmt_class_version = 2,
			     .rmpp_version = 1 };
	struct reg_req2 r2 = { .qpn = 1, .mgmt_class = 0x32,
			       .mgmt_class_version = 1,
			       .method_mask = { 0x6, 1ull << 63 }, .oui = 0x001405 };
	struct mockib_ctl ctl;
	uint32_t id;

	r.id = 99;
	check(ioctl(fd, IOC_REGISTER_AGENT, &r) == 0 && r.id == 0,
	      "REGISTER_AGENT -> id 0 (got %u)", r.id);
	check(got_ctl(c, &ctl, MOCKIB_CTL_REGISTER) && ctl.agent_id == 0 &&
	      ctl.qpn == 1 && ctl.mgmt_class == 3 && ctl.mgmt_class_version == 2 &&
	      ctl.rmpp_version == 1 && ctl.method_mask[0] == 2 &&
	      ctl.method_mask[3] == 0x80000000u,
	      "REGISTER ctl frame carries id 0, qpn, class 3 v2, rmpp 1, mask");
	r.mgmt_class = 0x81;
	r.qpn = 0;
	check(ioctl(fd, IOC_REGISTER_AGENT, &r) == 0 && r.id == 1, "second agent -> id 1");
	check(got_ctl(c, &ctl, MOCKIB_CTL_REGISTER) && ctl.agent_id == 1 &&
	      ctl.qpn == 0 && ctl.mgmt_class == 0x81, "ctl for id 1 (SMI class 0x81)");
	check(ioctl(fd, IOC_REGISTER_AGENT2, &r2) == 0 && r2.id == 2,
	      "REGISTER_AGENT2 -> id 2");
	check(got_ctl(c, &ctl, MOCKIB_CTL_REGISTER) && ctl.agent_id == 2 &&
	      ctl.mgmt_class == 0x32 && ctl.oui[0] == 0x00 && ctl.oui[1] == 0x14 &&
	      ctl.oui[2] == 0x05 && ctl.method_mask[0] == 6 &&
	      ctl.method_mask[1] == 0 && ctl.method_mask[3] == 0x80000000u,
	      "REGISTER2 ctl: class 0x32, OUI 00:14:05, 128-bit mask kept");
	id = 1;
	check(ioctl(fd, IOC_UNREGISTER_AGENT, &id) == 0, "UNREGISTER 1");
	check(got_ctl(c, &ctl, MOCKIB_CTL_UNREGISTER) && ctl.agent_id == 1,
	      "UNREGISTER ctl frame for id 1");
	check(ioctl(fd, IOC_REGISTER_AGENT, &r) == 0 && r.id == 1,
	      "freed id 1 is reused (lowest free)");
	check(got_ctl(c, &ctl, MOCKIB_CTL_REGISTER) && ctl.agent_id == 1, "ctl for reused id 1");
	id = 7;
	errno = 0;
	check(ioctl(fd, IOC_UNREGISTER_AGENT, &id) == -1 && errno == EINVAL,
	      "UNREGISTER of an unknown id -> EINVAL");
	r2.flags = 0x6;
	errno = 0;
	check(ioctl(fd, IOC_REGISTER_AGENT2, &r2) == -1 && errno == EINVAL &&
	      r2.flags == 1, "REGISTER_AGENT2 with unknown flags -> EINVAL, flags = caps");
	errno = 0;
	check(ioctl(fd, 0x1b99, 0) == -1 && errno == ENOTTY, "other ioctl -> ENOTTY");
	errno = 0;
	check(ioctl(fd, IOC_ENABLE_PKEY) == -1 && errno == EINVAL,
	      "ENABLE_PKEY once agents exist -> EINVAL (kernel rule)");
}

static void umad_data(int fd, int c)
{
	unsigned char out[64 + 256], in[600], big[400];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint32_t len = sizeof(big);
	ssize_t n;

	for (size_t i = 0; i < sizeof(out); i++)
		out[i] = (unsigned char)i;
	check(write(fd, out, sizeof(out)) == (ssize_t)sizeof(out), "write 320 bytes");
	n = frame(c, in, sizeof(in));
	check(n == (ssize_t)sizeof(out) && memcmp(in, out, sizeof(out)) == 0,
	      "daemon got the write as one 320-byte frame");

	errno = 0;
	check(read(fd, in, sizeof(in)) == -1 && errno == EAGAIN,
	      "O_NONBLOCK read with nothing queued -> EAGAIN");

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (unsigned char)(0xff - i);
	memcpy(big + 16, &len, 4);	/* header length = full size */
	check(send(c, big, sizeof(big), 0) == (ssize_t)sizeof(big), "daemon sends 400 bytes");
	check(poll(&p, 1, 2000) == 1 && (p.revents & POLLIN), "poll: POLLIN");
	memset(in, 0, sizeof(in));
	errno = 0;
	n = read(fd, in, 320);
	check(n == -1 && errno == ENOSPC, "read into 320 bytes -> -1/ENOSPC");
	check(memcmp(in, big, 320) == 0 && in[320] == 0,
	      "the 320 bytes that fit were copied (header length says 400)");
	errno = 0;
	check(read(fd, in, 320) == -1 && errno == ENOSPC, "frame still queued: ENOSPC again");
	memset(in, 0, sizeof(in));
	n = read(fd, in, sizeof(in));
	check(n == 400 && memcmp(in, big, 400) == 0, "big enough buffer -> all 400 bytes");
	errno = 0;
	check(read(fd, in, 10) == -1 && errno == EINVAL, "read below the header size -> EINVAL");
}

static void mode_umad(void)
{
	int lfd = listener(), fd, fd2, c, c2, dfd;
	struct mockib_ctl ctl;
	struct reg_req r = { .qpn = 1, .mgmt_class = 4, .mgmt_class_version = 1 };
	char b[8];

	fd = open("/dev/infiniband/umad0", O_RDWR | O_NONBLOCK);
	check(fd >= 0, "open umad0 -> fd %d (%s)", fd, fd < 0 ? strerror(errno) : "");
	if (fd < 0)
		exit(1);
	c = accept_one(lfd);
	check(c >= 0 && got_hello(c, MOCKIB_KIND_UMAD, 0, (uint32_t)getpid()),
	      "hello: kind UMAD, index 0, our pid");
	check((fcntl(fd, F_GETFL) & O_NONBLOCK) && !(fcntl(fd, F_GETFD) & FD_CLOEXEC),
	      "O_NONBLOCK applied, no FD_CLOEXEC");
	check(ioctl(fd, IOC_ENABLE_PKEY) == 0, "ENABLE_PKEY -> 0");
	check(got_ctl(c, &ctl, MOCKIB_CTL_ENABLE_PKEY), "ENABLE_PKEY ctl frame");
	umad_registers(fd, c);
	umad_data(fd, c);

	/* issm: O_CLOEXEC, blocking; ENABLE_PKEY once agents exist is refused */
	fd2 = openat(AT_FDCWD, "/dev/infiniband/issm0", O_RDWR | O_CLOEXEC);
	c2 = accept_one(lfd);
	check(fd2 >= 0 && c2 >= 0 && got_hello(c2, MOCKIB_KIND_ISSM, 0, (uint32_t)getpid()),
	      "openat issm0 -> hello kind ISSM");
	check((fcntl(fd2, F_GETFD) & FD_CLOEXEC) && !(fcntl(fd2, F_GETFL) & O_NONBLOCK),
	      "O_CLOEXEC applied, blocking");
	check(ioctl(fd2, IOC_REGISTER_AGENT, &r) == 0 && r.id == 0,
	      "agent ids are per fd: issm0 starts at 0");
	check(got_ctl(c2, &ctl, MOCKIB_CTL_REGISTER) && ctl.agent_id == 0, "issm ctl");
	/* no ENABLE_PKEY here: the header is the legacy 56 bytes */
	unsigned char in[128] = { 0 };
	check(send(c2, in, 100, 0) == 100, "daemon sends 100 bytes on issm0");
	errno = 0;
	check(read(fd2, in, 50) == -1 && errno == EINVAL, "legacy header: read of 50 -> EINVAL");
	errno = 0;
	check(read(fd2, in, 60) == -1 && errno == ENOSPC, "legacy header: read of 60 -> ENOSPC");
	check(read(fd2, in, sizeof(in)) == 100, "then the whole 100 bytes");

	/* dup shares the session; the connection ends with the last close */
	dfd = dup(fd);
	check(dfd >= 0 && ioctl(dfd, IOC_REGISTER_AGENT, &r) == 0 && r.id == 3,
	      "dup'd fd shares the agent table (next id 3, got %u)", r.id);
	check(got_ctl(c, &ctl, MOCKIB_CTL_REGISTER) && ctl.agent_id == 3, "ctl via the dup");
	close(fd);
	check(ioctl(dfd, IOC_REGISTER_AGENT, &r) == 0 && r.id == 4,
	      "closing the original keeps the dup emulated");
	check(got_ctl(c, &ctl, MOCKIB_CTL_REGISTER), "ctl after close of the original");
	close(dfd);
	check(frame(c, b, sizeof(b)) == 0, "last close: daemon sees EOF");

	/* a reused fd number is a plain fd again */
	int pfd[2];
	check(pipe(pfd) == 0 && (pfd[0] == fd || pfd[1] == fd) &&
	      write(pfd[1], "xy", 2) == 2 && read(pfd[0], b, 8) == 2,
	      "a pipe on the reused fd numbers reads/writes natively");
	errno = 0;
	check(ioctl(pfd[0], IOC_ENABLE_PKEY) == -1 && errno == ENOTTY,
	      "ioctl on a plain fd is the kernel's");
	close(pfd[0]);
	close(pfd[1]);
	close(fd2);
	close(c);
	close(c2);
	close(lfd);
}

/* ---- umad: through the real libibumad ----------------------------------- */

static void mode_libibumad(void)
{
	int lfd = listener(), port, c, agent, len, rc;
	long mask[16 / sizeof(long)] = { 0 };
	struct mockib_ctl ctl;
	unsigned char in[600];
	void *umad;
	size_t hdr;

	check(umad_init() == 0, "umad_init");
	port = umad_open_port("mlx5_0", 1);
	check(port >= 0, "umad_open_port(mlx5_0, 1) -> %d", port);
	if (port < 0)
		exit(1);
	c = accept_one(lfd);
	check(c >= 0 && got_hello(c, MOCKIB_KIND_UMAD, 0, (uint32_t)getpid()),
	      "hello for umad0 (found through sysfs)");
	check(got_ctl(c, &ctl, MOCKIB_CTL_ENABLE_PKEY), "libibumad enabled P_Key indexes");
	hdr = (size_t)umad_size();
	check(hdr == 64, "umad_size() = 64");
	mask[0] = 1L << 1;
	agent = umad_register(port, 0x81, 1, 0, mask);
	check(agent == 0, "umad_register(0x81) -> agent 0");
	check(got_ctl(c, &ctl, MOCKIB_CTL_REGISTER) && ctl.agent_id == 0 &&
	      ctl.mgmt_class == 0x81 && ctl.qpn == 0 && ctl.method_mask[0] == 2,
	      "REGISTER ctl from libibumad: SMI class 0x81");
	agent = umad_register(port, 0x03, 2, 1, NULL);
	check(agent == 1, "umad_register(SA, rmpp 1) -> agent 1");
	check(got_ctl(c, &ctl, MOCKIB_CTL_REGISTER) && ctl.agent_id == 1 &&
	      ctl.qpn == 1 && ctl.rmpp_version == 1, "REGISTER ctl: GSI, rmpp 1");

	umad = calloc(1, hdr + 600);
	umad_set_addr(umad, 0x101, 0, 0, 0);
	((unsigned char *)umad_get_mad(umad))[1] = 0x81;
	check(umad_send(port, 0, umad, 256, 1000, 3) == 0, "umad_send 256-byte MAD");
	check(frame(c, in, sizeof(in)) == (ssize_t)(hdr + 256) && in[hdr + 1] == 0x81,
	      "daemon got header + 256 (class byte intact)");

	/* a 256-byte reply for agent 0 */
	memset(in, 0, sizeof(in));
	uint32_t full = (uint32_t)(hdr + 256), a0 = 0;
	memcpy(in, &a0, 4);
	memcpy(in + 16, &full, 4);
	in[hdr + 3] = 0x81;
	send(c, in, hdr + 256, 0);
	len = 256;
	rc = umad_recv(port, umad, &len, 1000);
	check(rc == 0 && len == 256 && umad_status(umad) == 0,
	      "umad_recv -> agent 0, 256 bytes (rc %d len %d)", rc, len);

	/* an RMPP-sized reply: the caller learns the size, then reads it */
	full = (uint32_t)(hdr + 400);
	uint32_t a1 = 1;
	memcpy(in, &a1, 4);
	memcpy(in + 16, &full, 4);
	send(c, in, hdr + 400, 0);
	len = 256;
	rc = umad_recv(port, umad, &len, 1000);
	check(rc == -ENOSPC && len == 400,
	      "umad_recv into 256 -> -ENOSPC with length 400 (rc %d len %d)", rc, len);
	len = 400;
	rc = umad_recv(port, umad, &len, 1000);
	check(rc == 1 && len == 400, "umad_recv again with 400 -> agent 1 (rc %d len %d)", rc, len);
	len = 256;
	rc = umad_recv(port, umad, &len, 50);
	check(rc == -ETIMEDOUT, "nothing queued: umad_recv times out (rc %d)", rc);

	check(umad_unregister(port, 1) == 0, "umad_unregister(1)");
	check(got_ctl(c, &ctl, MOCKIB_CTL_UNREGISTER) && ctl.agent_id == 1, "UNREGISTER ctl");
	check(umad_close_port(port) == 0, "umad_close_port");
	check(frame(c, in, sizeof(in)) == 0, "daemon sees EOF");
	free(umad);
	umad_done();
	close(c);
	close(lfd);
}

/* ---- NETLINK_RDMA ------------------------------------------------------- */

static void mode_netlink(void)
{
	int lfd = listener(), fd, fd2, c, c2, v;
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK }, got;
	socklen_t len;
	unsigned char in[256];
	char small[8];
	struct iovec iov = { .iov_base = small, .iov_len = sizeof(small) };
	struct msghdr m = { .msg_name = &got, .msg_namelen = sizeof(got),
			    .msg_iov = &iov, .msg_iovlen = 1 };
	struct nlmsghdr req = { .nlmsg_len = 16, .nlmsg_type = 0x1401,
				.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 7 };
	ssize_t n;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA_PROTO);
	check(fd >= 0, "socket(AF_NETLINK, SOCK_RAW, NETLINK_RDMA) -> %d", fd);
	if (fd < 0)
		exit(1);
	c = accept_one(lfd);
	check(c >= 0, "the daemon got a connection");
	len = sizeof(got);
	memset(&got, 0xaa, sizeof(got));
	check(getsockname(fd, (struct sockaddr *)&got, &len) == 0 && len == sizeof(got) &&
	      got.nl_family == AF_NETLINK && got.nl_pid == 0,
	      "getsockname before bind: AF_NETLINK, pid 0");
	v = 1;
	check(setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &v, sizeof(v)) == 0,
	      "setsockopt NETLINK_EXT_ACK -> 0");
	v = 32768;
	check(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)) == 0, "SO_RCVBUF -> 0");
	len = sizeof(v);
	check(getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &len) == 0 && v == NETLINK_RDMA_PROTO,
	      "SO_PROTOCOL = NETLINK_RDMA");
	len = sizeof(v);
	check(getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len) == 0 && v == AF_NETLINK,
	      "SO_DOMAIN = AF_NETLINK");
	check(bind(fd, (struct sockaddr *)&nl, sizeof(nl)) == 0, "bind(pid 0) -> 0");
	check(got_hello(c, MOCKIB_KIND_NETLINK, 0, (uint32_t)getpid()),
	      "hello: kind NETLINK, port id = our pid (kernel autobind)");
	len = sizeof(got);
	check(getsockname(fd, (struct sockaddr *)&got, &len) == 0 && len == sizeof(got) &&
	      got.nl_pid == (uint32_t)getpid(), "getsockname after bind: our pid");

	check(sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&nl, sizeof(nl)) == 16,
	      "sendto with a sockaddr_nl");
	n = frame(c, in, sizeof(in));
	check(n == 16 && memcmp(in, &req, 16) == 0, "daemon got the request unchanged");
	m.msg_iov[0] = (struct iovec){ .iov_base = &req, .iov_len = sizeof(req) };
	check(sendmsg(fd, &m, 0) == 16 && frame(c, in, sizeof(in)) == 16, "sendmsg with a name");

	memset(in, 0x5a, 40);
	check(send(c, in, 40, 0) == 40, "daemon replies 40 bytes");
	iov = (struct iovec){ .iov_base = small, .iov_len = sizeof(small) };
	m = (struct msghdr){ .msg_name = &got, .msg_namelen = sizeof(got),
			     .msg_iov = &iov, .msg_iovlen = 1 };
	memset(&got, 0xaa, sizeof(got));
	n = recvmsg(fd, &m, MSG_PEEK | MSG_TRUNC);
	check(n == 40 && (m.msg_flags & MSG_TRUNC), "recvmsg PEEK|TRUNC: full size 40, MSG_TRUNC");
	check(m.msg_namelen == sizeof(struct sockaddr_nl) && got.nl_family == AF_NETLINK &&
	      got.nl_pid == 0, "recvmsg name: AF_NETLINK, pid 0, namelen 12");
	memset(&got, 0xaa, sizeof(got));
	len = sizeof(got);
	n = recvfrom(fd, in, sizeof(in), 0, (struct sockaddr *)&got, &len);
	check(n == 40 && len == sizeof(got) && got.nl_family == AF_NETLINK && got.nl_pid == 0,
	      "recvfrom: 40 bytes from AF_NETLINK pid 0");

	fd2 = socket(AF_NETLINK, SOCK_DGRAM, NETLINK_RDMA_PROTO);
	c2 = accept_one(lfd);
	len = sizeof(v);
	check(fd2 >= 0 && getsockopt(fd2, SOL_SOCKET, SO_TYPE, &v, &len) == 0 && v == SOCK_DGRAM,
	      "second socket, SO_TYPE as asked");
	check(sendto(fd2, &req, sizeof(req), 0, NULL, 0) == 16, "send on an unbound socket autobinds");
	check(got_hello(c2, MOCKIB_KIND_NETLINK, 0, (uint32_t)-4096),
	      "second autobind id is -4096 (our pid is taken)");
	nl.nl_pid = (uint32_t)getpid();
	int fd3 = socket(AF_NETLINK, SOCK_RAW, NETLINK_RDMA_PROTO);
	errno = 0;
	check(fd3 >= 0 && accept_one(lfd) >= 0 &&
	      bind(fd3, (struct sockaddr *)&nl, sizeof(nl)) == -1 && errno == EADDRINUSE,
	      "bind to a port id in use -> EADDRINUSE");
	close(fd3);
	close(fd);
	check(frame(c, in, sizeof(in)) == 0, "close: daemon sees EOF");

	/* other netlink families stay the kernel's */
	int rt = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
	struct sockaddr_nl any = { .nl_family = AF_NETLINK };
	len = sizeof(got);
	check(rt >= 0 && bind(rt, (struct sockaddr *)&any, sizeof(any)) == 0 &&
	      getsockname(rt, (struct sockaddr *)&got, &len) == 0 && got.nl_pid != 0 &&
	      getsockopt(rt, SOL_SOCKET, SO_PROTOCOL, &v, &(socklen_t){ sizeof(v) }) == 0 &&
	      v == NETLINK_ROUTE, "NETLINK_ROUTE socket untouched");
	close(rt);
	close(fd2);
	close(c);
	close(c2);
	close(lfd);
}

/* ---- libnl-3, as libibverbs uses it ------------------------------------ */

static int seen;

static int count_cb(struct nl_msg *msg, void *arg)
{
	if (nlmsg_hdr(msg)->nlmsg_type == 0x1401)
		seen++;
	return NL_OK;
}

static void reply(int c, const struct nlmsghdr *req, uint16_t type, uint16_t flags,
		  uint32_t pid)
{
	struct nlmsghdr h = { .nlmsg_len = 20, .nlmsg_type = type, .nlmsg_flags = flags,
			      .nlmsg_seq = req->nlmsg_seq, .nlmsg_pid = pid };
	unsigned char b[20] = { 0 };

	memcpy(b, &h, sizeof(h));
	send(c, b, sizeof(b), 0);
}

static void mode_libnl(void)
{
	int lfd = listener(), c, rc;
	struct nl_sock *sk = nl_socket_alloc();
	unsigned char in[256];
	struct nlmsghdr req;
	uint32_t port;

	check(sk && nl_connect(sk, NETLINK_RDMA_PROTO) == 0, "nl_connect(NETLINK_RDMA)");
	c = accept_one(lfd);
	port = nl_socket_get_local_port(sk);
	check(c >= 0 && got_hello(c, MOCKIB_KIND_NETLINK, 0, port),
	      "hello carries libnl's local port %u", port);
	nl_socket_disable_auto_ack(sk);
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, count_cb, NULL);
	rc = nl_send_simple(sk, 0x1401, NLM_F_DUMP, NULL, 0);
	check(rc >= 16, "nl_send_simple GET dump (%d)", rc);
	check(frame(c, in, sizeof(in)) == 16, "daemon got the 16-byte dump request");
	memcpy(&req, in, sizeof(req));
	check(req.nlmsg_pid == port && req.nlmsg_type == 0x1401, "request names our port");
	reply(c, &req, 0x1401, NLM_F_MULTI, port);
	reply(c, &req, 0x1401, NLM_F_MULTI, port);
	reply(c, &req, NLMSG_DONE, NLM_F_MULTI, port);
	rc = nl_recvmsgs_default(sk);
	check(rc == 0 && seen == 2, "nl_recvmsgs: 2 entries then DONE (rc %d seen %d)", rc, seen);
	nl_socket_free(sk);
	close(c);
	close(lfd);
}

/* ---- the verbs API shim ------------------------------------------------ */

/* rdma-core's private driver.h */
enum gid_type_sysfs { GID_TYPE_SYSFS_IB_ROCE_V1, GID_TYPE_SYSFS_ROCE_V2 };
int ibv_query_gid_type(struct ibv_context *ctx, uint8_t port, unsigned int index,
		       enum gid_type_sysfs *type);

static void mode_verbs(void)
{
	/* What libibverbs' sysfs scan fills in for the hand tree's mlx5_1. */
	struct ibv_device dev = { .node_type = IBV_NODE_CA,
				  .transport_type = IBV_TRANSPORT_IB,
				  .name = "mlx5_1", .dev_name = "uverbs1",
				  .dev_path = "/sys/class/infiniband_verbs/uverbs1",
				  .ibdev_path = "/sys/class/infiniband/mlx5_1" };
	struct ibv_device gone = dev;
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct ibv_gid_entry ge;
	enum gid_type_sysfs gt = GID_TYPE_SYSFS_ROCE_V2;
	union ibv_gid gid;
	struct ibv_context *ctx;
	__be16 pkey;

	snprintf(gone.ibdev_path, sizeof(gone.ibdev_path), "/sys/class/infiniband/mlx5_9");
	errno = 0;
	check(ibv_open_device(&gone) == NULL && errno == ENODEV, "open of a device the tree lacks -> ENODEV");
	ctx = ibv_open_device(&dev);
	check(ctx && ctx->device == &dev, "ibv_open_device(mlx5_1)");
	if (!ctx)
		exit(1);
	check(ibv_query_device(ctx, &da) == 0 && strcmp(da.fw_ver, "28.39.2048") == 0 &&
	      da.node_guid == htobe64(0xa088c20300ab0002ull) &&
	      da.sys_image_guid == htobe64(0xa088c20300ab0002ull) && da.vendor_id == 0x02c9 &&
	      da.vendor_part_id == 4129 && da.hw_ver == 0 && da.phys_port_cnt == 1 &&
	      da.max_pkeys == 128 && da.max_qp > 0, "query_device: fw, GUIDs, vendor, part 4129, 1 port");
	memset(&pa, 0xee, sizeof(pa));
	check(ibv_query_port(ctx, 1, &pa) == 0 && pa.state == IBV_PORT_DOWN && pa.phys_state == 2 &&
	      pa.lid == 0 && pa.sm_lid == 1 && pa.lmc == 0 && pa.port_cap_flags == 0xa651e848 &&
	      pa.link_layer == IBV_LINK_LAYER_INFINIBAND && pa.active_width == 2 &&
	      pa.active_speed == 64 && pa.max_mtu == IBV_MTU_4096 && pa.active_mtu == IBV_MTU_4096 &&
	      pa.gid_tbl_len == 2 && pa.pkey_tbl_len == 2 && pa.flags == 0 && pa.port_cap_flags2 == 0,
	      "query_port 1: DOWN/Polling, LIDs, cap mask, 4X HDR (64), MTU 4096, table sizes, "
	      "fields past link_layer left as the inline wrapper cleared them");
	check(ibv_query_port(ctx, 2, &pa) == EINVAL, "query_port 2 -> EINVAL");
	check(ibv_query_gid(ctx, 1, 0, &gid) == 0 &&
	      gid.global.subnet_prefix == htobe64(0xfe80000000000000ull) &&
	      gid.global.interface_id == htobe64(0xa088c20300ab0003ull), "query_gid 0: fe80::port GUID");
	check(ibv_query_gid(ctx, 1, 5, &gid) == -1, "query_gid 5 (no such file) -> -1");
	check(ibv_query_gid_ex(ctx, 1, 0, &ge, 0) == 0 && ge.gid_index == 0 && ge.port_num == 1 &&
	      ge.gid_type == IBV_GID_TYPE_IB && ge.gid.global.interface_id == htobe64(0xa088c20300ab0003ull),
	      "query_gid_ex 0: type IB");
	check(ibv_query_gid_ex(ctx, 1, 1, &ge, 0) == ENODATA, "query_gid_ex 1 (all zero) -> ENODATA");
	check(ibv_query_gid_type(ctx, 1, 0, &gt) == 0 && gt == GID_TYPE_SYSFS_IB_ROCE_V1,
	      "query_gid_type 0: IB/RoCE v1");
	gt = GID_TYPE_SYSFS_ROCE_V2;
	check(ibv_query_gid_type(ctx, 1, 1, &gt) == 0 && gt == GID_TYPE_SYSFS_IB_ROCE_V1,
	      "query_gid_type 1 (no types file, as on IB) -> IB/RoCE v1");
	check(ibv_query_pkey(ctx, 1, 0, &pkey) == 0 && pkey == htobe16(0xffff), "query_pkey 0 = 0xffff");
	check(ibv_query_pkey(ctx, 1, 1, &pkey) == 0 && pkey == 0, "query_pkey 1 = 0");
	check(ibv_query_pkey(ctx, 1, 9, &pkey) == -1, "query_pkey 9 -> -1");
	check(ibv_close_device(ctx) == 0, "ibv_close_device");
}

/* ---- expected failures -------------------------------------------------- */

static int errno_named(const char *s)
{
	static const struct { const char *n; int e; } t[] = {
		{ "ENOENT", ENOENT }, { "ENXIO", ENXIO }, { "EACCES", EACCES },
		{ "EPROTONOSUPPORT", EPROTONOSUPPORT },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strcmp(t[i].n, s) == 0)
			return t[i].e;
	return -1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && strcmp(argv[1], "umad") == 0)
		mode_umad();
	else if (argc == 2 && strcmp(argv[1], "libibumad") == 0)
		mode_libibumad();
	else if (argc == 2 && strcmp(argv[1], "netlink") == 0)
		mode_netlink();
	else if (argc == 2 && strcmp(argv[1], "libnl") == 0)
		mode_libnl();
	else if (argc == 2 && strcmp(argv[1], "verbs") == 0)
		mode_verbs();
	else if (argc == 4 && strcmp(argv[1], "open-errno") == 0) {
		int fd = open(argv[2], O_RDWR), e = errno;
		check(fd == -1 && e == errno_named(argv[3]), "open %s -> %s (got %d, %s)",
		      argv[2], argv[3], fd, strerror(e));
	} else if (argc == 3 && strcmp(argv[1], "socket-errno") == 0) {
		int fd = socket(AF_NETLINK, SOCK_RAW, NETLINK_RDMA_PROTO), e = errno;
		check(fd == -1 && e == errno_named(argv[2]),
		      "socket(NETLINK_RDMA) -> %s (got %d, %s)", argv[2], fd, strerror(e));
	} else {
		fprintf(stderr, "usage: %s umad|libibumad|netlink|libnl|verbs|"
			"open-errno PATH ERRNO|socket-errno ERRNO\n", argv[0]);
		return 2;
	}
	return fails ? 1 : 0;
}
