/* mokka-nri: connect to containerd's NRI socket, register, and serve the
 * plugin side of the protocol (see nri.h).  A lost connection (containerd
 * restarts once per node pod) is redialled every second. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ipc/log.h"
#include "nri/nri.h"

#define SVC_RUNTIME "nri.pkg.api.v1alpha1.Runtime"
#define EV_CREATE_CONTAINER 4

static struct opts {
	char socket[256], name[64], idx[8], lock[512], port[8];
	struct nri_config cf;
	int request_timeout_ms;
} o = {
	.socket = "/var/run/nri/nri.sock", .name = "mokka", .idx = "10",
	.lock = "/run/nvml-mock/nri-staging.lock", .port = "9091",
	.cf = { .mock_root = "/var/lib/nvml-mock", .container_root = "/opt/nvml-mock",
		.cdi_spec = "/var/run/cdi/nvml-mock-nri.yaml" },
	.request_timeout_ms = 2000,
};

struct conn {
	int fd;
	struct pb_buf in, chan[3];	/* trunk bytes; per logical connection */
};

static int send_msg(int fd, uint32_t conn, uint32_t stream, uint8_t type, struct pb_buf *msg)
{
	struct pb_buf frame = { 0 };
	int r = nri_frame(&frame, conn, stream, type, msg);

	for (size_t off = 0; r == 0 && off < frame.n;) {
		ssize_t n = send(fd, frame.b + off, frame.n - off, MSG_NOSIGNAL);
		if (n < 0 && errno != EINTR)
			r = -errno;
		else if (n > 0)
			off += (size_t)n;
	}
	pb_free(&frame);
	pb_free(msg);
	return r;
}

static int reply(int fd, uint32_t stream, struct pb_buf *payload)
{
	struct pb_buf resp = { 0 }, status = { 0 };

	pb_msg(&resp, 1, &status);	/* code 0: OK */
	pb_bytes(&resp, 2, payload->b, payload->n);
	pb_free(payload);
	return send_msg(fd, NRI_CONN_PLUGIN, stream, TTRPC_RESPONSE, &resp);
}

/* ConfigureRequest: the runtime's version decides CDI (2.1+, 1.7.30+). */
static void configure(const struct ttrpc_request *rq, struct pb_buf *out)
{
	struct pb_reader r = { rq->payload, rq->payload + rq->len };
	struct pb_field f;
	char name[64] = "", ver[64] = "";
	int maj = 0, min = 0, pat = 0;

	while (pb_next(&r, &f) > 0) {
		if (f.num == 2 && f.type == PB_LEN)
			snprintf(name, sizeof(name), "%.*s", (int)(f.len < 60 ? f.len : 60), f.data);
		if (f.num == 3 && f.type == PB_LEN)
			snprintf(ver, sizeof(ver), "%.*s", (int)(f.len < 60 ? f.len : 60), f.data);
		if (f.num == 5 && f.type == PB_VARINT && f.v > 0 && f.v < 600000)
			o.request_timeout_ms = (int)f.v;
	}
	sscanf(ver[0] == 'v' ? ver + 1 : ver, "%d.%d.%d", &maj, &min, &pat);
	o.cf.cdi_ok = maj > 2 || (maj == 2 && min >= 1) || (maj == 1 && min == 7 && pat >= 30);
	log_info("nri: configured by %s %s (request timeout %d ms; GPUs by %s)", name, ver,
		 o.request_timeout_ms, o.cf.cdi_ok ? "CDI when staged" : "raw device nodes");
	pb_varint(out, 2, 1u << (EV_CREATE_CONTAINER - 1));
}

static void create_container(const struct ttrpc_request *rq, struct pb_buf *out)
{
	struct pb_buf adj = { 0 };
	char why[512], gate[256] = "";
	int budget = o.request_timeout_ms - 500, lock = -1;

	struct timespec t0, t1;
	long waited;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (nri_gate_wait(o.lock, o.port, budget > 200 ? budget : 200, &lock, gate,
			  sizeof(gate)) < 0)
		log_warn("nri: staging gate not open within %d ms (%s): injecting anyway (fail open)",
			 budget, gate);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	waited = (t1.tv_sec - t0.tv_sec) * 1000L + (t1.tv_nsec - t0.tv_nsec) / 1000000L;
	if (waited >= 100)
		log_info("nri: waited %ld ms for the staging gate", waited);
	if (nri_adjust(&o.cf, rq->payload, rq->len, &adj, why, sizeof(why)) < 0) {
		log_warn("nri: %s: container left alone (fail open)", why);
		pb_free(&adj);
	} else {
		log_info("nri: create container: %s", why);
		pb_msg(out, 1, &adj);
	}
	nri_gate_release(lock);
}

static int dispatch(struct conn *c, const struct ttrpc_msg *m)
{
	struct ttrpc_request rq;
	struct pb_buf out = { 0 };

	if (m->type != TTRPC_REQUEST)
		return 0;
	if (nri_ttrpc_request(m->data, m->len, &rq) < 0) {
		log_warn("nri: malformed request on stream %u: answered empty", m->stream);
		return reply(c->fd, m->stream, &out);
	}
	if (!strcmp(rq.method, "Configure"))
		configure(&rq, &out);
	else if (!strcmp(rq.method, "CreateContainer"))
		create_container(&rq, &out);
	else if (!strcmp(rq.method, "Shutdown"))
		log_info("nri: the runtime shuts the plugin down");
	else if (!strcmp(rq.method, "Synchronize"))
		log_info("nri: synchronized");
	return reply(c->fd, m->stream, &out);
}

static int on_runtime(const struct ttrpc_msg *m)
{
	const uint8_t *p;
	size_t n;
	char msg[256];
	int code;

	if (m->type != TTRPC_RESPONSE)
		return 0;
	if (nri_ttrpc_response(m->data, m->len, &code, msg, sizeof(msg), &p, &n) < 0 || code) {
		log_error("nri: RegisterPlugin refused: code %d: %s", code, msg);
		return -EPERM;
	}
	log_info("nri: registered as %s-%s", o.idx, o.name);
	return 0;
}

/* The ttrpc messages complete on logical connection id. */
static int drain(struct conn *c, uint32_t id)
{
	struct pb_buf *b = &c->chan[id];
	struct ttrpc_msg m;
	ssize_t used;
	int r = 0;

	while (r == 0 && (used = nri_ttrpc_msg(b->b, b->n, &m)) > 0) {
		r = id == NRI_CONN_PLUGIN ? dispatch(c, &m) : on_runtime(&m);
		memmove(b->b, b->b + used, b->n - (size_t)used);
		b->n -= (size_t)used;
	}
	return r < 0 ? r : used < 0 ? -EPROTO : 0;
}

static int serve(struct conn *c)
{
	uint8_t buf[65536];

	for (;;) {
		const uint8_t *p;
		size_t plen;
		uint32_t id;
		ssize_t n = recv(c->fd, buf, sizeof(buf), 0), used;
		int r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? -ECONNRESET : -errno;
		pb_raw(&c->in, buf, (size_t)n);
		if (c->in.err)
			return -ENOMEM;
		while ((used = nri_mux_frame(c->in.b, c->in.n, &id, &p, &plen)) > 0) {
			if (id == NRI_CONN_PLUGIN || id == NRI_CONN_RUNTIME) {
				struct pb_buf *b = &c->chan[id];
				pb_raw(b, p, plen);
				if (b->err || (r = drain(c, id)) < 0)
					return b->err ? -ENOMEM : r;
			}
			memmove(c->in.b, c->in.b + used, c->in.n - (size_t)used);
			c->in.n -= (size_t)used;
		}
		if (used < 0)
			return -EPROTO;
	}
}

static int dial(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(o.socket) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, o.socket);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

static int session(int fd)
{
	struct conn c = { .fd = fd };
	struct pb_buf req = { 0 }, reg = { 0 };
	int r;

	pb_str(&reg, 1, o.name);
	pb_str(&reg, 2, o.idx);
	pb_str(&req, 1, SVC_RUNTIME);
	pb_str(&req, 2, "RegisterPlugin");
	pb_msg(&req, 3, &reg);
	if ((r = send_msg(fd, NRI_CONN_RUNTIME, 1, TTRPC_REQUEST, &req)) == 0)
		r = serve(&c);
	pb_free(&c.in);
	for (int i = 0; i < 3; i++)
		pb_free(&c.chan[i]);
	return r;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: mokka-nri [--socket PATH] [--host-root DIR] [--mock-root R] "
		"[--name NAME] [--idx NN]\n"
		"                 [--staging-lock-path PATH] [--health-port PORT] [--node-name NAME]\n"
		"                 [--exclude-namespaces LIST] [--once] [--help] [--version]\n"
		"The NRI plugin: every container containerd creates gets the mock driver view\n"
		"unless its pod says nvml-mock.nvidia.com/inject=false (default socket\n"
		"/var/run/nri/nri.sock, staging gate /run/nvml-mock/nri-staging.lock + :9091/stagedz).\n");
}

static int parse(int argc, char **argv, bool *once)
{
	static const struct option lo[] = {
		{ "socket", 1, 0, 's' }, { "host-root", 1, 0, 'H' }, { "mock-root", 1, 0, 'm' },
		{ "name", 1, 0, 'n' }, { "idx", 1, 0, 'i' }, { "staging-lock-path", 1, 0, 'l' },
		{ "health-port", 1, 0, 'p' }, { "node-name", 1, 0, 'N' },
		{ "exclude-namespaces", 1, 0, 'x' }, { "once", 0, 0, '1' }, { "help", 0, 0, 'h' }, { "version", 0, 0, 'V' },
		{ 0, 0, 0, 0 },
	};
	char lock[512] = "";
	int ch;

	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 's': snprintf(o.socket, sizeof(o.socket), "%s", optarg); break;
		case 'H': snprintf(o.cf.host_root, sizeof(o.cf.host_root), "%s", optarg); break;
		case 'm': snprintf(o.cf.mock_root, sizeof(o.cf.mock_root), "%s", optarg); break;
		case 'n': snprintf(o.name, sizeof(o.name), "%s", optarg); break;
		case 'i': snprintf(o.idx, sizeof(o.idx), "%s", optarg); break;
		case 'l': snprintf(lock, sizeof(lock), "%s", optarg); break;
		case 'p': snprintf(o.port, sizeof(o.port), "%s", optarg); break;
		case 'N': snprintf(o.cf.node_name, sizeof(o.cf.node_name), "%s", optarg); break;
		case 'x': snprintf(o.cf.exclude, sizeof(o.cf.exclude), "%s", optarg); break;
		case '1': *once = true; break;
		case 'h': usage(stdout); exit(0);
		case 'V': printf("mokka-nri %s\n", MOKKA_VERSION); exit(0);
		default: usage(stderr); return -EINVAL;
		}
	}
	if (strlen(o.idx) != 2 || o.idx[0] < '0' || o.idx[0] > '9' || o.idx[1] < '0' ||
	    o.idx[1] > '9') {
		fprintf(stderr, "mokka-nri: --idx '%s': want two digits\n", o.idx);
		return -EINVAL;
	}
	if (!o.cf.node_name[0] && getenv("NODE_NAME"))
		snprintf(o.cf.node_name, sizeof(o.cf.node_name), "%s", getenv("NODE_NAME"));
	snprintf(o.lock, sizeof(o.lock), "%s%s", o.cf.host_root, lock[0] ? lock :
		 "/run/nvml-mock/nri-staging.lock");
	return 0;
}

int main(int argc, char **argv)
{
	bool once = false;

	log_setup("mokka-nri", LOG_LVL_INFO, LOG_FMT_TEXT);
	signal(SIGPIPE, SIG_IGN);
	if (parse(argc, argv, &once) < 0)
		return 2;
	for (;;) {
		int fd = dial(), r;

		if (fd < 0) {
			log_warn("nri: %s: %s (retrying every second)", o.socket, strerror(-fd));
		} else {
			log_info("nri: connected to %s", o.socket);
			r = session(fd);
			close(fd);
			log_warn("nri: connection to %s ended: %s", o.socket, strerror(-r));
		}
		if (once)
			return 1;
		sleep(1);
	}
}
