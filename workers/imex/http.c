/* The HTTP/1.1 GET of http.h: connect (with a deadline), one request,
 * the whole response read into memory, parsed by http_parse_response,
 * redirects followed.  https:// goes through an http:// proxy from
 * $https_proxy / $HTTPS_PROXY as an absolute-URI request, or is refused:
 * this client has no TLS. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "workers/imex/http.h"

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int left(int64_t deadline)
{
	int64_t l = deadline - now_ms();

	return l > 0 ? (int)(l < INT32_MAX ? l : INT32_MAX) : 0;
}

/* A connected socket to host:port before the deadline, or -errno. */
static int dial(const char *host, const char *port, int64_t deadline, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	int fd = -1, e = ETIMEDOUT, g;

	if ((g = getaddrinfo(host, port, &hints, &res)) != 0) {
		snprintf(err, errlen, "resolve %s: %s", host, gai_strerror(g));
		return -EHOSTUNREACH;
	}
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		struct pollfd p;
		socklen_t sl = sizeof(e);

		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0) {
			e = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
			e = errno;
		} else {
			p = (struct pollfd){ fd, POLLOUT, 0 };
			if (poll(&p, 1, left(deadline)) <= 0)
				e = ETIMEDOUT;
			else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) < 0)
				e = errno;
			if (e == 0)
				break;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		snprintf(err, errlen, "connect %s:%s: %s", host, port, strerror(e));
	return fd < 0 ? -e : fd;
}

static int send_all(int fd, const char *buf, size_t len, int64_t deadline)
{
	while (len) {
		struct pollfd p = { fd, POLLOUT, 0 };
		ssize_t n;

		if (poll(&p, 1, left(deadline)) <= 0)
			return -ETIMEDOUT;
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Everything until the peer closes: at most cap bytes. */
static int recv_all(int fd, size_t cap, int64_t deadline, unsigned char **out, size_t *len)
{
	size_t size = 64 << 10, n = 0;
	unsigned char *b = malloc(size);

	if (!b)
		return -ENOMEM;
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t got;

		if (n == size) {
			unsigned char *nb;
			if (size >= cap || !(nb = realloc(b, size * 2 < cap ? size * 2 : cap))) {
				free(b);
				return size >= cap ? -EFBIG : -ENOMEM;
			}
			b = nb;
			size = size * 2 < cap ? size * 2 : cap;
		}
		if (poll(&p, 1, left(deadline)) <= 0) {
			free(b);
			return -ETIMEDOUT;
		}
		got = recv(fd, b + n, size - n, 0);
		if (got < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (got < 0) {
			int e = errno;
			free(b);
			return -e;
		}
		if (got == 0)
			break;
		n += (size_t)got;
	}
	*out = b;
	*len = n;
	return 0;
}

static const char *proxy_for_https(void)
{
	const char *p = getenv("https_proxy");

	return p && *p ? p : (p = getenv("HTTPS_PROXY")) && *p ? p : NULL;
}

/* One request: the raw response in *raw. */
static int exchange(const char *url, const struct http_url *u, size_t max, int64_t deadline,
		    unsigned char **raw, size_t *rawlen, char *err, size_t errlen)
{
	struct http_url via = *u;
	const char *proxy = u->https ? proxy_for_https() : NULL;
	bool v6 = strchr(u->host, ':') != NULL;
	char req[3072];
	int fd, r, n;

	if (u->https && !proxy) {
		snprintf(err, errlen, "%s: https needs an HTTP proxy (https_proxy=http://host:port; "
			 "Mokka has no TLS) or an http:// mirror (--imex-download-url)", url);
		return -EPROTONOSUPPORT;
	}
	if (proxy && ((r = http_parse_url(proxy, &via, err, errlen)) < 0 || via.https)) {
		snprintf(err, errlen, "https_proxy '%.200s' is not an http:// proxy URL", proxy);
		return -EINVAL;
	}
	n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s%s%s%s%s\r\n"
		     "User-Agent: mokka-imex-fetch\r\nAccept: */*\r\nConnection: close\r\n\r\n",
		     proxy ? url : u->path, v6 ? "[" : "", u->host, v6 ? "]" : "",
		     strcmp(u->port, u->https ? "443" : "80") ? ":" : "",
		     strcmp(u->port, u->https ? "443" : "80") ? u->port : "");
	if (n < 0 || (size_t)n >= sizeof(req)) {
		snprintf(err, errlen, "request too long");
		return -EINVAL;
	}
	if ((fd = dial(via.host, via.port, deadline, err, errlen)) < 0)
		return fd;
	if ((r = send_all(fd, req, (size_t)n, deadline)) == 0)
		r = recv_all(fd, max + HTTP_MAX_HEAD + (max >> 4) + 4096, deadline, raw, rawlen);
	close(fd);
	if (r < 0)
		snprintf(err, errlen, "%s: %s", url, r == -ETIMEDOUT ? "timed out" :
			 r == -EFBIG ? "response too large" : strerror(-r));
	return r;
}

/* Location relative to u: absolute URLs as they are, "/path" on the
 * same origin; anything else is refused. */
static int follow(const struct http_url *u, const char *loc, char *next, size_t size)
{
	bool v6 = strchr(u->host, ':') != NULL;

	if (!strncmp(loc, "http://", 7) || !strncmp(loc, "https://", 8))
		return snprintf(next, size, "%s", loc) < (int)size ? 0 : -EINVAL;
	if (loc[0] != '/' || loc[1] == '/')
		return -EINVAL;
	return snprintf(next, size, "%s://%s%s%s:%s%s", u->https ? "https" : "http", v6 ? "[" : "",
			u->host, v6 ? "]" : "", u->port, loc) < (int)size ? 0 : -EINVAL;
}

int http_get(const char *url, size_t max, int timeout_ms, unsigned char **out, size_t *len,
	     char *err, size_t errlen)
{
	int64_t deadline = now_ms() + timeout_ms;
	char cur[1024];

	snprintf(cur, sizeof(cur), "%s", url);
	for (int hop = 0; hop <= HTTP_MAX_REDIRECTS; hop++) {
		struct http_url u;
		struct http_response resp;
		unsigned char *raw = NULL;
		size_t rawlen = 0;
		char why[256];
		int r;

		if ((r = http_parse_url(cur, &u, why, sizeof(why))) < 0) {
			snprintf(err, errlen, "%.300s: %s", cur, why);
			return r;
		}
		if ((r = exchange(cur, &u, max, deadline, &raw, &rawlen, err, errlen)) < 0)
			return r;
		r = http_parse_response(raw, rawlen, max, &resp, why, sizeof(why));
		if (r < 0) {
			free(raw);
			snprintf(err, errlen, "%.300s: %s", cur, why);
			return r;
		}
		if (resp.status == 200) {
			*len = resp.body_len;
			*out = resp.owned ? resp.owned : malloc(resp.body_len ? resp.body_len : 1);
			if (*out && !resp.owned)
				memcpy(*out, resp.body, resp.body_len);
			free(raw);
			return *out ? 0 : -ENOMEM;
		}
		free(resp.owned);
		free(raw);
		if (resp.status / 100 == 3 && resp.location[0] &&
		    follow(&u, resp.location, cur, sizeof(cur)) == 0)
			continue;
		snprintf(err, errlen, "%.300s: HTTP status %d", cur, resp.status);
		return resp.status == 404 ? -ENOENT : -EIO;
	}
	snprintf(err, errlen, "%.300s: more than %d redirects", url, HTTP_MAX_REDIRECTS);
	return -ELOOP;
}
