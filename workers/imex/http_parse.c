/* HTTP/1.1 URL and response parsing (see http.h): pure functions over
 * bytes, fuzzed by tests/fuzz/fuzz_imex_http.c. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "workers/imex/http.h"

static int bad(char *err, size_t errlen, const char *why)
{
	snprintf(err, errlen, "%s", why);
	return -EINVAL;
}

int http_parse_url(const char *url, struct http_url *u, char *err, size_t errlen)
{
	const char *p, *end, *colon = NULL;
	size_t hl;

	memset(u, 0, sizeof(*u));
	if (!strncmp(url, "http://", 7)) {
		p = url + 7;
	} else if (!strncmp(url, "https://", 8)) {
		p = url + 8;
		u->https = true;
	} else {
		return bad(err, errlen, "not an http:// or https:// URL");
	}
	end = p + strcspn(p, "/?#");
	if (*p == '[') {
		const char *rb = memchr(p, ']', (size_t)(end - p));
		if (!rb)
			return bad(err, errlen, "unterminated [IPv6] host");
		hl = (size_t)(rb - p - 1);
		if (hl == 0 || hl >= sizeof(u->host))
			return bad(err, errlen, "bad [IPv6] host");
		memcpy(u->host, p + 1, hl);
		if (rb + 1 < end && rb[1] != ':')
			return bad(err, errlen, "junk after [IPv6] host");
		colon = rb + 1 < end ? rb + 1 : NULL;
	} else {
		colon = memchr(p, ':', (size_t)(end - p));
		hl = (size_t)((colon ? colon : end) - p);
		if (hl == 0 || hl >= sizeof(u->host))
			return bad(err, errlen, "empty or too long host");
		memcpy(u->host, p, hl);
	}
	if (strpbrk(u->host, "@ \t\r\n"))
		return bad(err, errlen, "user info or spaces in the host");
	snprintf(u->port, sizeof(u->port), "%s", u->https ? "443" : "80");
	if (colon) {
		size_t pl = (size_t)(end - colon - 1);
		if (pl == 0 || pl > 5 || strspn(colon + 1, "0123456789") < pl ||
		    atoi(colon + 1) < 1 || atoi(colon + 1) > 65535)
			return bad(err, errlen, "bad port");
		memcpy(u->port, colon + 1, pl);
		u->port[pl] = '\0';
	}
	if (*end == '#' || strlen(end) + 2 > sizeof(u->path))
		return bad(err, errlen, "fragment or too long path");
	snprintf(u->path, sizeof(u->path), "%s%s", *end == '/' ? "" : "/", end);
	for (const char *c = u->path; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f)
			return bad(err, errlen, "control characters or spaces in the path");
	return 0;
}

/* One line of the head: [*p, eol) without the CR; *p moves past the LF. */
static bool line(const char **p, const char *end, const char **s, size_t *n)
{
	const char *lf = memchr(*p, '\n', (size_t)(end - *p));

	if (!lf)
		return false;
	*s = *p;
	*n = (size_t)(lf - *p);
	if (*n && (*s)[*n - 1] == '\r')
		(*n)--;
	*p = lf + 1;
	return true;
}

static bool header_is(const char *s, size_t n, const char *name, const char **val, size_t *vn)
{
	size_t k = strlen(name);

	if (n <= k || strncasecmp(s, name, k) || s[k] != ':')
		return false;
	s += k + 1;
	n -= k + 1;
	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	*val = s;
	*vn = n;
	return true;
}

struct head {
	int status;
	bool chunked;
	long long length;	/* -1: none */
	char location[1024];
};

static int parse_header(const char *s, size_t n, struct head *h, char *err, size_t errlen)
{
	const char *v;
	size_t vn;

	if (header_is(s, n, "content-length", &v, &vn)) {
		long long len = 0;

		if (vn == 0 || vn > 15)
			return bad(err, errlen, "bad Content-Length");
		for (size_t i = 0; i < vn; i++) {
			if (v[i] < '0' || v[i] > '9')
				return bad(err, errlen, "bad Content-Length");
			len = len * 10 + (v[i] - '0');
		}
		if (h->length >= 0 && h->length != len)
			return bad(err, errlen, "conflicting Content-Length headers");
		h->length = len;
	} else if (header_is(s, n, "transfer-encoding", &v, &vn)) {
		/* chunked must be the last coding; no other coding is supported */
		if (vn != 7 || strncasecmp(v, "chunked", 7))
			return bad(err, errlen, "unsupported Transfer-Encoding");
		h->chunked = true;
	} else if (header_is(s, n, "location", &v, &vn)) {
		if (vn >= sizeof(h->location))
			return bad(err, errlen, "Location too long");
		memcpy(h->location, v, vn);
		h->location[vn] = '\0';
	}
	return 0;
}

static int parse_head(const char *buf, size_t len, struct head *h, size_t *used, char *err,
		      size_t errlen)
{
	const char *p = buf, *end = buf + (len < HTTP_MAX_HEAD ? len : HTTP_MAX_HEAD), *s;
	size_t n;
	int r;

	memset(h, 0, sizeof(*h));
	h->length = -1;
	if (!line(&p, end, &s, &n))
		return bad(err, errlen, "no complete status line");
	if (n < 12 || strncmp(s, "HTTP/1.", 7) || (s[7] != '0' && s[7] != '1') || s[8] != ' ' ||
	    s[9] < '1' || s[9] > '5' || s[10] < '0' || s[10] > '9' || s[11] < '0' || s[11] > '9' ||
	    (n > 12 && s[12] != ' '))
		return bad(err, errlen, "bad status line");
	h->status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
	for (;;) {
		if (!line(&p, end, &s, &n))
			return bad(err, errlen, "head not terminated within 16 KiB");
		if (n == 0)
			break;
		if ((r = parse_header(s, n, h, err, errlen)) < 0)
			return r;
	}
	if (h->chunked && h->length >= 0)
		return bad(err, errlen, "both Content-Length and chunked");
	*used = (size_t)(p - buf);
	return 0;
}

/* Chunked body in [p, end): sizes, data, CRLFs, trailers.  The decoded
 * bytes go to a new buffer (at most max). */
static int dechunk(const char *p, const char *end, size_t max,
		   struct http_response *r, char *err, size_t errlen)
{
	unsigned char *out = NULL;
	size_t n = 0;

	for (;;) {
		const char *s;
		size_t ln, size = 0, k = 0;

		if (!line(&p, end, &s, &ln))
			goto trunc;
		for (; k < ln && k < 16; k++) {
			int d = s[k] >= '0' && s[k] <= '9' ? s[k] - '0' :
				(s[k] | 0x20) >= 'a' && (s[k] | 0x20) <= 'f' ? (s[k] | 0x20) - 'a' + 10 : -1;
			if (d < 0)
				break;
			size = size * 16 + (size_t)d;
		}
		if (k == 0 || (k < ln && s[k] != ';' && s[k] != ' ' && s[k] != '\t') || k >= 16)
			goto malformed;
		if (size == 0)
			break;
		if (size > max - n) {
			free(out);
			snprintf(err, errlen, "body larger than %zu bytes", max);
			return -EFBIG;
		}
		if ((size_t)(end - p) < size + 2)
			goto trunc;
		unsigned char *nb = realloc(out, n + size ? n + size : 1);
		if (!nb) {
			free(out);
			return -ENOMEM;
		}
		out = nb;
		memcpy(out + n, p, size);
		n += size;
		p += size;
		if (p[0] == '\r' && p[1] == '\n')
			p += 2;
		else if (p[0] == '\n')
			p += 1;
		else
			goto malformed;
	}
	/* trailers up to the empty line */
	for (;;) {
		const char *s;
		size_t ln;

		if (!line(&p, end, &s, &ln))
			goto trunc;
		if (ln == 0)
			break;
	}
	r->owned = out ? out : malloc(1);
	if (!r->owned)
		return -ENOMEM;
	r->body = r->owned;
	r->body_len = n;
	return 0;
trunc:
	free(out);
	return bad(err, errlen, "chunked body truncated");
malformed:
	free(out);
	return bad(err, errlen, "malformed chunk");
}

int http_parse_response(const unsigned char *buf, size_t len, size_t max,
			struct http_response *r, char *err, size_t errlen)
{
	struct head h;
	size_t used;
	int rc;

	memset(r, 0, sizeof(*r));
	if ((rc = parse_head((const char *)buf, len, &h, &used, err, errlen)) < 0)
		return rc;
	r->status = h.status;
	memcpy(r->location, h.location, sizeof(r->location));
	if (h.status / 100 != 2) {
		r->body = buf + used;	/* kept for the error message only */
		r->body_len = 0;
		return 0;
	}
	if (h.chunked)
		return dechunk((const char *)buf + used, (const char *)buf + len, max, r, err, errlen);
	if (h.length >= 0) {
		if ((unsigned long long)h.length > max) {
			snprintf(err, errlen, "Content-Length %lld is over %zu bytes", h.length, max);
			return -EFBIG;
		}
		if (len - used < (size_t)h.length) {
			snprintf(err, errlen, "body truncated: %zu of %lld bytes", len - used, h.length);
			return -EINVAL;
		}
		r->body = buf + used;
		r->body_len = (size_t)h.length;
		return 0;
	}
	if (len - used > max) {
		snprintf(err, errlen, "body larger than %zu bytes", max);
		return -EFBIG;
	}
	r->body = buf + used;
	r->body_len = len - used;
	return 0;
}
