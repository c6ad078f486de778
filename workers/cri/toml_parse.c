/* The TOML parser: text -> tree with source spans (see toml.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/cri/toml_internal.h"

#define MAX_KEY_PARTS 64

struct parser {
	const char *s;
	size_t len, pos;
	int line;
	size_t line_start;
	struct toml_error *err;
	struct toml_node *root, *cur;
	size_t first_header;
	int depth;
};

static int fail_at(struct parser *p, size_t pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail_at(struct parser *p, size_t pos, const char *fmt, ...)
{
	va_list ap;
	int line = 1;
	size_t ls = 0;

	for (size_t i = 0; i < pos && i < p->len; i++)
		if (p->s[i] == '\n') {
			line++;
			ls = i + 1;
		}
	p->err->line = line;
	p->err->col = (int)(pos - ls) + 1;
	va_start(ap, fmt);
	vsnprintf(p->err->msg, sizeof(p->err->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

#define fail(p, ...) fail_at(p, (p)->pos, __VA_ARGS__)

static int peek(const struct parser *p)
{
	return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static int peek_at(const struct parser *p, size_t off)
{
	return p->pos + off < p->len ? (unsigned char)p->s[p->pos + off] : -1;
}

static void take(struct parser *p)
{
	if (p->pos < p->len && p->s[p->pos++] == '\n') {
		p->line++;
		p->line_start = p->pos;
	}
}

static bool starts(const struct parser *p, const char *lit)
{
	size_t n = strlen(lit);

	return p->len - p->pos >= n && memcmp(p->s + p->pos, lit, n) == 0;
}

static void mark(struct parser *p, struct toml_node *n)
{
	n->line = p->line;
	n->col = (int)(p->pos - p->line_start) + 1;
	n->start = p->pos;
}

static void skip_ws(struct parser *p)
{
	while (peek(p) == ' ' || peek(p) == '\t')
		take(p);
}

static bool at_newline(const struct parser *p)
{
	return peek(p) == '\n' || (peek(p) == '\r' && peek_at(p, 1) == '\n');
}

static void take_newline(struct parser *p)
{
	if (peek(p) == '\r')
		take(p);
	take(p);
}

static void skip_comment(struct parser *p)
{
	if (peek(p) == '#')
		while (p->pos < p->len && !at_newline(p))
			take(p);
}

/* Whitespace, newlines and comments (inside arrays). */
static void skip_ws_nl(struct parser *p)
{
	for (;;) {
		skip_ws(p);
		skip_comment(p);
		if (!at_newline(p))
			return;
		take_newline(p);
	}
}

/* After a statement: whitespace, a comment, then a newline or the end. */
static int end_of_line(struct parser *p)
{
	skip_ws(p);
	skip_comment(p);
	if (p->pos >= p->len)
		return 0;
	if (!at_newline(p))
		return fail(p, "expected the end of the line, found '%c'", p->s[p->pos]);
	take_newline(p);
	return 0;
}

/* Encoding problems first, once: TOML is UTF-8 without control
 * characters other than tab (and CR only before LF). */
static int check_encoding(struct parser *p)
{
	const unsigned char *s = (const unsigned char *)p->s;

	for (size_t i = 0; i < p->len;) {
		unsigned c = s[i], need, cp;

		if (c < 0x80) {
			if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
				return fail_at(p, i, "control character 0x%02x", c);
			if (c == '\r' && (i + 1 >= p->len || s[i + 1] != '\n'))
				return fail_at(p, i, "carriage return without a line feed");
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			need = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			need = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			need = 3, cp = c & 0x07;
		else
			return fail_at(p, i, "invalid UTF-8");
		for (unsigned k = 1; k <= need; k++) {
			if (i + k >= p->len || (s[i + k] & 0xc0) != 0x80)
				return fail_at(p, i, "invalid UTF-8");
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return fail_at(p, i, "invalid UTF-8");
		i += need + 1;
	}
	return 0;
}

static void put_utf8(struct sb *b, unsigned long cp)
{
	char u[4];

	if (cp < 0x80) {
		toml_sb_putc(b, (char)cp);
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | cp >> 6);
		u[1] = (char)(0x80 | (cp & 0x3f));
		toml_sb_putn(b, u, 2);
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | cp >> 12);
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		toml_sb_putn(b, u, 3);
	} else {
		u[0] = (char)(0xf0 | cp >> 18);
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		toml_sb_putn(b, u, 4);
	}
}

static int escape(struct parser *p, struct sb *b)
{
	static const char from[] = "btnfr\"\\", to[] = "\b\t\n\f\r\"\\";
	const char *e;
	int c;

	take(p);	/* the backslash */
	c = peek(p);
	if (c > 0 && (e = strchr(from, c))) {
		toml_sb_putc(b, to[e - from]);
		take(p);
		return 0;
	}
	if (c == 'u' || c == 'U') {
		int n = c == 'u' ? 4 : 8;
		unsigned long cp = 0;
		take(p);
		for (int i = 0; i < n; i++) {
			int h = peek(p);
			int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 :
				h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
			if (v < 0)
				return fail(p, "\\%c escape needs %d hex digits", c, n);
			cp = cp << 4 | (unsigned long)v;
			take(p);
		}
		if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return fail(p, "\\%c escape is not a Unicode scalar value", c);
		put_utf8(b, cp);
		return 0;
	}
	return fail(p, "invalid escape '\\%c'", c > 0 ? c : '?');
}

/* A string at the cursor (any of the four forms); multi = allowed here
 * (values, not keys). */
static int string(struct parser *p, bool multi, struct sb *b)
{
	bool literal = peek(p) == '\'';
	const char *q3 = literal ? "'''" : "\"\"\"";
	char q = literal ? '\'' : '"';
	size_t open = p->pos;

	if (multi && starts(p, q3)) {
		take(p), take(p), take(p);
		if (at_newline(p))
			take_newline(p);	/* a newline right after the quotes is trimmed */
		for (;;) {
			if (p->pos >= p->len)
				return fail_at(p, open, "unterminated multi-line string");
			if (starts(p, q3)) {
				/* up to two more quotes belong to the content */
				int extra = 0;
				while (extra < 2 && peek_at(p, 3 + (size_t)extra) == q)
					extra++;
				for (int i = 0; i < extra; i++)
					toml_sb_putc(b, q);
				for (int i = 0; i < 3 + extra; i++)
					take(p);
				return b->oom ? -ENOMEM : 0;
			}
			if (!literal && peek(p) == '\\') {
				size_t save = p->pos + 1;
				/* line-ending backslash: trim through the next non-space */
				while (save < p->len && (p->s[save] == ' ' || p->s[save] == '\t'))
					save++;
				if (save < p->len && (p->s[save] == '\n' ||
				    (p->s[save] == '\r' && save + 1 < p->len && p->s[save + 1] == '\n'))) {
					while (p->pos < save)
						take(p);
					while (peek(p) == ' ' || peek(p) == '\t' || at_newline(p))
						at_newline(p) ? take_newline(p) : take(p);
					continue;
				}
				int r = escape(p, b);
				if (r < 0)
					return r;
				continue;
			}
			toml_sb_putc(b, p->s[p->pos]);
			take(p);
		}
	}
	take(p);
	for (;;) {
		int c = peek(p);
		if (c < 0 || c == '\n' || c == '\r')
			return fail_at(p, open, "unterminated string");
		if (c == q) {
			take(p);
			return b->oom ? -ENOMEM : 0;
		}
		if (!literal && c == '\\') {
			int r = escape(p, b);
			if (r < 0)
				return r;
			continue;
		}
		toml_sb_putc(b, (char)c);
		take(p);
	}
}

struct key {
	char *part[MAX_KEY_PARTS];
	int n;
	size_t pos;
};

static void key_free(struct key *k)
{
	for (int i = 0; i < k->n; i++)
		free(k->part[i]);
	k->n = 0;
}

static int key(struct parser *p, struct key *k)
{
	k->n = 0;
	k->pos = p->pos;
	for (;;) {
		struct sb b = { 0 };
		int c = peek(p), r;

		if (k->n == MAX_KEY_PARTS)
			return fail(p, "key has more than %d parts", MAX_KEY_PARTS);
		if (c == '"' || c == '\'') {
			if ((r = string(p, false, &b)) < 0) {
				free(b.b);
				return r;
			}
			if (!b.b)
				toml_sb_puts(&b, "");
		} else if (toml_bare_char(c)) {
			size_t s = p->pos;
			while (toml_bare_char(peek(p)))
				take(p);
			toml_sb_putn(&b, p->s + s, p->pos - s);
		} else {
			return fail(p, "expected a key");
		}
		if (b.oom || !b.b) {
			free(b.b);
			return -ENOMEM;
		}
		k->part[k->n++] = b.b;
		skip_ws(p);
		if (peek(p) != '.')
			return 0;
		take(p);
		skip_ws(p);
	}
}

static void key_text(const struct key *k, int upto, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int i = 0; i < upto && off + 1 < len; i++) {
		char part[256];
		toml_key_text(k->part[i], part, sizeof(part));
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? "." : "", part);
	}
}

static int value(struct parser *p, struct toml_node **out);

static bool all_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return n > 0;
}

/* Digits of a base with single underscores between them. */
static bool digits_ok(const char *s, size_t n, int base)
{
	bool prev_digit = false;

	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		int c = s[i];
		bool d = base == 16 ? ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
				       (c >= 'A' && c <= 'F')) :
			 base == 8 ? (c >= '0' && c <= '7') :
			 base == 2 ? (c == '0' || c == '1') : (c >= '0' && c <= '9');
		if (c == '_') {
			if (!prev_digit || i + 1 == n)
				return false;
			prev_digit = false;
			continue;
		}
		if (!d)
			return false;
		prev_digit = true;
	}
	return true;
}

static bool looks_datetime(const char *t, size_t n)
{
	return (n >= 10 && all_digits(t, 4) && t[4] == '-' && all_digits(t + 5, 2) && t[7] == '-' &&
		all_digits(t + 8, 2)) ||
	       (n >= 8 && all_digits(t, 2) && t[2] == ':' && all_digits(t + 3, 2) && t[5] == ':' &&
		all_digits(t + 6, 2));
}

static int number(struct parser *p, struct toml_node *n)
{
	size_t s = p->pos, len;
	const char *t = p->s + s;
	char buf[128];

	while (toml_bare_char(peek(p)) || peek(p) == '.' || peek(p) == '+' || peek(p) == ':' ||
	       /* "1979-05-27 07:32:00": a space between date and time */
	       (peek(p) == ' ' && p->pos - s == 10 && looks_datetime(t, 10) &&
		peek_at(p, 1) >= '0' && peek_at(p, 1) <= '9'))
		take(p);
	len = p->pos - s;
	if (!len)
		return fail(p, "expected a value");
	if (len >= sizeof(buf))
		return fail_at(p, s, "value too long");
	memcpy(buf, t, len);
	buf[len] = '\0';
	if (looks_datetime(buf, len)) {
		n->kind = TOML_DATETIME;
		return (n->str = strdup(buf)) ? 0 : -ENOMEM;
	}
	const char *b = buf + (buf[0] == '+' || buf[0] == '-');
	if (!strcmp(b, "inf") || !strcmp(b, "nan")) {
		n->kind = TOML_FLOAT;
		return (n->str = strdup(buf)) ? 0 : -ENOMEM;
	}
	if (buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'o' || buf[1] == 'b')) {
		int base = buf[1] == 'x' ? 16 : buf[1] == 'o' ? 8 : 2;
		unsigned long long v = 0;
		if (!digits_ok(buf + 2, len - 2, base))
			return fail_at(p, s, "invalid integer '%s'", buf);
		for (const char *c = buf + 2; *c; c++) {
			if (*c == '_')
				continue;
			int d = *c <= '9' ? *c - '0' : (*c | 0x20) - 'a' + 10;
			if (v > (unsigned long long)(INT64_MAX - d) / (unsigned)base)
				return fail_at(p, s, "integer '%s' out of range", buf);
			v = v * (unsigned)base + (unsigned)d;
		}
		n->kind = TOML_INT;
		n->num = (long long)v;
		return 0;
	}
	/* decimal integer or float: [+-] int [. frac] [e [+-] exp] */
	size_t i = (size_t)(b - buf), ie = i;
	while (ie < len && ((buf[ie] >= '0' && buf[ie] <= '9') || buf[ie] == '_'))
		ie++;
	if (!digits_ok(buf + i, ie - i, 10) || (buf[i] == '0' && ie - i > 1))
		return fail_at(p, s, "invalid number '%s'", buf);
	if (ie == len) {
		unsigned long long v = 0, lim = buf[0] == '-' ? (unsigned long long)INT64_MAX + 1 :
			(unsigned long long)INT64_MAX;
		for (size_t k = i; k < ie; k++) {
			if (buf[k] == '_')
				continue;
			if (v > (lim - (unsigned)(buf[k] - '0')) / 10)
				return fail_at(p, s, "integer '%s' out of range", buf);
			v = v * 10 + (unsigned)(buf[k] - '0');
		}
		n->kind = TOML_INT;
		n->num = buf[0] == '-' ? (long long)(0 - v) : (long long)v;
		return 0;
	}
	size_t k = ie;
	if (buf[k] == '.') {
		size_t f = ++k;
		while (k < len && ((buf[k] >= '0' && buf[k] <= '9') || buf[k] == '_'))
			k++;
		if (!digits_ok(buf + f, k - f, 10))
			return fail_at(p, s, "invalid float '%s'", buf);
	}
	if (k < len && (buf[k] == 'e' || buf[k] == 'E')) {
		size_t e = ++k;
		if (k < len && (buf[k] == '+' || buf[k] == '-'))
			e = ++k;
		while (k < len && ((buf[k] >= '0' && buf[k] <= '9') || buf[k] == '_'))
			k++;
		if (!digits_ok(buf + e, k - e, 10))
			return fail_at(p, s, "invalid float '%s'", buf);
	}
	if (k != len)
		return fail_at(p, s, "invalid value '%s'", buf);
	n->kind = TOML_FLOAT;
	return (n->str = strdup(buf)) ? 0 : -ENOMEM;
}

static void close_inline(struct toml_node *n)
{
	n->flags |= TOML_F_INLINE;
	for (size_t i = 0; i < n->n; i++)
		if (n->kids[i]->kind == TOML_TABLE || n->kids[i]->kind == TOML_ARRAY)
			close_inline(n->kids[i]);
}

static int insert_keyval(struct parser *p, struct toml_node *t, struct key *k,
			 struct toml_node *v, bool building_inline);

static int array(struct parser *p, struct toml_node *n)
{
	n->kind = TOML_ARRAY;
	take(p);
	for (;;) {
		struct toml_node *v;
		int r;

		skip_ws_nl(p);
		if (peek(p) == ']')
			break;
		if (peek(p) < 0)
			return fail_at(p, n->start, "unclosed array");
		if ((r = value(p, &v)) < 0)
			return r;
		if (toml_add_kid(n, v) < 0) {
			toml_free(v);
			return -ENOMEM;
		}
		skip_ws_nl(p);
		if (peek(p) == ',') {
			take(p);
			continue;
		}
		if (peek(p) != ']')
			return peek(p) < 0 ? fail_at(p, n->start, "unclosed array") :
					     fail(p, "expected ',' or ']' in array");
		break;
	}
	take(p);
	close_inline(n);
	return 0;
}

static int inline_table(struct parser *p, struct toml_node *n)
{
	n->kind = TOML_TABLE;
	take(p);
	skip_ws(p);
	if (peek(p) == '}') {
		take(p);
		close_inline(n);
		return 0;
	}
	for (;;) {
		struct key k;
		struct toml_node *v;
		int r;

		skip_ws(p);
		if (peek(p) < 0 || at_newline(p))
			return fail_at(p, n->start, "unclosed inline table (it must fit on one line)");
		if ((r = key(p, &k)) < 0) {
			key_free(&k);
			return r;
		}
		skip_ws(p);
		if (peek(p) != '=') {
			key_free(&k);
			return fail(p, "expected '=' after a key");
		}
		take(p);
		skip_ws(p);
		if ((r = value(p, &v)) < 0) {
			key_free(&k);
			return r;
		}
		r = insert_keyval(p, n, &k, v, true);
		key_free(&k);
		if (r < 0)
			return r;
		skip_ws(p);
		if (peek(p) == ',') {
			take(p);
			continue;
		}
		if (peek(p) == '}') {
			take(p);
			break;
		}
		return peek(p) < 0 || at_newline(p) ?
			fail_at(p, n->start, "unclosed inline table (it must fit on one line)") :
			fail(p, "expected ',' or '}' in inline table");
	}
	close_inline(n);
	return 0;
}

static int value(struct parser *p, struct toml_node **out)
{
	struct toml_node *n = toml_new(TOML_STRING, NULL);
	int c = peek(p), r;

	if (!n)
		return -ENOMEM;
	mark(p, n);
	if (++p->depth > TOML_MAX_DEPTH) {
		r = fail(p, "nested deeper than %d", TOML_MAX_DEPTH);
	} else if (c == '"' || c == '\'') {
		struct sb b = { 0 };
		r = string(p, true, &b);
		if (r == 0 && !b.b)
			toml_sb_puts(&b, "");
		if (r == 0 && b.oom)
			r = -ENOMEM;
		n->str = b.b;
		if (r < 0) {
			free(b.b);
			n->str = NULL;
		}
	} else if (c == '[') {
		r = array(p, n);
	} else if (c == '{') {
		r = inline_table(p, n);
	} else if (starts(p, "true") && !toml_bare_char(peek_at(p, 4))) {
		n->kind = TOML_BOOL;
		n->boolean = true;
		p->pos += 4;
		r = 0;
	} else if (starts(p, "false") && !toml_bare_char(peek_at(p, 5))) {
		n->kind = TOML_BOOL;
		p->pos += 5;
		r = 0;
	} else if (c < 0 || at_newline(p) || c == '#') {
		r = fail(p, "expected a value");
	} else {
		r = number(p, n);
	}
	p->depth--;
	if (r < 0) {
		toml_free(n);
		return r;
	}
	n->end = p->pos;
	*out = n;
	return 0;
}

/* A dotted key's parents, created as needed, inside table t. */
static int walk_dotted(struct parser *p, struct toml_node **t, struct key *k,
		       bool building_inline)
{
	char where[512];

	for (int i = 0; i + 1 < k->n; i++) {
		struct toml_node *c = toml_get(*t, k->part[i]);
		if (!c) {
			if (!(c = toml_new(TOML_TABLE, k->part[i])))
				return -ENOMEM;
			c->flags = TOML_F_DOTTED;
			c->line = p->line;
			c->start = c->end = k->pos;
			if (toml_add_kid(*t, c) < 0) {
				toml_free(c);
				return -ENOMEM;
			}
		} else if (c->kind != TOML_TABLE || (c->flags & TOML_F_HEADER) ||
			   ((c->flags & TOML_F_INLINE) && !building_inline)) {
			key_text(k, i + 1, where, sizeof(where));
			return fail_at(p, k->pos, "key '%s' is already defined as %s (line %d)",
				       where, c->kind != TOML_TABLE ? "a value" :
				       (c->flags & TOML_F_INLINE) ? "an inline table" : "a table",
				       c->line);
		}
		*t = c;
	}
	return 0;
}

static int insert_keyval(struct parser *p, struct toml_node *t, struct key *k,
			 struct toml_node *v, bool building_inline)
{
	char where[512];
	int r;

	if ((r = walk_dotted(p, &t, k, building_inline)) < 0) {
		toml_free(v);
		return r;
	}
	if (toml_get(t, k->part[k->n - 1])) {
		key_text(k, k->n, where, sizeof(where));
		toml_free(v);
		return fail_at(p, k->pos, "duplicate key '%s' (line %d)", where,
			       toml_get(t, k->part[k->n - 1])->line);
	}
	if (!(v->key = strdup(k->part[k->n - 1])) || toml_add_kid(t, v) < 0) {
		toml_free(v);
		return -ENOMEM;
	}
	/* A value's line is where its key is. */
	return 0;
}

static int header(struct parser *p)
{
	bool aot = peek_at(p, 1) == '[';
	size_t at = p->pos;
	struct toml_node *t = p->root, *c;
	char where[512];
	struct key k;
	int r;

	if (p->first_header == p->len)
		p->first_header = p->line_start;
	take(p);
	if (aot)
		take(p);
	skip_ws(p);
	if ((r = key(p, &k)) < 0)
		goto out;
	if (peek(p) != ']' || (aot && peek_at(p, 1) != ']')) {
		r = fail(p, "expected '%s' to close the table header", aot ? "]]" : "]");
		goto out;
	}
	take(p);
	if (aot)
		take(p);
	key_text(&k, k.n, where, sizeof(where));
	for (int i = 0; i + 1 < k.n; i++) {
		c = toml_get(t, k.part[i]);
		if (!c) {
			r = -ENOMEM;
			if (!(c = toml_new(TOML_TABLE, k.part[i])) || toml_add_kid(t, c) < 0) {
				toml_free(c);
				goto out;
			}
			c->line = p->line;
		} else if (c->kind == TOML_ARRAY && (c->flags & TOML_F_AOT) && c->n) {
			c = c->kids[c->n - 1];
		} else if (c->kind != TOML_TABLE || (c->flags & TOML_F_INLINE)) {
			r = fail_at(p, at, "[%s]: '%s' is already a value (line %d)", where,
				    k.part[i], c->line);
			goto out;
		}
		t = c;
	}
	c = toml_get(t, k.part[k.n - 1]);
	if (aot) {
		struct toml_node *e;
		if (!c) {
			r = -ENOMEM;
			if (!(c = toml_new(TOML_ARRAY, k.part[k.n - 1])) || toml_add_kid(t, c) < 0) {
				toml_free(c);
				goto out;
			}
			c->flags = TOML_F_AOT;
			c->line = p->line;
			c->start = at;
		} else if (c->kind != TOML_ARRAY || !(c->flags & TOML_F_AOT)) {
			r = fail_at(p, at, "[[%s]]: already defined as %s (line %d)", where,
				    c->kind == TOML_TABLE ? "a table" : "a value", c->line);
			goto out;
		}
		r = -ENOMEM;
		if (!(e = toml_new(TOML_TABLE, NULL)) || toml_add_kid(c, e) < 0) {
			toml_free(e);
			goto out;
		}
		e->flags = TOML_F_HEADER;
		e->line = p->line;
		e->start = at;
		p->cur = e;
	} else {
		if (!c) {
			r = -ENOMEM;
			if (!(c = toml_new(TOML_TABLE, k.part[k.n - 1])) || toml_add_kid(t, c) < 0) {
				toml_free(c);
				goto out;
			}
		} else if (c->kind != TOML_TABLE ||
			   (c->flags & (TOML_F_HEADER | TOML_F_DOTTED | TOML_F_INLINE))) {
			r = fail_at(p, at, "[%s]: %s (line %d)", where,
				    c->kind != TOML_TABLE ? "already a value" :
				    "table defined twice", c->line);
			goto out;
		}
		c->flags |= TOML_F_HEADER;
		c->line = p->line;
		c->start = at;
		p->cur = c;
	}
	r = end_of_line(p);
out:
	key_free(&k);
	return r;
}

static int keyval(struct parser *p)
{
	struct toml_node *v;
	struct key k;
	int line = p->line, col = (int)(p->pos - p->line_start) + 1, r;

	if ((r = key(p, &k)) < 0)
		goto out;
	skip_ws(p);
	if (peek(p) != '=') {
		r = fail(p, "expected '=' after the key");
		goto out;
	}
	take(p);
	skip_ws(p);
	if ((r = value(p, &v)) < 0)
		goto out;
	v->line = line;
	v->col = col;
	if ((r = insert_keyval(p, p->cur, &k, v, false)) < 0)
		goto out;
	r = end_of_line(p);
out:
	key_free(&k);
	return r;
}

int toml_parse(const char *text, size_t len, struct toml_doc *doc, struct toml_error *err)
{
	struct parser p = { .s = text, .len = len, .line = 1, .err = err, .first_header = len };
	int r;

	memset(err, 0, sizeof(*err));
	doc->root = NULL;
	doc->first_header = len;
	if (len > TOML_MAX_INPUT)
		return fail_at(&p, 0, "document too large (%zu bytes, at most %u)", len,
			       TOML_MAX_INPUT);
	if ((r = check_encoding(&p)) < 0)
		return r;
	if (!(p.root = toml_new(TOML_TABLE, NULL)))
		return -ENOMEM;
	p.root->line = 1;
	p.cur = p.root;
	while (p.pos < p.len) {
		int c;
		skip_ws(&p);
		c = peek(&p);
		if (c < 0)
			break;
		if (c == '#')
			skip_comment(&p);
		else if (at_newline(&p))
			take_newline(&p);
		else if (c == '[')
			r = header(&p);
		else
			r = keyval(&p);
		if (r < 0) {
			toml_free(p.root);
			return r;
		}
	}
	p.root->end = len;
	doc->root = p.root;
	doc->first_header = p.first_header;
	return 0;
}

