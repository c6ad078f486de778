/* health_flood: probes a health listener while one local client floods it
 * (issue 20's shape): a child keeps N hostile connections open to the port
 * (idle, or sending a request head that never ends) and reopens each one
 * the moment it is dropped; meanwhile the parent sends probes (GET PATH,
 * one connection each, 1 s to answer like a kubelet probe) and reports
 * the share answered and the latency percentiles.
 *
 *   health_flood PORT [HOSTILE [PROBES [MODE [MIN_OK_PCT [MAX_P99_MS]]]]]
 *   MODE: idle | partial | mixed (default mixed)
 *
 * Exit 0 when at least MIN_OK_PCT (default 99) of the probes got an HTTP
 * answer and the 99th percentile latency is under MAX_P99_MS (default
 * 100); 1 otherwise; 2 on a usage or setup error.  Loopback only. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROBE_TIMEOUT_MS 1000
#define PROBE_GAP_MS 5

static struct sockaddr_in target;
static volatile sig_atomic_t stop;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

/* ---- the hostile client ---- */

static const char partial_head[] = "GET /healthz HTTP/1.1\r\nX-Slow: ";

static int hostile_open(int ep, int i, bool partial)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLOUT,
				  .data.u64 = ((uint64_t)(unsigned)i << 32) | (unsigned)fd };

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&target, sizeof(target)) < 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	if (!partial)
		ev.events &= ~(uint32_t)EPOLLOUT;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Runs until SIGTERM; writes its reopen count to out. */
static void hostile(int n, const char *mode, int ready, int out)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	unsigned long reopened = 0;
	struct epoll_event evs[256];
	char junk[4096];

	signal(SIGTERM, on_term);
	for (int i = 0; i < n; i++) {
		bool partial = !strcmp(mode, "partial") || (!strcmp(mode, "mixed") && i % 2);
		hostile_open(ep, i, partial);
	}
	(void)!write(ready, "r", 1);
	while (!stop) {
		int k = epoll_wait(ep, evs, 256, 50);

		for (int j = 0; j < k; j++) {
			int fd = (int)(evs[j].data.u64 & 0xffffffffu);
			int i = (int)(evs[j].data.u64 >> 32);
			bool partial = !strcmp(mode, "partial") || (!strcmp(mode, "mixed") && i % 2);

			if (evs[j].events & EPOLLOUT) {	/* connected: the head that never ends */
				struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP,
							  .data.u64 = evs[j].data.u64 };
				(void)!send(fd, partial_head, sizeof(partial_head) - 1, MSG_NOSIGNAL);
				epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
				if (!(evs[j].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
					continue;
			}
			/* Anything else means the server let go of it: reopen. */
			while (read(fd, junk, sizeof(junk)) > 0)
				;
			close(fd);
			if (hostile_open(ep, i, partial) >= 0)
				reopened++;
		}
	}
	(void)!write(out, &reopened, sizeof(reopened));
	_exit(0);
}

/* ---- probes ---- */

/* One probe: ms to a complete HTTP answer, or -1. */
static double probe(const char *path, int *code)
{
	char req[512], resp[8192];
	double t0 = now_ms(), left;
	size_t len = 0;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct pollfd p = { .fd = fd };
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: flood\r\n"
			 "User-Agent: health_flood\r\n\r\n", path);

	*code = 0;
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&target, sizeof(target)) < 0 && errno != EINPROGRESS)
		goto fail;
	p.events = POLLOUT;
	if (poll(&p, 1, PROBE_TIMEOUT_MS) != 1 || (p.revents & (POLLERR | POLLHUP)))
		goto fail;
	if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n)
		goto fail;
	p.events = POLLIN;
	while ((left = PROBE_TIMEOUT_MS - (now_ms() - t0)) > 0 && poll(&p, 1, (int)left + 1) == 1) {
		ssize_t r = read(fd, resp + len, sizeof(resp) - 1 - len);

		if (r < 0 && errno == EAGAIN)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	resp[len] = '\0';
	close(fd);
	if (sscanf(resp, "HTTP/1.1 %d ", code) != 1 || !strstr(resp, "\r\n\r\n"))
		return -1;
	return now_ms() - t0;
fail:
	close(fd);
	return -1;
}

static const char *fmt_ms(double ms, char *buf)
{
	if (ms >= 1e9)
		return "none (no answer)";
	snprintf(buf, 32, "%.2f ms", ms);
	return buf;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int port = argc > 1 ? atoi(argv[1]) : 0, nh = argc > 2 ? atoi(argv[2]) : 1000;
	int np = argc > 3 ? atoi(argv[3]) : 500, ok = 0, codes[600] = { 0 }, rp[2], sp[2];
	const char *mode = argc > 4 ? argv[4] : "mixed";
	double min_ok = argc > 5 ? atof(argv[5]) : 99.0, max_p99 = argc > 6 ? atof(argv[6]) : 100.0;
	double *lat, p50, p99, worst;
	char b50[32], b99[32], bmax[32];
	unsigned long reopened = 0;
	struct rlimit rl;
	char c;
	pid_t kid;

	if (port <= 0 || port > 65535 || nh < 0 || np <= 0) {
		fprintf(stderr, "usage: health_flood PORT [HOSTILE [PROBES [idle|partial|mixed "
			"[MIN_OK_PCT [MAX_P99_MS]]]]]\n");
		return 2;
	}
	target = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				       .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	/* N sockets and then some. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)nh + 64) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (pipe2(rp, O_CLOEXEC) < 0 || pipe2(sp, O_CLOEXEC) < 0)
		return 2;
	kid = fork();
	if (kid < 0)
		return 2;
	if (kid == 0)
		hostile(nh, mode, rp[1], sp[1]);
	if (read(rp[0], &c, 1) != 1)
		return 2;
	usleep(200 * 1000);	/* the flood is on */
	lat = calloc((size_t)np, sizeof(*lat));
	for (int i = 0; i < np; i++) {
		int code;
		double ms = probe("/healthz", &code);

		lat[i] = ms < 0 ? 1e9 : ms;
		if (ms >= 0) {
			ok++;
			codes[code > 0 && code < 600 ? code : 0]++;
		}
		usleep(PROBE_GAP_MS * 1000);
	}
	kill(kid, SIGTERM);
	if (read(sp[0], &reopened, sizeof(reopened)) != sizeof(reopened))
		reopened = 0;
	waitpid(kid, NULL, 0);
	qsort(lat, (size_t)np, sizeof(*lat), cmp_double);
	p50 = lat[np / 2];
	p99 = lat[(np * 99 + 99) / 100 - 1];
	worst = lat[np - 1];
	printf("health_flood: %d hostile (%s) reopened %lu times; %d probes: %d answered "
	       "(%.1f %%; %d x 200, %d x 503), p50 %s, p99 %s, max %s\n",
	       nh, mode, reopened, np, ok, 100.0 * ok / np, codes[200], codes[503],
	       fmt_ms(p50, b50), fmt_ms(p99, b99), fmt_ms(worst, bmax));
	free(lat);
	return 100.0 * ok / np >= min_ok && p99 < max_p99 ? 0 : 1;
}
