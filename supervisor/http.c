/* Request-head parsing for the health listener.  Only what a probe or a
 * scraper sends is accepted: "METHOD SP /path[?query] SP HTTP/1.x", then
 * "Name: value" header lines, then an empty line.  Lines end in CRLF or a
 * bare LF (RFC 9112 2.2 lets a recipient accept the latter).  Which methods
 * are allowed is the server's decision (405), not the parser's. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "supervisor/health.h"

/* RFC 9110 tchar: what a method or a header name may contain. */
static bool is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Visible ASCII or obs-text: what a request-target may contain. */
static bool is_target_char(unsigned char c)
{
	return c > 0x20 && c != 0x7f;
}

/* Header values: visible characters, SP, HTAB, obs-text; no other controls. */
static bool is_value_char(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* "GET /healthz HTTP/1.1" (without its line ending). */
static int parse_request_line(const char *s, size_t n, char *method, size_t mlen,
			      char *path, size_t plen)
{
	static const char version[] = "HTTP/1.";
	size_t i = 0, m, t0, tn, plain;

	while (i < n && is_tchar((unsigned char)s[i]))
		i++;
	m = i;
	if (m == 0 || i >= n || s[i] != ' ')
		return -EINVAL;
	if (m >= mlen)
		return -EINVAL;		/* no method we serve is that long */
	t0 = ++i;
	while (i < n && is_target_char((unsigned char)s[i]))
		i++;
	tn = i - t0;
	if (tn == 0 || s[t0] != '/' || i >= n || s[i] != ' ')
		return -EINVAL;		/* origin-form only */
	i++;
	if (n - i != sizeof(version) || memcmp(s + i, version, sizeof(version) - 1) ||
	    s[n - 1] < '0' || s[n - 1] > '9')
		return -EINVAL;
	/* The query (and a stray fragment) never selects a route: drop it. */
	for (plain = 0; plain < tn && s[t0 + plain] != '?' && s[t0 + plain] != '#'; plain++)
		;
	if (plain >= plen)
		return -E2BIG;
	memcpy(method, s, m);
	method[m] = '\0';
	memcpy(path, s + t0, plain);
	path[plain] = '\0';
	return 0;
}

/* "Name: value"; folded continuation lines (obs-fold) are refused. */
static int parse_header_line(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && is_tchar((unsigned char)s[i]))
		i++;
	if (i == 0 || i >= n || s[i] != ':')
		return -EINVAL;
	for (i++; i < n; i++)
		if (!is_value_char((unsigned char)s[i]))
			return -EINVAL;
	return 0;
}

int http_parse_request(const char *buf, size_t len, char *method, size_t mlen,
		       char *path, size_t plen)
{
	/* The whole head, final empty line included, must fit the cap. */
	size_t window = len < HTTP_MAX_REQUEST ? len : HTTP_MAX_REQUEST;
	size_t pos = 0;

	if (!buf || !method || !path || mlen == 0 || plen == 0)
		return -EINVAL;
	for (int line = 0;; line++) {
		const char *nl = memchr(buf + pos, '\n', window - pos);
		size_t n;
		int r;

		if (!nl)
			return len >= HTTP_MAX_REQUEST ? -E2BIG : 0;
		n = (size_t)(nl - (buf + pos));
		if (n > 0 && buf[pos + n - 1] == '\r')
			n--;
		if (memchr(buf + pos, '\r', n))
			return -EINVAL;	/* a bare CR inside a line */
		if (line == 0)
			r = parse_request_line(buf + pos, n, method, mlen, path, plen);
		else if (n == 0)
			return 1;
		else
			r = parse_header_line(buf + pos, n);
		if (r < 0)
			return r;
		pos = (size_t)(nl - buf) + 1;
	}
}
