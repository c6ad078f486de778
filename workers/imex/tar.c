/* A tar reader for the IMEX redist archive: ustar headers (name + prefix),
 * GNU long names ('L') and pax extended headers ('x', "path" records);
 * every header's checksum is verified and every size bounds-checked
 * against the buffer.  It hands out members; what may be staged is the
 * caller's allowlist.  Also the checksum list and path checks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/imex/imex.h"

#define BLOCK 512

static bool zero_block(const unsigned char *h)
{
	for (int i = 0; i < BLOCK; i++)
		if (h[i])
			return false;
	return true;
}

/* An octal field: digits, optionally space/NUL-padded.  false on junk or
 * base-256 (only sizes beyond what we accept use it). */
static bool octal(const unsigned char *f, size_t n, uint64_t *out)
{
	size_t i = 0;
	uint64_t v = 0;

	while (i < n && f[i] == ' ')
		i++;
	if (i == n || f[i] < '0' || f[i] > '7')
		return false;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 60)
			return false;
		v = v * 8 + (uint64_t)(f[i] - '0');
	}
	for (; i < n; i++)
		if (f[i] != ' ' && f[i] != '\0')
			return false;
	*out = v;
	return true;
}

static bool checksum_ok(const unsigned char *h)
{
	uint64_t want, sum = 0;

	if (!octal(h + 148, 8, &want))
		return false;
	for (int i = 0; i < BLOCK; i++)
		sum += i >= 148 && i < 156 ? ' ' : h[i];
	return sum == want;
}

static void field(char *dst, size_t size, const unsigned char *src, size_t n)
{
	size_t len = strnlen((const char *)src, n);

	if (len >= size)
		len = size - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* pax records "<len> key=value\n": the "path" one, if any. */
static int pax_path(const unsigned char *p, size_t n, char *path, size_t size)
{
	size_t off = 0;

	while (off < n) {
		size_t len = 0, i = off;

		while (i < n && p[i] >= '0' && p[i] <= '9' && len < n)
			len = len * 10 + (size_t)(p[i++] - '0');
		if (i >= n || p[i] != ' ' || len <= i - off + 1 || len > n - off ||
		    p[off + len - 1] != '\n')
			return -EINVAL;
		i++;
		if (off + len - i > 5 && !memcmp(p + i, "path=", 5)) {
			size_t vlen = off + len - 1 - (i + 5);
			if (vlen == 0 || vlen >= size || memchr(p + i + 5, '\0', vlen))
				return -EINVAL;
			memcpy(path, p + i + 5, vlen);
			path[vlen] = '\0';
		}
		off += len;
	}
	return 0;
}

int tar_walk(const unsigned char *buf, size_t len,
	     int (*fn)(const struct tar_member *m, void *arg), void *arg,
	     char *err, size_t errlen)
{
	struct tar_member m;
	char longname[sizeof(m.name)] = "";
	size_t off = 0;
	int r;

	while (off + BLOCK <= len) {
		const unsigned char *h = buf + off;
		uint64_t size;
		size_t span;

		if (zero_block(h))
			return 0;	/* end of archive */
		if (!checksum_ok(h) || !octal(h + 124, 12, &size)) {
			snprintf(err, errlen, "tar: bad header at offset %zu", off);
			return -EINVAL;
		}
		if (size > IMEX_MAX_MEMBER) {
			snprintf(err, errlen, "tar: member at offset %zu is %llu bytes (at most %u)",
				 off, (unsigned long long)size, IMEX_MAX_MEMBER);
			return -EFBIG;
		}
		span = ((size_t)size + BLOCK - 1) / BLOCK * BLOCK;
		if (span > len - off - BLOCK) {
			snprintf(err, errlen, "tar: member at offset %zu runs past the end", off);
			return -EINVAL;
		}
		memset(&m, 0, sizeof(m));
		m.type = h[156] ? (char)h[156] : '0';
		m.data = h + BLOCK;
		m.size = (size_t)size;
		off += BLOCK + span;
		switch (m.type) {
		case 'L':	/* GNU: the next member's name */
			if (!size || size >= sizeof(longname)) {
				snprintf(err, errlen, "tar: bad GNU long name");
				return -EINVAL;
			}
			field(longname, sizeof(longname), m.data, (size_t)size);
			continue;
		case 'x':	/* pax: records for the next member */
			if (pax_path(m.data, m.size, longname, sizeof(longname)) < 0) {
				snprintf(err, errlen, "tar: bad pax header");
				return -EINVAL;
			}
			continue;
		case 'g':	/* pax global header, GNU long link name */
		case 'K':
			continue;
		}
		if (longname[0]) {
			memcpy(m.name, longname, sizeof(m.name));
			longname[0] = '\0';
		} else if (!memcmp(h + 257, "ustar", 5) && h[345]) {
			char prefix[156], name[101];

			field(prefix, sizeof(prefix), h + 345, 155);
			field(name, sizeof(name), h, 100);
			snprintf(m.name, sizeof(m.name), "%s/%s", prefix, name);
		} else {
			field(m.name, sizeof(m.name), h, 100);
		}
		if ((r = fn(&m, arg)) < 0)
			return r;
	}
	if (off != len) {
		snprintf(err, errlen, "tar: truncated at offset %zu", off);
		return -EINVAL;
	}
	return 0;
}

bool imex_safe_path(const char *name, char *norm, size_t size)
{
	const char *p = name;

	while (!strncmp(p, "./", 2))
		p += 2;
	if (!*p || *p == '/' || strlen(p) >= size)
		return false;
	for (const char *c = p; *c;) {
		size_t n = strcspn(c, "/");

		/* a trailing "/" (a directory) is fine; "", "." and ".." are not */
		if ((n == 0 && c[0] == '/') || (n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += n;
		if (*c == '/')
			c++;
	}
	snprintf(norm, size, "%s", p);
	return true;
}

int imex_sums_parse(const char *text, struct imex_sums *s, char *err, size_t errlen)
{
	unsigned line = 0;

	s->n = 0;
	for (const char *l = text; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l), h = strspn(l, "0123456789abcdefABCDEF");
		const char *name = l + h;

		line++;
		if (len && l[0] != '#') {
			if (h != 64 || len < 67 || name[0] != ' ' || (name[1] != ' ' && name[1] != '*') ||
			    len - 66 >= sizeof(s->e[0].name) || s->n == 64) {
				snprintf(err, errlen, "line %u: want '<sha256 hex>  <name>'", line);
				return -EINVAL;
			}
			for (size_t i = 0; i < 64; i++)
				s->e[s->n].hex[i] = (char)(l[i] | 0x20);	/* lowercase */
			s->e[s->n].hex[64] = '\0';
			memcpy(s->e[s->n].name, name + 2, len - 66);
			s->e[s->n].name[len - 66] = '\0';
			s->n++;
		}
		l = nl ? nl + 1 : NULL;
	}
	return 0;
}

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

const char *imex_sums_find(const struct imex_sums *s, const char *name)
{
	const char *n = name;

	while (!strncmp(n, "./", 2))
		n += 2;
	/* An exact path first; else one entry with that base name. */
	for (int i = 0; i < s->n; i++) {
		const char *e = s->e[i].name;
		while (!strncmp(e, "./", 2))
			e += 2;
		if (!strcmp(e, n))
			return s->e[i].hex;
	}
	for (int i = 0; i < s->n; i++)
		if (!strcmp(base(s->e[i].name), base(n)))
			return s->e[i].hex;
	return NULL;
}
