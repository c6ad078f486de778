/* yaml_lite internals shared by the block/flow parser (yaml_lite.c) and
 * the scalar readers (yaml_lite_scalar.c).  Not part of the interface. */
#ifndef MOKKA_YAML_LITE_INTERNAL_H
#define MOKKA_YAML_LITE_INTERNAL_H

#include <string.h>

#include "yaml_lite.h"

/* The cursor.  p->ind is the indentation of the current content line
 * (-1 at the end); the first error wins and stops the parse. */
struct yp {
	const char *s;
	size_t len, pos;
	unsigned line;
	size_t line_start;
	int ind;
	int depth;
	size_t nodes;
	struct yl_error *err;
	bool failed;
};

static inline char cur(const struct yp *p)
{
	return p->pos < p->len ? p->s[p->pos] : 0;
}

static inline char ahead(const struct yp *p, size_t off)
{
	return p->pos + off < p->len ? p->s[p->pos + off] : 0;
}

static inline bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static inline bool is_eol(char c)
{
	return c == 0 || c == '\n' || c == '\r';
}

static inline bool is_flow_indicator(char c)
{
	return c && strchr(",[]{}", c);
}

/* A '#' starts a comment at a line start or after a blank. */
static inline bool at_comment(const struct yp *p)
{
	return cur(p) == '#' && (p->pos == p->line_start || is_blank(p->s[p->pos - 1]));
}

static inline bool at_line_end(const struct yp *p)
{
	return is_eol(cur(p)) || at_comment(p);
}

static inline void skip_blanks(struct yp *p)
{
	while (is_blank(cur(p)))
		p->pos++;
}

__attribute__((format(printf, 4, 5)))
void yp_fail_at(struct yp *p, unsigned line, unsigned col, const char *fmt, ...);
#define yp_fail(p, ...) \
	yp_fail_at((p), (p)->line, (unsigned)((p)->pos - (p)->line_start + 1), __VA_ARGS__)
struct yl_node *yp_node_new(struct yp *p, enum yl_kind kind);
/* Quoted scalar at the cursor (one line only). */
struct yl_node *yp_parse_quoted(struct yp *p);
/* Plain scalar at the cursor; flow context also stops at , [ ] { } and ':'. */
struct yl_node *yp_parse_plain(struct yp *p, bool flow);
/* The offset of the first character a document may not hold, or len;
 * *what says why. */
size_t yp_first_bad_char(const unsigned char *s, size_t len, const char **what);
/* Fails (and returns true) on an indicator that cannot start a scalar here. */
bool yp_bad_start(struct yp *p, bool flow);

#endif
