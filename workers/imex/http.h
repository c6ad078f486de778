/* A small HTTP/1.1 GET client for the IMEXDownload feature gate: one
 * request per connection (Connection: close), Content-Length, chunked or
 * close-delimited bodies, up to 5 redirects.  No TLS: an https:// URL is
 * fetched only through an HTTP proxy ($https_proxy / $HTTPS_PROXY, an
 * http:// proxy that fetches the https URL for us); without one it is
 * refused, saying so.  The response is read whole into memory (the
 * archive is at most a few tens of MiB) and parsed by http_parse_response,
 * the one decoder the fuzz target drives. */
#ifndef MOKKA_WORKERS_IMEX_HTTP_H
#define MOKKA_WORKERS_IMEX_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#define HTTP_MAX_HEAD (16u << 10)
#define HTTP_MAX_REDIRECTS 5

struct http_url {
	bool https;
	char host[256];		/* without brackets */
	char port[8];
	char path[1024];	/* "/..." with the query */
};

/* http://host[:port]/path or https://...; [v6]:port.  0 or -EINVAL. */
int http_parse_url(const char *url, struct http_url *u, char *err, size_t errlen);

struct http_response {
	int status;			/* 100..599 */
	char location[1024];		/* Location, "" if none */
	const unsigned char *body;	/* into the buffer, or owned */
	size_t body_len;
	unsigned char *owned;		/* a de-chunked body; free() it */
};

/* Parse a whole response (head and body) in buf.  max caps the body.
 * 0, -EINVAL (malformed, with why), -EFBIG (body over max). */
int http_parse_response(const unsigned char *buf, size_t len, size_t max,
			struct http_response *r, char *err, size_t errlen);

/* GET url (following redirects) into *out (malloc'd, *len bytes), the
 * body of a 200 at most max bytes, within timeout_ms overall.  0 or
 * -errno with why in err. */
int http_get(const char *url, size_t max, int timeout_ms, unsigned char **out, size_t *len,
	     char *err, size_t errlen);

#endif
