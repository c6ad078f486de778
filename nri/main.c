/* mokka-nri: connect to containerd's NRI socket, register, and serve the
 * plugin side of the protocol (see nri.h).  The supervisor runs it as the
 * cri simulator's daemon (NRI is on by default, workers/cri/nri_daemon.c);
 * it also runs alone.  A missing socket (containerd without NRI, or not
 * up yet) and a lost connection (containerd restarts once per node pod)
 * are redialled every second, the cause logged once. */
#include <errno.h>
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

static struct nri_opts o;
static char lock_path[4700];		/* the staging lock under the host root */
static int request_timeout_ms = 2000;

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
			request_timeout_ms = (int)f.v;
	}
	sscanf(ver[0] == 'v' ? ver + 1 : ver, "%d.%d.%d", &maj, &min, &pat);
	o.cf.cdi_ok = maj > 2 || (maj == 2 && min >= 1) || (maj == 1 && min == 7 && pat >= 30);
	log_info("nri: configured by %s %s (request timeout %d ms; GPUs by %s)", name, ver,
		 request_timeout_ms, o.cf.cdi_ok ? "CDI when staged" : "raw device nodes");
	pb_varint(out, 2, 1u << (EV_CREATE_CONTAINER - 1));
}

static void create_container(const struct ttrpc_request *rq, struct pb_buf *out)
{
	struct pb_buf adj = { 0 };
	char why[512], gate[256] = "";
	int budget = request_timeout_ms - 500, lock = -1;

	struct timespec t0, t1;
	long waited;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (nri_gate_wait(lock_path, o.stagedz, budget > 200 ? budget : 200, &lock, gate,
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

/* containerd's socket, a host path, found inside the host root. */
static int dial(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd, dirfd, r;

	if ((r = nri_root_socket_path(o.cf.host_root, o.socket, a.sun_path, sizeof(a.sun_path),
				      &dirfd)) < 0)
		return r;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		r = -errno;
	else if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		r = -errno;
		close(fd);
	}
	if (dirfd >= 0)
		close(dirfd);
	return r < 0 ? r : fd;
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
	fprintf(f, "Usage: mokka-nri [--socket-path PATH] [--host-root DIR] [--overlay-host-path R]\n"
		"                 [--overlay-mount-path DIR] [--cdi-spec-host-path PATH]\n"
		"                 [--plugin-name NAME] [--plugin-index NN] [--node-name NAME]\n"
		"                 [--excluded-namespaces LIST] [--staging-lock-path PATH]\n"
		"                 [--stagedz-addr HOST:PORT] [--once] [--help] [--version]\n"
		"The NRI plugin: every container containerd creates gets the mock driver view\n"
		"unless its pod says nvml-mock.nvidia.com/inject=false.  Host paths are\n"
		"resolved inside --host-root (default socket /var/run/nri/nri.sock, staging\n"
		"gate /run/nvml-mock/nri-staging.lock + 127.0.0.1:9091/stagedz).\n");
}

int main(int argc, char **argv)
{
	char err[512];
	int last = 0, r;

	log_setup_env("mokka-nri");
	signal(SIGPIPE, SIG_IGN);
	/* the supervisor's Reload: everything is on the command line */
	signal(SIGHUP, SIG_IGN);
	if ((r = nri_parse_opts(argc, argv, &o, err, sizeof(err))) != 0) {
		if (r == 1)
			usage(stdout);
		else if (r == 2)
			printf("mokka-nri %s\n", MOKKA_VERSION);
		else {
			fprintf(stderr, "mokka-nri: %s\n", err);
			usage(stderr);
		}
		return r > 0 ? 0 : 2;
	}
	if (o.lock[0])
		snprintf(lock_path, sizeof(lock_path), "%s%s", o.cf.host_root, o.lock);
	log_info("nri: plugin %s-%s for %s%s (mock tree %s, gate %s + %s/stagedz)", o.idx, o.name,
		 o.cf.host_root, o.socket, o.cf.mock_root, lock_path[0] ? lock_path : "no lock",
		 o.stagedz);
	for (;;) {
		int fd = dial();

		if (fd < 0) {
			/* said once per cause: containerd without NRI is a steady state */
			if (fd != last)
				log_warn("nri: %s%s: %s (retrying every second)", o.cf.host_root,
					 o.socket, strerror(-fd));
			last = fd;
		} else {
			last = 0;
			log_info("nri: connected to %s%s", o.cf.host_root, o.socket);
			r = session(fd);
			close(fd);
			log_warn("nri: connection to %s%s ended: %s", o.cf.host_root, o.socket,
				 strerror(-r));
		}
		if (o.once)
			return 1;
		sleep(1);
	}
}
