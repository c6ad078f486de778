/* yaml_lite parser: indentation-driven recursive descent over the buffer.
 * Every block parser starts at the first content character of a line (or
 * just after "- ") and returns with the cursor at the first content
 * character of the next content line; p->ind holds that line's
 * indentation (-1 at the end), which is how parents know to stop. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* memmem */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yaml_lite_internal.h"

static void newline(struct yp *p)
{
	if (cur(p) == '\r') {
		if (ahead(p, 1) != '\n') {
			yp_fail(p, "bare carriage return");
			return;
		}
		p->pos++;
	}
	if (cur(p) == '\n')
		p->pos++;
	p->line++;
	p->line_start = p->pos;
}

/* From a line start: skip blank and comment lines, stop on content. */
static void next_content(struct yp *p)
{
	while (!p->failed) {
		size_t i = p->pos;

		if (i >= p->len) {
			p->ind = -1;
			return;
		}
		while (i < p->len && p->s[i] == ' ')
			i++;
		p->pos = i;
		if (cur(p) == '\t') {
			skip_blanks(p);
			if (!at_line_end(p)) {
				yp_fail_at(p, p->line, (unsigned)(i - p->line_start + 1),
					"tab in indentation");
				return;
			}
		}
		if (at_line_end(p)) {
			while (!is_eol(cur(p)))
				p->pos++;
			if (cur(p) == 0) {
				p->ind = -1;
				return;
			}
			newline(p);
			continue;
		}
		p->ind = (int)(p->pos - p->line_start);
		return;
	}
}

/* After a value: only blanks and a comment may follow on the line. */
static void end_line(struct yp *p)
{
	skip_blanks(p);
	if (at_comment(p))
		while (!is_eol(cur(p)))
			p->pos++;
	if (!is_eol(cur(p))) {
		yp_fail(p, "unexpected content after the value");
		return;
	}
	if (cur(p))
		newline(p);
	next_content(p);
}

static bool at_seq_item(const struct yp *p)
{
	return cur(p) == '-' && (is_blank(ahead(p, 1)) || is_eol(ahead(p, 1)));
}

static struct yl_node *parse_flow(struct yp *p);

static void skip_flow_space(struct yp *p)
{
	while (!p->failed) {
		if (is_blank(cur(p)))
			p->pos++;
		else if (at_comment(p))
			while (!is_eol(cur(p)))
				p->pos++;
		else if (cur(p) == '\n' || cur(p) == '\r')
			newline(p);
		else
			return;
	}
}

static struct yl_node *flow_value(struct yp *p)
{
	struct yl_node *n;
	char c = cur(p);

	if (c == '[' || c == '{')
		return parse_flow(p);
	if (c == '"' || c == '\'')
		return yp_parse_quoted(p);
	if (c == 0) {
		yp_fail(p, "unterminated flow collection");
		return NULL;
	}
	n = yp_parse_plain(p, true);
	if (!n || !at_line_end(p))
		return n;
	/* Ended by the line: only an indicator may follow, else it would be
	 * a multi-line scalar (which libyaml folds and we do not). */
	skip_flow_space(p);
	c = cur(p);
	if (c && c != ',' && c != ']' && c != '}' &&
	    !(c == ':' && (is_blank(ahead(p, 1)) || is_eol(ahead(p, 1))))) {
		yp_fail(p, "multi-line plain scalars are not supported");
		yl_free(n);
		return NULL;
	}
	return n;
}

static bool has_key(const struct yl_node *map, const char *key)
{
	return yl_get(map, key) != NULL;
}

/* One "key: value" of a flow mapping; the value may be empty (null). */
static bool flow_pair(struct yp *p, struct yl_node *map)
{
	unsigned line = p->line, col = (unsigned)(p->pos - p->line_start + 1);
	struct yl_node *k = flow_value(p), *v;

	if (!k)
		return false;
	if (k->kind == YL_MAP || k->kind == YL_SEQ) {
		yl_free(k);
		yp_fail_at(p, line, col, "collections as keys are not supported");
		return false;
	}
	skip_flow_space(p);
	if (cur(p) != ':') {
		yl_free(k);
		yp_fail(p, "expected ':' in flow mapping");
		return false;
	}
	p->pos++;
	skip_flow_space(p);
	v = cur(p) == ',' || cur(p) == '}' ? yp_node_new(p, YL_NULL) : flow_value(p);
	if (v) {
		v->key = k->str ? k->str : strdup("");
		k->str = NULL;
	}
	yl_free(k);
	if (!v || !v->key) {
		yl_free(v);
		if (v)
			yp_fail(p, "out of memory");
		return false;
	}
	if (has_key(map, v->key)) {
		yp_fail_at(p, line, col, "duplicate key '%.60s'", v->key);
		yl_free(v);
		return false;
	}
	if (yl_append(map, v) < 0) {
		yl_free(v);
		yp_fail(p, "out of memory");
		return false;
	}
	return true;
}

static struct yl_node *parse_flow(struct yp *p)
{
	unsigned line = p->line, col = (unsigned)(p->pos - p->line_start + 1);
	bool is_map = cur(p) == '{';
	char close = is_map ? '}' : ']';
	struct yl_node *n;

	if (++p->depth > YL_MAX_DEPTH) {
		yp_fail(p, "nesting too deep (limit %d)", YL_MAX_DEPTH);
		return NULL;
	}
	n = yp_node_new(p, is_map ? YL_MAP : YL_SEQ);
	if (!n)
		return NULL;
	p->pos++;
	skip_flow_space(p);
	while (!p->failed && cur(p) != close) {
		if (is_map) {
			if (!flow_pair(p, n))
				break;
		} else {
			struct yl_node *v = flow_value(p);

			if (!v)
				break;
			if (yl_append(n, v) < 0) {
				yl_free(v);
				yp_fail(p, "out of memory");
				break;
			}
		}
		skip_flow_space(p);
		if (cur(p) == ',') {
			p->pos++;
			skip_flow_space(p);
		} else if (cur(p) != close) {
			if (cur(p))
				yp_fail(p, "expected ',' or '%c'", close);
			else
				yp_fail_at(p, line, col, "unterminated flow collection");
		}
	}
	if (p->failed) {
		yl_free(n);
		return NULL;
	}
	p->pos++;
	p->depth--;
	return n;
}

static struct yl_node *parse_inline(struct yp *p)
{
	char c = cur(p);

	if (c == '"' || c == '\'')
		return yp_parse_quoted(p);
	if (c == '[' || c == '{')
		return parse_flow(p);
	return yp_parse_plain(p, false);
}

/* Does the content at the cursor read "key:" (followed by blank or EOL)? */
static bool at_key(const struct yp *p)
{
	size_t i = p->pos;
	char c = cur(p);

	if (c == '"' || c == '\'') {
		for (i++; i < p->len && !is_eol(p->s[i]); i++) {
			if (c == '"' && p->s[i] == '\\' && i + 1 < p->len) {
				i++;
			} else if (p->s[i] == c) {
				if (c == '\'' && i + 1 < p->len && p->s[i + 1] == '\'') {
					i++;
					continue;
				}
				break;
			}
		}
		if (i >= p->len || p->s[i] != c)
			return false;
		for (i++; i < p->len && is_blank(p->s[i]); i++)
			;
		return i < p->len && p->s[i] == ':' &&
		       (i + 1 >= p->len || is_blank(p->s[i + 1]) || is_eol(p->s[i + 1]));
	}
	if (c == '[' || c == '{')
		return false;
	for (; i < p->len && !is_eol(p->s[i]); i++) {
		if (p->s[i] == '#' && i > p->pos && is_blank(p->s[i - 1]))
			return false;
		if (p->s[i] == ':' && (i + 1 >= p->len || is_blank(p->s[i + 1]) ||
				       is_eol(p->s[i + 1])))
			return true;
	}
	return false;
}

static struct yl_node *parse_node(struct yp *p, int ind);
static struct yl_node *parse_seq(struct yp *p, int ind);

/* A null for an empty value, placed where the value would have started. */
static struct yl_node *empty_value(struct yp *p, unsigned line, unsigned col)
{
	struct yl_node *v = yp_node_new(p, YL_NULL);

	if (v)
		v->line = line, v->col = col;
	return v;
}

/* The value after "key:" on the key's line or on the lines below it. */
static struct yl_node *map_value(struct yp *p, int ind)
{
	unsigned line = p->line, col = (unsigned)(p->pos - p->line_start + 1);
	struct yl_node *v;

	skip_blanks(p);
	if (!at_line_end(p)) {
		v = parse_inline(p);
		if (v)
			end_line(p);
		return v;
	}
	end_line(p);
	if (p->failed)
		return NULL;
	if (p->ind > ind)
		return parse_node(p, p->ind);
	/* "key:" then "- item" at the key's own indentation. */
	if (p->ind == ind && at_seq_item(p))
		return parse_seq(p, ind);
	return empty_value(p, line, col);
}

/* A block mapping key, plain or quoted; leaves the cursor on its ':'. */
static char *parse_key(struct yp *p)
{
	size_t start = p->pos;
	char *key;

	if (cur(p) == '"' || cur(p) == '\'') {
		struct yl_node *k = yp_parse_quoted(p);

		if (!k)
			return NULL;
		key = k->str;
		k->str = NULL;
		yl_free(k);
		skip_blanks(p);
		return key;
	}
	if (yp_bad_start(p, false))
		return NULL;
	while (!(cur(p) == ':' && (is_blank(ahead(p, 1)) || is_eol(ahead(p, 1)))))
		p->pos++;	/* at_key found the separator on this line */
	size_t end = p->pos;
	while (end > start && is_blank(p->s[end - 1]))
		end--;
	key = strndup(p->s + start, end - start);
	if (!key)
		yp_fail(p, "out of memory");
	return key;
}

static bool at_marker(const struct yp *p, const char *m)
{
	return p->ind == 0 && p->pos + 3 <= p->len && !memcmp(p->s + p->pos, m, 3) &&
	       (is_blank(ahead(p, 3)) || is_eol(ahead(p, 3)));
}

static struct yl_node *parse_map(struct yp *p, int ind)
{
	struct yl_node *map = yp_node_new(p, YL_MAP);

	while (map && !p->failed) {
		unsigned line = p->line, col = (unsigned)(p->pos - p->line_start + 1);
		struct yl_node *v;
		char *key;

		if (at_marker(p, "---") || at_marker(p, "..."))
			break;	/* the document level reports it */
		if (!at_key(p)) {
			yp_fail(p, at_seq_item(p) ? "a sequence item is not allowed here"
					       : "expected 'key: value'");
			break;
		}
		key = parse_key(p);
		if (!key)
			break;
		p->pos++;	/* ':' (at_key made sure) */
		if (has_key(map, key)) {
			yp_fail_at(p, line, col, "duplicate key '%.60s'", key);
			free(key);
			break;
		}
		v = map_value(p, ind);
		if (!v) {
			free(key);
			break;
		}
		v->key = key;
		if (yl_append(map, v) < 0) {
			yl_free(v);
			yp_fail(p, "out of memory");
			break;
		}
		if (p->failed || p->ind < ind)
			break;
		if (p->ind > ind)
			yp_fail(p, "bad indentation");
	}
	if (p->failed) {
		yl_free(map);
		return NULL;
	}
	return map;
}

static struct yl_node *parse_seq(struct yp *p, int ind)
{
	struct yl_node *seq = yp_node_new(p, YL_SEQ), *v;

	while (seq && !p->failed) {
		p->pos++;	/* '-' */
		skip_blanks(p);
		if (at_line_end(p)) {
			unsigned line = p->line, col = (unsigned)(p->pos - p->line_start + 1);

			end_line(p);
			v = p->failed ? NULL : p->ind > ind ? parse_node(p, p->ind)
							    : empty_value(p, line, col);
		} else {
			/* "- key: v" and "- - x" start a block at this column. */
			p->ind = (int)(p->pos - p->line_start);
			v = parse_node(p, p->ind);
		}
		if (!v)
			break;
		if (yl_append(seq, v) < 0) {
			yl_free(v);
			yp_fail(p, "out of memory");
			break;
		}
		if (p->failed || p->ind < ind)
			break;
		if (p->ind > ind)
			yp_fail(p, "bad indentation");
		else if (!at_seq_item(p))
			break;
	}
	if (p->failed) {
		yl_free(seq);
		return NULL;
	}
	return seq;
}

/* depth counts the collections around a node, block or flow alike
 * (parse_flow counts its own), so whatever one form holds the other
 * does too: the emitter may write a block document in flow form. */
static struct yl_node *parse_node(struct yp *p, int ind)
{
	struct yl_node *n;
	bool block = at_seq_item(p) || at_key(p);

	if (block && ++p->depth > YL_MAX_DEPTH) {
		yp_fail(p, "nesting too deep (limit %d)", YL_MAX_DEPTH);
		return NULL;
	}
	if (at_seq_item(p)) {
		n = parse_seq(p, ind);
	} else if (at_key(p)) {
		n = parse_map(p, ind);
	} else {
		n = parse_inline(p);
		if (n)
			end_line(p);
	}
	if (block)
		p->depth--;
	return n;
}

/* Fails at byte offset at: finds its line and column first. */
static void refuse_at(struct yp *p, size_t at, const char *what)
{
	while (p->pos < at)
		if (p->s[p->pos++] == '\n')
			p->line++, p->line_start = p->pos;
	yp_fail(p, "%s", what);
}

struct yl_node *yl_parse(const char *buf, size_t len, struct yl_error *err)
{
	struct yp p = { .s = buf, .len = len, .line = 1, .err = err };
	const char *what = NULL, *bom;
	struct yl_node *root = NULL;
	bool started = false;	/* an explicit "---" opened the document */
	size_t bad;

	memset(err, 0, sizeof(*err));
	if (len > YL_MAX_INPUT) {
		yp_fail_at(&p, 1, 1, "document too large (%zu bytes, limit %u)", len,
			(unsigned)YL_MAX_INPUT);
		return NULL;
	}
	bad = yp_first_bad_char((const unsigned char *)buf, len, &what);
	if (bad < len) {
		refuse_at(&p, bad, what);
		return NULL;
	}
	if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
		p.pos = p.line_start = 3;
	/* A byte order mark only opens the stream (YAML 1.2 §5.2). */
	bom = memmem(buf + p.pos, len - p.pos, "\xef\xbb\xbf", 3);
	if (bom) {
		refuse_at(&p, (size_t)(bom - buf), "byte order mark inside the document");
		return NULL;
	}
	next_content(&p);
	if (!p.failed && at_marker(&p, "---")) {
		p.pos += 3;
		end_line(&p);
		started = true;
	}
	if (p.failed)
		return NULL;
	if (p.ind < 0)
		return yp_node_new(&p, YL_NULL);
	if (cur(&p) == '%') {
		yp_fail(&p, "directives are not supported");
		return NULL;
	}
	/* "---" then "...": an empty document, null (as libyaml reads it),
	 * not the scalar "..."; "..." with no document before it is none. */
	if (at_marker(&p, "...") && !started) {
		yp_fail(&p, "a document end marker without a document");
		return NULL;
	}
	if (at_marker(&p, "---")) {
		yp_fail(&p, "several documents are not supported");
		return NULL;
	}
	root = at_marker(&p, "...") ? yp_node_new(&p, YL_NULL) : parse_node(&p, p.ind);
	if (!p.failed && at_marker(&p, "...")) {
		p.pos += 3;
		end_line(&p);
		if (!p.failed && p.ind >= 0)
			yp_fail(&p, "content after the document end");
	}
	if (!p.failed && p.ind >= 0)
		yp_fail(&p, at_marker(&p, "---") ? "several documents are not supported"
					      : "unexpected content (bad indentation?)");
	if (p.failed) {
		yl_free(root);
		return NULL;
	}
	return root;
}

void yl_error_format(const struct yl_error *err, char *out, size_t size)
{
	snprintf(out, size, "%u:%u: %s", err->line, err->col, err->msg);
}
