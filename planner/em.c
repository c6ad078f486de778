/* Block-style YAML writer (see em.h). */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "planner/em.h"

int em_open(struct em *m, FILE *f)
{
	m->f = f;
	m->len = 0;
	m->depth = 0;
	m->err = 0;
	return 0;
}

static void drain(struct em *m)
{
	if (m->len && fwrite_unlocked(m->buf, 1, m->len, m->f) != m->len)
		m->err = -EIO;
	m->len = 0;
}

int em_close(struct em *m)
{
	drain(m);
	if (!m->err && (fflush(m->f) || ferror(m->f)))
		m->err = -EIO;
	return m->err;
}

static void put(struct em *m, const char *s, size_t len)
{
	if (m->len + len > sizeof(m->buf))
		drain(m);
	if (len > sizeof(m->buf)) {
		if (fwrite_unlocked(s, 1, len, m->f) != len)
			m->err = -EIO;
		return;
	}
	memcpy(m->buf + m->len, s, len);
	m->len += len;
}

static void puts_(struct em *m, const char *s)
{
	put(m, s, strlen(s));
}

static void indent(struct em *m, int col)
{
	static const char spaces[] = "                                                                ";

	put(m, spaces, (size_t)(col < 64 ? col : 64));
}

/* Would a plain scalar read back as something other than this string? */
static bool typed_word(const char *s)
{
	static const char *const words[] = { "true", "false", "yes", "no", "on", "off",
		"null", "y", "n", "~", NULL };
	size_t len = strlen(s);

	if (!len || strchr("0123456789+-.", *s))
		return true;
	if (len > 5 || !strchr("tTfFyYnNoO~", *s))
		return false;
	for (int i = 0; words[i]; i++)
		if (!strcasecmp(s, words[i]))
			return true;
	return false;
}

/* Plain is safe: no indicator first, no ": " / " #", no edge spaces or
 * control characters. */
static bool plain_ok(const char *s)
{
	size_t len = strlen(s);

	if (strchr("?:,[]{}#&*!|>'\"%@`", *s) || s[0] == ' ' || s[len - 1] == ' ' ||
	    s[len - 1] == ':')
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f || (*p == ':' && p[1] == ' ') ||
		    (*p == ' ' && p[1] == '#'))
			return false;
	return true;
}

static bool printable(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

static void double_quoted(struct em *m, const char *s)
{
	char esc[8];

	puts_(m, "\"");
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			put(m, esc, 2);
		} else if (*p < 0x20 || *p == 0x7f) {
			snprintf(esc, sizeof(esc), "\\x%02x", *p);
			puts_(m, esc);
		} else {
			put(m, (const char *)p, 1);
		}
	}
	puts_(m, "\"");
}

static void scalar(struct em *m, const char *s, bool plain)
{
	if (plain || (!typed_word(s) && plain_ok(s))) {
		puts_(m, s);
	} else if (typed_word(s) || !printable(s)) {
		double_quoted(m, s);
	} else {
		puts_(m, "'");
		for (const char *q; (q = strchr(s, '\'')); s = q + 1) {
			put(m, s, (size_t)(q - s));
			puts_(m, "''");
		}
		puts_(m, s);
		puts_(m, "'");
	}
}

/* Start an entry of the innermost container. */
static struct em_frame *entry(struct em *m)
{
	struct em_frame *f = &m->st[m->depth - 1];

	if (!f->n && f->pending_nl)
		puts_(m, "\n");
	if (f->n || !f->inline_first)
		indent(m, f->col);
	f->n++;
	return f;
}

static void push(struct em *m, char kind, int col, bool pending_nl, bool inline_first)
{
	if (m->depth == EM_DEPTH) {
		m->err = -EOVERFLOW;
		return;
	}
	m->st[m->depth++] = (struct em_frame){ kind, pending_nl, inline_first, col, 0 };
}

static void pop(struct em *m, const char *empty)
{
	struct em_frame *f;

	if (!m->depth)
		return;
	f = &m->st[--m->depth];
	if (!f->n)
		puts_(m, f->pending_nl ? (empty[0] == '{' ? " {}\n" : " []\n") : empty);
}

void em_doc(struct em *m)
{
	puts_(m, "---\n");
	m->depth = 0;
}

void em_doc_end(struct em *m)
{
	(void)m;
}

void em_map(struct em *m)
{
	struct em_frame *f;

	if (!m->depth)
		return push(m, 'm', 0, false, false);
	f = entry(m);			/* a mapping as a sequence item */
	puts_(m, "- ");
	push(m, 'm', f->col + 2, false, true);
}

void em_seq(struct em *m)
{
	struct em_frame *f;

	if (!m->depth)
		return push(m, 's', 0, false, false);
	f = entry(m);
	puts_(m, "-");
	push(m, 's', f->col + 2, true, false);
}

void em_end_map(struct em *m)
{
	pop(m, "{}\n");
}

void em_end_seq(struct em *m)
{
	pop(m, "[]\n");
}

void em_str(struct em *m, const char *s)
{
	entry(m);
	puts_(m, "- ");
	scalar(m, s, false);
	puts_(m, "\n");
}

void em_int(struct em *m, int64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%lld", (long long)v);
	entry(m);
	puts_(m, "- ");
	puts_(m, buf);
	puts_(m, "\n");
}

static void key(struct em *m, const char *k)
{
	entry(m);
	scalar(m, k, false);
	puts_(m, ":");
}

void em_kstr(struct em *m, const char *k, const char *val)
{
	if (!val)
		return;
	key(m, k);
	puts_(m, " ");
	scalar(m, val, false);
	puts_(m, "\n");
}

/* " <v>\n" without printf: integers are most of the output */
static size_t int_line(char buf[24], int64_t v)
{
	char tmp[24];
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
	size_t n = 0, len = 0;

	do
		tmp[n++] = (char)('0' + u % 10);
	while (u /= 10);
	buf[len++] = ' ';
	if (v < 0)
		buf[len++] = '-';
	while (n)
		buf[len++] = tmp[--n];
	buf[len++] = '\n';
	return len;
}

void em_kint(struct em *m, const char *k, int64_t v)
{
	char buf[24];
	size_t len = int_line(buf, v);

	key(m, k);
	put(m, buf, len);
}

void em_kbool(struct em *m, const char *k, int v)
{
	key(m, k);
	puts_(m, v ? " true\n" : " false\n");
}

void em_kmap(struct em *m, const char *k)
{
	int col = m->st[m->depth - 1].col;

	key(m, k);
	push(m, 'm', col + 2, true, false);
}

void em_kseq(struct em *m, const char *k)
{
	int col = m->st[m->depth - 1].col;

	key(m, k);
	push(m, 's', col, true, false);	/* kubectl style: "- " under the key */
}
