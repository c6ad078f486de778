/* ib_client: a test client for mock-ib that talks to its socket the way
 * the IB shims do (mockib_proto.h), so the daemon is tested without them.
 *
 *   ib_client config --profile FILE --node NAME [--hcas N] [--leaf-ports N]
 *       [--spines N] [--peers LIST] [--listen ADDR] [--port P] [--socket PATH]
 *       [--mock-root R] [--down I,...]        -> mock-ib.json on stdout
 *   ib_client nodeinfo SOCK CA [LID | dr:P1,P2,...]   one NodeInfo SMP
 *   ib_client portinfo SOCK CA LID PORT        one LID-routed PortInfo
 *   ib_client discover SOCK CA [-v]           a directed-route walk of the
 *       whole fabric (what ibnetdiscover does): "cas N switches M links L"
 *   ib_client serve SOCK CA HOSTNAME [COUNT]  answer vendor 0x32 pings
 *       (like `ibping -S`) until COUNT answered or killed
 *   ib_client ping SOCK CA LID [COUNT]        vendor 0x32 pings; prints
 *       "pong LID HOST" per answer (exit 1 on a timeout)
 *   ib_client timeout SOCK CA LID TMO RETRIES checks the ETIMEDOUT return
 *   ib_client abuse SOCK CA                   garbage, oversize frames,
 *       malformed MADs, mid-request disconnects, a client that never reads
 *   ib_client hangup SOCK CA                  an empty frame, an oversize one,
 *       then hang up at once (the daemon must still read the oversize one)
 *   ib_client netlink SOCK                    NLDEV GET dump + GET_CHARDEV
 *   ib_client rtt SOCK CA COUNT [LID]         NodeInfo round trips (hop 0, or
 *       LID-routed): "rtt median_us N mean_us M"
 *   ib_client echo-rtt COUNT                  the floor: a SEQPACKET echo
 *       round trip to another process
 * Exit 0 on success, 1 on a failed check (message on stderr), 2 on usage. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include "shims/ib/mockib_proto.h"
#include "profile/compile.h"
#include "workers/ib/mockib/mockib_umad.h"

#define HDR MOCKIB_UMAD_HDR
#define MAD 256
#define VENDOR_PING_CLASS 0x32
#define MIB_IN_MAX_TEST (70 * 1024)	/* over the daemon's 64 KiB limit */
#define IBPING_OUI 0x001405

static const char *sock_path;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("ib_client: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static unsigned get16(const uint8_t *p) { return (unsigned)p[0] << 8 | p[1]; }
static uint32_t get32(const uint8_t *p) { return (uint32_t)get16(p) << 16 | get16(p + 2); }
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) << 32 | get32(p + 4); }
static void put16(uint8_t *p, unsigned v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16); put16(p + 2, v & 0xffff); }

/* ------------------------------------------------------------------ */
/* The shim side of the wire.                                          */

static int dial(uint32_t kind, uint32_t index)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct mockib_hello h = { .kind = kind, .index = index, .pid = (uint32_t)getpid() };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect %s: %s", sock_path, strerror(errno));
	memcpy(h.magic, MOCKIB_HELLO_MAGIC, 8);
	if (send(fd, &h, sizeof(h), MSG_NOSIGNAL) != (ssize_t)sizeof(h))
		die("hello: %s", strerror(errno));
	return fd;
}

static void ctl(int fd, uint32_t op, uint32_t agent, uint8_t qpn, uint8_t cls, uint8_t ver,
		uint32_t oui, const uint32_t mask[4])
{
	struct mockib_ctl c = { .op = op, .agent_id = agent, .qpn = qpn, .mgmt_class = cls,
				.mgmt_class_version = ver };

	memcpy(c.magic, MOCKIB_CTL_MAGIC, 8);
	c.oui[0] = (uint8_t)(oui >> 16);
	c.oui[1] = (uint8_t)(oui >> 8);
	c.oui[2] = (uint8_t)oui;
	if (mask)
		memcpy(c.method_mask, mask, sizeof(c.method_mask));
	if (send(fd, &c, sizeof(c), MSG_NOSIGNAL) != (ssize_t)sizeof(c))
		die("control frame: %s", strerror(errno));
}

/* A umad port as libibumad opens it: ENABLE_PKEY, then agent 0 = SMI
 * (DR class, send-only), agent 1 = PMA, agent 2 = vendor ping client. */
enum { AG_SMI = 0, AG_PMA = 1, AG_PING = 2, AG_SERVER = 3 };

static int open_port(unsigned ca)
{
	int fd = dial(MOCKIB_KIND_UMAD, ca);

	ctl(fd, MOCKIB_CTL_ENABLE_PKEY, 0, 0, 0, 0, 0, NULL);
	ctl(fd, MOCKIB_CTL_REGISTER, AG_SMI, 0, 0x81, 1, 0, NULL);
	ctl(fd, MOCKIB_CTL_REGISTER, AG_PMA, 1, 0x04, 1, 0, NULL);
	ctl(fd, MOCKIB_CTL_REGISTER, AG_PING, 1, VENDOR_PING_CLASS, 1, IBPING_OUI, NULL);
	return fd;
}

static uint64_t tid_seq = 0x1000;

static void mad_init(uint8_t *mad, uint8_t cls, uint8_t method, unsigned attr, uint32_t mod)
{
	memset(mad, 0, MAD);
	mad[0] = 1;
	mad[1] = cls;
	mad[2] = 1;
	mad[3] = method;
	put32(mad + 8, (uint32_t)(0xabcd0000u | (tid_seq >> 32)));
	put32(mad + 12, (uint32_t)tid_seq++);
	put16(mad + 16, attr);
	put32(mad + 20, mod);
}

/* Directed route: hop count and InitPath (path[0] unused). */
static void mad_dr(uint8_t *mad, const uint8_t *path, int hops)
{
	mad[7] = (uint8_t)hops;
	put16(mad + 32, 0xffff);
	put16(mad + 34, 0xffff);
	for (int i = 1; i <= hops; i++)
		mad[128 + i] = path[i];
}

static void send_mad(int fd, uint32_t agent, uint32_t qpn, uint16_t dlid, uint32_t tmo,
		     uint32_t retries, const uint8_t *mad)
{
	uint8_t f[HDR + MAD];
	struct mib_uhdr h = { .agent_id = agent, .timeout_ms = tmo, .retries = retries,
			      .qpn = qpn, .qkey = qpn ? 0x80010000u : 0, .lid = dlid };

	mib_uhdr_build(f, HDR, &h);
	memcpy(f + HDR, mad, MAD);
	if (send(fd, f, sizeof(f), MSG_NOSIGNAL) != (ssize_t)sizeof(f))
		die("send MAD: %s", strerror(errno));
}

/* One receive frame; returns its length, 0 on timeout. */
static size_t recv_frame(int fd, uint8_t *buf, size_t cap, int tmo_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, tmo_ms) <= 0)
		return 0;
	n = recv(fd, buf, cap, 0);
	if (n <= 0)
		die("recv: %s", n == 0 ? "daemon closed the session" : strerror(errno));
	return (size_t)n;
}

/* Send a request and wait for the receive with the same TID. */
static size_t rpc(int fd, uint32_t agent, uint32_t qpn, uint16_t dlid, const uint8_t *req,
		  uint8_t *resp, size_t cap, struct mib_uhdr *h)
{
	uint64_t end = now_us() + 5000000u;

	send_mad(fd, agent, qpn, dlid, 1000, 0, req);
	while (now_us() < end) {
		size_t n = recv_frame(fd, resp, cap, 100);

		if (n < HDR + 24)
			continue;
		mib_uhdr_parse(resp, n, HDR, h);
		if (get64(resp + HDR + 8) == get64(req + 8))
			return n;
	}
	die("no answer in 5 s (daemon wedged?)");
}

/* ------------------------------------------------------------------ */
/* SMP helpers.                                                        */

struct node_info {
	unsigned type, nports, local_port;
	uint64_t node_guid, port_guid;
};

/* NodeInfo over a DR path (hops >= 0) or to a LID (hops < 0).  Returns
 * false when the SMP timed out (no node there). */
static bool smp_nodeinfo(int fd, const uint8_t *path, int hops, uint16_t lid,
			 struct node_info *ni)
{
	uint8_t req[MAD], resp[HDR + 4096];
	struct mib_uhdr h;
	const uint8_t *d;

	mad_init(req, hops >= 0 ? 0x81 : 0x01, 0x01, 0x0011, 0);
	if (hops >= 0)
		mad_dr(req, path, hops);
	rpc(fd, AG_SMI, 0, hops >= 0 ? 0xffff : lid, req, resp, sizeof(resp), &h);
	if (h.status)
		return false;
	d = resp + HDR + 64;
	ni->type = d[2];
	ni->nports = d[3];
	ni->node_guid = get64(d + 12);
	ni->port_guid = get64(d + 20);
	ni->local_port = d[36];
	return true;
}

/* PortInfo(port) over a DR path: phys state, or -1 on a timeout. */
static int smp_port_phys(int fd, const uint8_t *path, int hops, unsigned port)
{
	uint8_t req[MAD], resp[HDR + 4096];
	struct mib_uhdr h;

	mad_init(req, 0x81, 0x01, 0x0015, port);
	mad_dr(req, path, hops);
	rpc(fd, AG_SMI, 0, 0xffff, req, resp, sizeof(resp), &h);
	if (h.status)
		return -1;
	return resp[HDR + 64 + 33] >> 4;
}

/* ------------------------------------------------------------------ */
/* Commands.                                                           */

static int cmd_config(int argc, char **argv)
{
	const char *profile = NULL, *down = NULL;
	struct compile_opts o = { 0 };
	int hcas = 0, leaf_ports = 0, spines = -1;
	static struct state s;
	char err[512], *yaml, *json, *p;
	size_t len, jlen;
	FILE *f;

	for (int i = 0; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];

		if (!strcmp(k, "--profile")) profile = v;
		else if (!strcmp(k, "--node")) o.node_name = v;
		else if (!strcmp(k, "--hcas")) hcas = atoi(v);
		else if (!strcmp(k, "--leaf-ports")) leaf_ports = atoi(v);
		else if (!strcmp(k, "--spines")) spines = atoi(v);
		else if (!strcmp(k, "--peers")) o.ib_peers = v;
		else if (!strcmp(k, "--listen")) o.ib_listen = v;
		else if (!strcmp(k, "--port")) o.ib_port = atoi(v);
		else if (!strcmp(k, "--socket")) o.ib_socket = v;
		else if (!strcmp(k, "--mock-root")) o.mock_root = v;
		else if (!strcmp(k, "--down")) down = v;
		else return 2;
	}
	if (!profile || !o.node_name)
		return 2;
	if (!(f = fopen(profile, "re")))
		die("%s: %s", profile, strerror(errno));
	yaml = calloc(1, 1 << 20);
	len = fread(yaml, 1, (1 << 20) - 4096, f);
	fclose(f);
	/* The shape goes right under `infiniband:` (the shipped profiles set
	 * neither key). */
	if ((hcas || leaf_ports || spines >= 0) && (p = strstr(yaml, "\ninfiniband:\n"))) {
		char ins[256] = "", *tail;

		p += strlen("\ninfiniband:\n");
		if (hcas)
			snprintf(ins + strlen(ins), sizeof(ins) - strlen(ins), "  hca_count: %d\n",
				 hcas);
		if (leaf_ports || spines >= 0)
			strcat(ins, "  fabric:\n");
		if (leaf_ports)
			snprintf(ins + strlen(ins), sizeof(ins) - strlen(ins),
				 "    leaf_ports: %d\n", leaf_ports);
		if (spines >= 0)
			snprintf(ins + strlen(ins), sizeof(ins) - strlen(ins), "    spines: %d\n",
				 spines);
		tail = strdup(p);
		strcpy(p, ins);
		strcat(p, tail);
		free(tail);
		len = strlen(yaml);
	}
	state_init(&s);
	if (compile_profile(profile, yaml, len, NULL, NULL, 0, &o, &s, err, sizeof(err)) < 0)
		die("%s", err);
	free(yaml);
	/* --down I,J: those HCAs' ports Down/Disabled, as a profile edit does. */
	for (p = (char *)down; p && *p;) {
		int i = (int)strtol(p, &p, 10);

		if (i >= 0 && i < s.ib.num_hcas) {
			s.ib.hcas[i].port_state = 1;
			s.ib.hcas[i].phys_state = 3;
		}
		if (*p == ',')
			p++;
		else
			break;
	}
	if (state_ib_encode(o.node_name, &s.ib, &json, &jlen) < 0)
		die("encode failed");
	fwrite(json, 1, jlen, stdout);
	putchar('\n');
	free(json);
	state_free(&s);
	return 0;
}

static int cmd_nodeinfo(int argc, char **argv)
{
	uint8_t path[64] = { 0 };
	int hops = -1, fd;
	uint16_t lid = 0xffff;
	struct node_info ni;

	if (argc < 1)
		return 2;
	fd = open_port((unsigned)atoi(argv[0]));
	if (argc > 1 && !strncmp(argv[1], "dr:", 3)) {
		char *p = argv[1] + 3;

		hops = 0;
		while (*p && hops < 63) {
			path[++hops] = (uint8_t)strtol(p, &p, 10);
			if (*p == ',')
				p++;
		}
	} else if (argc > 1) {
		lid = (uint16_t)strtol(argv[1], NULL, 0);
	} else {
		hops = 0;
	}
	if (!smp_nodeinfo(fd, path, hops, lid, &ni))
		die("NodeInfo timed out");
	printf("type %u ports %u node_guid 0x%016llx port_guid 0x%016llx local_port %u\n",
	       ni.type, ni.nports, (unsigned long long)ni.node_guid,
	       (unsigned long long)ni.port_guid, ni.local_port);
	close(fd);
	return 0;
}

static int cmd_portinfo(int argc, char **argv)
{
	uint8_t req[MAD], resp[HDR + 4096];
	struct mib_uhdr h;
	int fd;

	if (argc < 3)
		return 2;
	fd = open_port((unsigned)atoi(argv[0]));
	mad_init(req, 0x01, 0x01, 0x0015, (uint32_t)atoi(argv[2]));
	rpc(fd, AG_SMI, 0, (uint16_t)strtol(argv[1], NULL, 0), req, resp, sizeof(resp), &h);
	if (h.status)
		die("PortInfo: status %u", h.status);
	printf("lid 0x%x sm_lid 0x%x state %u phys %u\n", get16(resp + HDR + 64 + 16),
	       get16(resp + HDR + 64 + 18), resp[HDR + 64 + 32] & 0xf, resp[HDR + 64 + 33] >> 4);
	close(fd);
	return 0;
}

/* ---- discover: BFS over switches by directed route ---- */

#define MAXN 8192
struct dnode {
	uint64_t guid;
	unsigned type, nports;
	uint8_t path[64];
	int hops;
};

static int cmd_discover(int argc, char **argv)
{
	static struct dnode nodes[MAXN];
	int n = 0, cas = 0, sws = 0, links = 0, fd;
	bool verbose = argc > 1 && !strcmp(argv[1], "-v");
	struct node_info ni;

	if (argc < 1)
		return 2;
	fd = open_port((unsigned)atoi(argv[0]));
	if (!smp_nodeinfo(fd, nodes[0].path, 0, 0, &ni))
		die("NodeInfo of our own CA timed out");
	nodes[n++] = (struct dnode){ .guid = ni.node_guid, .type = ni.type, .nports = ni.nports };
	/* The CA's port 1, then every LinkUp port of every switch found. */
	for (int q = 0; q < n; q++) {
		struct dnode *cur = &nodes[q];
		unsigned first = 1, last = cur->type == 2 ? cur->nports : 1;

		if (cur->type != 2 && q != 0)
			continue;	/* like libibnetdisc: never walk through a CA */
		if (cur->hops >= 62)
			continue;
		for (unsigned p = first; p <= last; p++) {
			uint8_t path[64];
			int known = -1;

			if (smp_port_phys(fd, cur->path, cur->hops, p) != 5)
				continue;
			memcpy(path, cur->path, sizeof(path));
			path[cur->hops + 1] = (uint8_t)p;
			if (!smp_nodeinfo(fd, path, cur->hops + 1, 0, &ni))
				continue;
			for (int k = 0; k < n; k++)
				if (nodes[k].guid == ni.node_guid)
					known = k;
			links++;
			if (known >= 0 || n >= MAXN)
				continue;
			nodes[n] = (struct dnode){ .guid = ni.node_guid, .type = ni.type,
						   .nports = ni.nports, .hops = cur->hops + 1 };
			memcpy(nodes[n].path, path, sizeof(path));
			n++;
		}
	}
	for (int k = 0; k < n; k++) {
		if (nodes[k].type == 2)
			sws++;
		else
			cas++;
		if (verbose)
			printf("%s 0x%016llx\n", nodes[k].type == 2 ? "switch" : "ca",
			       (unsigned long long)nodes[k].guid);
	}
	/* Every link is seen from both ends except the CA-to-leaf ones seen
	 * only from the leaf (and once from our own CA). */
	printf("cas %d switches %d links %d\n", cas, sws, links);
	close(fd);
	return 0;
}

static int cmd_serve(int argc, char **argv)
{
	uint32_t mask[4] = { 1u << 0x01 };	/* Get */
	uint8_t buf[HDR + 4096];
	long count, served = 0;
	int fd;

	if (argc < 2)
		return 2;
	count = argc > 2 ? atol(argv[2]) : 0;
	fd = dial(MOCKIB_KIND_UMAD, (unsigned)atoi(argv[0]));
	ctl(fd, MOCKIB_CTL_ENABLE_PKEY, 0, 0, 0, 0, 0, NULL);
	ctl(fd, MOCKIB_CTL_REGISTER, AG_SERVER, 1, VENDOR_PING_CLASS, 1, IBPING_OUI, mask);
	printf("serving\n");
	fflush(stdout);
	while (!count || served < count) {
		struct mib_uhdr h;
		size_t n = recv_frame(fd, buf, sizeof(buf), 1000);

		if (n < HDR + 24)
			continue;
		mib_uhdr_parse(buf, n, HDR, &h);
		if (h.agent_id != AG_SERVER || buf[HDR + 3] != 0x01)
			continue;
		/* The answer: GetResp, the host name at vendor data offset 40,
		 * back to the requester's LID and QP, as ibping -S does. */
		buf[HDR + 3] = 0x81;
		memset(buf + HDR + 40, 0, MAD - 40);
		snprintf((char *)buf + HDR + 40, MAD - 40, "%s", argv[1]);
		send_mad(fd, AG_SERVER, h.qpn, h.lid, 0, 0, buf + HDR);
		served++;
	}
	close(fd);
	return 0;
}

static int cmd_ping(int argc, char **argv)
{
	uint8_t req[MAD], resp[HDR + 4096];
	long count;
	uint16_t lid;
	int fd;

	if (argc < 2)
		return 2;
	lid = (uint16_t)strtol(argv[1], NULL, 0);
	count = argc > 2 ? atol(argv[2]) : 1;
	fd = open_port((unsigned)atoi(argv[0]));
	for (long i = 0; i < count; i++) {
		struct mib_uhdr h;

		mad_init(req, VENDOR_PING_CLASS, 0x01, 0, 0);
		req[37] = (uint8_t)(IBPING_OUI >> 16);
		req[38] = (uint8_t)(IBPING_OUI >> 8);
		req[39] = (uint8_t)IBPING_OUI;
		rpc(fd, AG_PING, 1, lid, req, resp, sizeof(resp), &h);
		if (h.status)
			die("ping %ld to lid 0x%x: status %u", i, lid, h.status);
		if (get16(resp + HDR + 4))
			die("ping %ld to lid 0x%x: MAD status 0x%x", i, lid, get16(resp + HDR + 4));
		printf("pong lid 0x%x from %.64s\n", h.lid, (char *)resp + HDR + 40);
	}
	close(fd);
	return 0;
}

static int cmd_timeout(int argc, char **argv)
{
	uint8_t req[MAD], resp[HDR + 4096];
	uint32_t tmo, retries;
	uint64_t t0, el;
	struct mib_uhdr h;
	size_t n;
	int fd;

	if (argc < 4)
		return 2;
	tmo = (uint32_t)atoi(argv[2]);
	retries = (uint32_t)atoi(argv[3]);
	fd = open_port((unsigned)atoi(argv[0]));
	mad_init(req, 0x04, 0x01, 0x0012, 0);	/* PMA PortCounters */
	t0 = now_us();
	send_mad(fd, AG_PMA, 1, (uint16_t)strtol(argv[1], NULL, 0), tmo, retries, req);
	n = recv_frame(fd, resp, sizeof(resp), (int)(tmo * (retries + 1) + 3000));
	el = (now_us() - t0) / 1000;
	if (n != HDR + MAD)
		die("timeout: got %zu bytes, want the %d-byte original back", n, HDR + MAD);
	mib_uhdr_parse(resp, n, HDR, &h);
	if (h.status != ETIMEDOUT || h.agent_id != AG_PMA || memcmp(resp + HDR, req, MAD) ||
	    h.length != HDR + MAD)
		die("timeout: status %u agent %u length %u, MAD %s", h.status, h.agent_id,
		    h.length, memcmp(resp + HDR, req, MAD) ? "changed" : "intact");
	if (el + 5 < (uint64_t)tmo * (retries + 1) || el > (uint64_t)tmo * (retries + 1) + 1500)
		die("timeout after %llu ms, want about %u", (unsigned long long)el,
		    tmo * (retries + 1));
	printf("timeout status %u after %llu ms\n", h.status, (unsigned long long)el);
	close(fd);
	return 0;
}

static bool still_answers(unsigned ca)
{
	int fd = open_port(ca);
	struct node_info ni;
	uint8_t path[64] = { 0 };
	bool ok = smp_nodeinfo(fd, path, 0, 0, &ni) && ni.type == 1;

	close(fd);
	return ok;
}

/* Frames queued behind an empty one by a peer that has already gone:
 * the test stops the daemon around this so all of it is queued first. */
static int cmd_hangup(int argc, char **argv)
{
	static uint8_t big[MIB_IN_MAX_TEST];
	int fd;

	if (argc < 1)
		return 2;
	fd = open_port((unsigned)atoi(argv[0]));
	if (send(fd, big, 0, MSG_NOSIGNAL) != 0 ||
	    send(fd, big, sizeof(big), MSG_NOSIGNAL) != (ssize_t)sizeof(big))
		die("send: %s", strerror(errno));
	close(fd);
	printf("hung up\n");
	return 0;
}

static int cmd_abuse(int argc, char **argv)
{
	unsigned ca;
	uint8_t big[MIB_IN_MAX_TEST], req[MAD];
	int fd;

	if (argc < 1)
		return 2;
	ca = (unsigned)atoi(argv[0]);
	srand(7);
	/* 1. Not a hello; an unknown kind; an HCA that does not exist. */
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			die("connect: %s", strerror(errno));
		send(fd, "garbage!", 8, MSG_NOSIGNAL);
		close(fd);
	}
	close(dial(77, 0));
	close(dial(MOCKIB_KIND_UMAD, 999));
	if (!still_answers(ca))
		die("no answer after bad hellos");
	/* 2. Garbage of every size after a good hello, oversize frames. */
	fd = open_port(ca);
	for (int i = 0; i < 2000; i++) {
		size_t n = (size_t)rand() % 400;

		for (size_t k = 0; k < n; k++)
			big[k] = (uint8_t)rand();
		if (i % 3 == 0 && n > 8)
			memcpy(big, MOCKIB_CTL_MAGIC, 8);
		send(fd, big, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	memset(big, 0xa5, sizeof(big));
	send(fd, big, sizeof(big), MSG_NOSIGNAL);
	/* 3. Malformed MADs: bad base version, hop count 255, short. */
	mad_init(req, 0x81, 0x01, 0x0011, 0);
	req[0] = 7;
	send_mad(fd, AG_SMI, 0, 0xffff, 10, 0, req);
	mad_init(req, 0x81, 0x01, 0x0011, 0);
	req[7] = 255;
	send_mad(fd, AG_SMI, 0, 0xffff, 10, 0, req);
	/* An unregistered agent, a bogus control op. */
	mad_init(req, 0x01, 0x01, 0x0011, 0);
	send_mad(fd, 31, 0, 1, 10, 0, req);
	ctl(fd, 99, 12345, 0, 0, 0, 0, NULL);
	ctl(fd, MOCKIB_CTL_REGISTER, 4000000, 0, 1, 1, 0, NULL);
	close(fd);
	if (!still_answers(ca))
		die("no answer after garbage");
	/* 4. Disconnect mid-request: requests with timeouts, then gone. */
	for (int i = 0; i < 50; i++) {
		fd = open_port(ca);
		mad_init(req, 0x04, 0x01, 0x0012, 0);
		send_mad(fd, AG_PMA, 1, 0xbfff, 200, 1, req);	/* nobody there */
		mad_init(req, 0x81, 0x01, 0x0011, 0);
		send_mad(fd, AG_SMI, 0, 0xffff, 1000, 3, req);
		close(fd);
	}
	/* 5. A client that never reads: the daemon drops, never blocks. */
	fd = open_port(ca);
	for (int i = 0; i < 20000; i++) {
		mad_init(req, 0x81, 0x01, 0x0011, 0);
		send_mad(fd, AG_SMI, 0, 0xffff, 0, 0, req);
		if (i % 2000 == 0 && !still_answers(ca))
			die("no answer while a client does not read");
	}
	/* 6. Netlink garbage. */
	{
		int nfd = dial(MOCKIB_KIND_NETLINK, 0);

		for (int i = 0; i < 500; i++) {
			size_t n = (size_t)rand() % 200;

			for (size_t k = 0; k < n; k++)
				big[k] = (uint8_t)rand();
			if (n >= 16 && i % 2) {	/* a plausible header, lying length */
				struct nlmsghdr h = { .nlmsg_len = (uint32_t)rand() % 300,
						      .nlmsg_type = (uint16_t)(0x1400 | (rand() % 40)),
						      .nlmsg_flags = (uint16_t)rand() };
				memcpy(big, &h, sizeof(h));
			}
			send(nfd, big, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		}
		close(nfd);
	}
	if (!still_answers(ca))
		die("no answer after a client that does not read");
	close(fd);
	usleep(100000);
	if (!still_answers(ca))
		die("no answer at the end");
	printf("abuse survived\n");
	return 0;
}

/* ---- netlink ---- */

static size_t nl_put_attr(uint8_t *p, uint16_t type, const void *data, uint16_t len)
{
	struct nlattr a = { .nla_len = (uint16_t)(NLA_HDRLEN + len), .nla_type = type };

	memcpy(p, &a, sizeof(a));
	memcpy(p + NLA_HDRLEN, data, len);
	return NLA_ALIGN(NLA_HDRLEN + len);
}

static const struct nlattr *nl_attr(const uint8_t *msg, size_t len, uint16_t type)
{
	size_t off = NLMSG_HDRLEN;

	while (off + NLA_HDRLEN <= len) {
		const struct nlattr *a = (const struct nlattr *)(msg + off);

		if (a->nla_len < NLA_HDRLEN || off + a->nla_len > len)
			break;
		if ((a->nla_type & NLA_TYPE_MASK) == type)
			return a;
		off += NLA_ALIGN(a->nla_len);
	}
	return NULL;
}

static int cmd_netlink(int argc, char **argv)
{
	static uint8_t buf[65536] __attribute__((aligned(8)));
	uint32_t idx[256];
	int n = 0, fd = dial(MOCKIB_KIND_NETLINK, 0);
	struct nlmsghdr h = { .nlmsg_len = NLMSG_HDRLEN,
			      .nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET),
			      .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 7 };

	send(fd, &h, sizeof(h), MSG_NOSIGNAL);
	for (;;) {
		size_t len = recv_frame(fd, buf, sizeof(buf), 2000);
		const struct nlmsghdr *r = (const struct nlmsghdr *)buf;
		const struct nlattr *a, *g;

		if (!len)
			die("netlink dump: no NLMSG_DONE");
		if (r->nlmsg_seq != 7 || r->nlmsg_pid != (uint32_t)getpid())
			die("netlink: seq %u pid %u", r->nlmsg_seq, r->nlmsg_pid);
		if (r->nlmsg_type == NLMSG_DONE)
			break;
		a = nl_attr(buf, len, RDMA_NLDEV_ATTR_DEV_NAME);
		g = nl_attr(buf, len, RDMA_NLDEV_ATTR_NODE_GUID);
		if (!a || !g || !(r->nlmsg_flags & NLM_F_MULTI) || n >= 256)
			die("netlink: dump part without name/guid/NLM_F_MULTI");
		memcpy(&idx[n], (const uint8_t *)nl_attr(buf, len, RDMA_NLDEV_ATTR_DEV_INDEX) +
				 NLA_HDRLEN, 4);
		{
			uint64_t guid;

			memcpy(&guid, (const uint8_t *)g + NLA_HDRLEN, 8);
			printf("dev %u %s node_guid 0x%016llx\n", idx[n],
			       (const char *)a + NLA_HDRLEN, (unsigned long long)guid);
		}
		n++;
	}
	for (int i = 0; i < n; i++) {
		uint8_t req[256] __attribute__((aligned(8)));
		size_t off = NLMSG_HDRLEN, len;
		struct nlmsghdr q = { .nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV,
								     RDMA_NLDEV_CMD_GET_CHARDEV),
				      .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 100 + (uint32_t)i };
		const struct nlattr *a;
		uint64_t dev;

		off += nl_put_attr(req + off, RDMA_NLDEV_ATTR_DEV_INDEX, &idx[i], 4);
		off += nl_put_attr(req + off, RDMA_NLDEV_ATTR_CHARDEV_TYPE, "uverbs", 7);
		q.nlmsg_len = (uint32_t)off;
		memcpy(req, &q, sizeof(q));
		send(fd, req, off, MSG_NOSIGNAL);
		len = recv_frame(fd, buf, sizeof(buf), 2000);
		if (!len || !(a = nl_attr(buf, len, RDMA_NLDEV_ATTR_CHARDEV)))
			die("GET_CHARDEV %u: no CHARDEV", idx[i]);
		memcpy(&dev, (const uint8_t *)a + NLA_HDRLEN, 8);
		a = nl_attr(buf, len, RDMA_NLDEV_ATTR_CHARDEV_NAME);
		printf("chardev %u %s %llu:%llu\n", idx[i], a ? (const char *)a + NLA_HDRLEN : "?",
		       (unsigned long long)((dev >> 8) & 0xfff),
		       (unsigned long long)((dev & 0xff) | ((dev >> 12) & 0xfff00)));
	}
	close(fd);
	return 0;
}

/* ---- latency ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, uint64_t *t, long n)
{
	uint64_t sum = 0;

	for (long i = 0; i < n; i++)
		sum += t[i];
	qsort(t, (size_t)n, sizeof(*t), cmp_u64);
	printf("%s median_us %.1f mean_us %.1f\n", what, (double)t[n / 2], (double)sum / (double)n);
}

static int cmd_rtt(int argc, char **argv)
{
	uint8_t path[64] = { 0 };
	struct node_info ni;
	long n;
	uint64_t *t;
	int fd;

	int hops = 0;
	uint16_t lid = 0;

	if (argc < 2 || (n = atol(argv[1])) <= 0)
		return 2;
	if (argc > 2) {		/* LID-routed (to a remote CA: over the relay) */
		hops = -1;
		lid = (uint16_t)strtol(argv[2], NULL, 0);
	}
	fd = open_port((unsigned)atoi(argv[0]));
	t = calloc((size_t)n, sizeof(*t));
	for (long i = 0; i < n; i++) {
		uint64_t t0 = now_us();

		if (!smp_nodeinfo(fd, path, hops, lid, &ni))
			die("NodeInfo timed out");
		t[i] = now_us() - t0;
	}
	report("rtt", t, n);
	free(t);
	close(fd);
	return 0;
}

static int cmd_echo_rtt(int argc, char **argv)
{
	uint8_t buf[HDR + MAD] = { 0 };
	int sv[2];
	long n;
	uint64_t *t;
	pid_t pid;

	if (argc < 1 || (n = atol(argv[0])) <= 0)
		return 2;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) < 0)
		die("socketpair: %s", strerror(errno));
	if ((pid = fork()) == 0) {
		ssize_t k;

		close(sv[0]);
		while ((k = recv(sv[1], buf, sizeof(buf), 0)) > 0)
			send(sv[1], buf, (size_t)k, MSG_NOSIGNAL);
		_exit(0);
	}
	close(sv[1]);
	t = calloc((size_t)n, sizeof(*t));
	for (long i = 0; i < n; i++) {
		uint64_t t0 = now_us();
		struct pollfd p = { .fd = sv[0], .events = POLLIN };

		send(sv[0], buf, sizeof(buf), MSG_NOSIGNAL);
		poll(&p, 1, 1000);
		if (recv(sv[0], buf, sizeof(buf), 0) != (ssize_t)sizeof(buf))
			die("echo: short");
		t[i] = now_us() - t0;
	}
	close(sv[0]);
	waitpid(pid, NULL, 0);
	report("echo", t, n);
	free(t);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
		bool sock;
	} cmds[] = {
		{ "config", cmd_config, false }, { "nodeinfo", cmd_nodeinfo, true },
		{ "portinfo", cmd_portinfo, true }, { "discover", cmd_discover, true },
		{ "serve", cmd_serve, true }, { "ping", cmd_ping, true },
		{ "timeout", cmd_timeout, true }, { "abuse", cmd_abuse, true },
		{ "hangup", cmd_hangup, true },
		{ "netlink", cmd_netlink, true }, { "rtt", cmd_rtt, true },
		{ "echo-rtt", cmd_echo_rtt, false },
	};

	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; argc > 1 && i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		int r;

		if (strcmp(argv[1], cmds[i].name))
			continue;
		if (cmds[i].sock) {
			if (argc < 3)
				break;
			sock_path = argv[2];
			r = cmds[i].fn(argc - 3, argv + 3);
		} else {
			r = cmds[i].fn(argc - 2, argv + 2);
		}
		if (r == 2)
			break;
		return r;
	}
	fputs("usage: see the comment at the top of tests/ib_client.c\n", stderr);
	return 2;
}
