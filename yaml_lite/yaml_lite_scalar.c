/* yaml_lite characters and scalars: what bytes a document may hold,
 * quoted (with escapes) and plain scalars, errors, nodes. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yaml_lite_internal.h"

__attribute__((format(printf, 4, 5)))
void yp_fail_at(struct yp *p, unsigned line, unsigned col, const char *fmt, ...)
{
	va_list ap;

	if (p->failed)
		return;
	p->failed = true;
	p->err->line = line;
	p->err->col = col;
	va_start(ap, fmt);
	vsnprintf(p->err->msg, sizeof(p->err->msg), fmt, ap);
	va_end(ap);
}

struct yl_node *yp_node_new(struct yp *p, enum yl_kind kind)
{
	struct yl_node *n;

	if (++p->nodes > YL_MAX_NODES) {
		yp_fail(p, "too many nodes (limit %u)", (unsigned)YL_MAX_NODES);
		return NULL;
	}
	n = yl_new(kind);
	if (!n) {
		yp_fail(p, "out of memory");
		return NULL;
	}
	n->line = p->line;
	n->col = (unsigned)(p->pos - p->line_start + 1);
	return n;
}

/* Characters that may not start a plain scalar here. */
bool yp_bad_start(struct yp *p, bool flow)
{
	char c = cur(p), n = ahead(p, 1);
	const char *what = NULL;

	switch (c) {
	case '&': what = "anchors are not supported"; break;
	case '*': what = "aliases are not supported"; break;
	case '!': what = "tags are not supported"; break;
	case '|': case '>': what = "block scalars (| and >) are not supported"; break;
	case '%': case '@': case '`': what = "reserved indicator"; break;
	case '#': what = "'#' right after an indicator (libyaml reads a comment)"; break;
	case ',': case ']': case '}': case '[': case '{':
		what = "unexpected flow indicator";
		break;
	case '?':	/* libyaml reads any '?' in flow context as a key indicator */
		if (flow || is_blank(n) || is_eol(n))
			what = "complex keys are not supported";
		break;
	case '-':
		if (is_blank(n) || is_eol(n))
			what = "a sequence item is not allowed here";
		break;
	case ':':
		if (flow || is_blank(n) || is_eol(n))
			what = "missing key before ':'";
		break;
	}
	if (what)
		yp_fail(p, "%s", what);
	return what != NULL;
}

static bool put_byte(struct yp *p, char **b, size_t *len, size_t *cap, char c)
{
	if (*len + 2 > *cap) {
		size_t ncap = *cap ? *cap * 2 : 32;
		char *nb = realloc(*b, ncap);

		if (!nb) {
			yp_fail(p, "out of memory");
			return false;
		}
		*b = nb;
		*cap = ncap;
	}
	(*b)[(*len)++] = c;
	(*b)[*len] = 0;
	return true;
}

static bool put_utf8(struct yp *p, char **b, size_t *len, size_t *cap, unsigned long cp)
{
	unsigned char u[4];
	int n;

	if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
		yp_fail(p, "invalid character in escape");
		return false;
	}
	if (cp < 0x80) {
		u[0] = (unsigned char)cp, n = 1;
	} else if (cp < 0x800) {
		u[0] = (unsigned char)(0xc0 | cp >> 6), n = 2;
	} else if (cp < 0x10000) {
		u[0] = (unsigned char)(0xe0 | cp >> 12), n = 3;
	} else {
		u[0] = (unsigned char)(0xf0 | cp >> 18), n = 4;
	}
	for (int i = n - 1; i > 0; i--, cp >>= 6)
		u[i] = (unsigned char)(0x80 | (cp & 0x3f));
	for (int i = 0; i < n; i++)
		if (!put_byte(p, b, len, cap, (char)u[i]))
			return false;
	return true;
}

static int hex_value(char h)
{
	return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 :
	       h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
}

/* One backslash escape of a double-quoted scalar (YAML 1.2 set, no NUL). */
static bool escape(struct yp *p, char **b, size_t *len, size_t *cap)
{
	char e = ahead(p, 1), c = 0;
	int digits = 0;
	unsigned long cp = 0;

	switch (e) {
	case 'a': c = '\a'; break;
	case 'b': c = '\b'; break;
	case 't': case '\t': c = '\t'; break;
	case 'n': c = '\n'; break;
	case 'v': c = '\v'; break;
	case 'f': c = '\f'; break;
	case 'r': c = '\r'; break;
	case 'e': c = '\033'; break;
	case ' ': case '"': case '/': case '\\': c = e; break;
	case 'N': cp = 0x85; break;
	case '_': cp = 0xa0; break;
	case 'L': cp = 0x2028; break;
	case 'P': cp = 0x2029; break;
	case 'x': digits = 2; break;
	case 'u': digits = 4; break;
	case 'U': digits = 8; break;
	default:
		yp_fail(p, is_eol(e) ? "multi-line quoted scalars are not supported"
				  : e == '0' ? "NUL characters are not supported"
				  : "unknown escape sequence");
		return false;
	}
	if (!cp && !digits) {
		p->pos += 2;
		return put_byte(p, b, len, cap, c);
	}
	for (int i = 0; i < digits; i++) {
		int v = hex_value(ahead(p, 2 + (size_t)i));

		if (v < 0) {
			yp_fail(p, "bad hex digit in escape");
			return false;
		}
		cp = cp << 4 | (unsigned long)v;
	}
	p->pos += 2 + (size_t)digits;
	return put_utf8(p, b, len, cap, cp);
}

struct yl_node *yp_parse_quoted(struct yp *p)
{
	unsigned line = p->line, col = (unsigned)(p->pos - p->line_start + 1);
	char q = cur(p), *b = NULL;
	size_t len = 0, cap = 0;
	struct yl_node *n;

	p->pos++;
	if (!put_byte(p, &b, &len, &cap, 0))
		return NULL;
	len = 0;
	for (;;) {
		char c = cur(p);

		if (is_eol(c)) {
			yp_fail_at(p, line, col, "unterminated quoted scalar");
			goto err;
		}
		if (c == q && (q == '"' || ahead(p, 1) != '\'')) {
			p->pos++;
			break;
		}
		if (q == '\'' && c == '\'') {
			p->pos += 2;
		} else if (q == '"' && c == '\\') {
			if (!escape(p, &b, &len, &cap))
				goto err;
			continue;
		} else {
			p->pos++;
		}
		if (!put_byte(p, &b, &len, &cap, c))
			goto err;
	}
	n = yp_node_new(p, YL_SCALAR);
	if (!n)
		goto err;
	n->line = line, n->col = col;
	n->quoted = true;
	n->str = b;
	n->len = len;
	return n;
err:
	free(b);
	return NULL;
}

static bool is_null_word(const char *s, size_t n)
{
	return n == 0 || (n == 1 && *s == '~') || (n == 4 && (!memcmp(s, "null", 4) ||
		!memcmp(s, "Null", 4) || !memcmp(s, "NULL", 4)));
}

static struct yl_node *scalar_from(struct yp *p, size_t start, size_t end, unsigned col)
{
	struct yl_node *n;

	while (end > start && is_blank(p->s[end - 1]))
		end--;
	n = yp_node_new(p, is_null_word(p->s + start, end - start) ? YL_NULL : YL_SCALAR);
	if (!n)
		return NULL;
	n->col = col;
	/* a null keeps its spelling too: "{null: 1}" has the key "null" */
	n->str = strndup(p->s + start, end - start);
	if (!n->str) {
		yl_free(n);
		yp_fail(p, "out of memory");
		return NULL;
	}
	n->len = end - start;
	return n;
}

/* A plain scalar ends at a line end; in flow context also at , [ ] { } and
 * at a ':' separator.  In block context a ':' separator is an error. */
struct yl_node *yp_parse_plain(struct yp *p, bool flow)
{
	size_t start = p->pos;
	unsigned col = (unsigned)(p->pos - p->line_start + 1);

	if (yp_bad_start(p, flow))
		return NULL;
	while (!at_line_end(p)) {
		char c = cur(p), n = ahead(p, 1);
		bool sep = c == ':' && (is_blank(n) || is_eol(n) ||
					(flow && is_flow_indicator(n)));

		if (flow && (is_flow_indicator(c) || sep))
			break;
		if (sep) {
			yp_fail(p, "mapping values are not allowed here");
			return NULL;
		}
		p->pos++;
	}
	return scalar_from(p, start, p->pos, col);
}

/* The offset of the first character we refuse, or len: invalid UTF-8,
 * what YAML 1.2 calls non-printable (C0/C1 controls but tab, LF and CR;
 * DEL; surrogates; U+FFFE/U+FFFF), and the Unicode line breaks (NEL,
 * U+2028, U+2029) that only libyaml's YAML 1.1 reading honours. */
size_t yp_first_bad_char(const unsigned char *s, size_t len, const char **what)
{
	size_t i = 0;

	while (i < len) {
		unsigned c = s[i], cp, need;

		if (c < 0x80) {
			if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
				*what = c ? "control character in document" : "NUL byte in document";
				return i;
			}
			i++;
			continue;
		}
		need = c >= 0xf0 && c <= 0xf4 ? 3 : c >= 0xe0 ? (c <= 0xef ? 2 : 0) :
		       c >= 0xc2 && c <= 0xdf ? 1 : 0;
		*what = "invalid UTF-8";
		if (!need || need >= len - i)
			return i;
		cp = c & (0x3f >> need);
		for (unsigned k = 1; k <= need; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return i;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return i;
		if ((cp >= 0x80 && cp < 0xa0) || cp == 0xfffe || cp == 0xffff) {
			*what = cp == 0x85 ? "unsupported line break (NEL)"
					   : "non-printable character in document";
			return i;
		}
		if (cp == 0x2028 || cp == 0x2029) {	/* line breaks to libyaml */
			*what = "unsupported line break (U+2028/U+2029)";
			return i;
		}
		i += need + 1;
	}
	return len;
}
