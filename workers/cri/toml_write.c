/* The TOML writer: tree -> text, deterministic (see toml.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/cri/toml_internal.h"

static void put_quoted(struct sb *b, const char *s)
{
	toml_sb_putc(b, '"');
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		switch (*c) {
		case '"': toml_sb_puts(b, "\\\""); break;
		case '\\': toml_sb_puts(b, "\\\\"); break;
		case '\b': toml_sb_puts(b, "\\b"); break;
		case '\t': toml_sb_puts(b, "\\t"); break;
		case '\n': toml_sb_puts(b, "\\n"); break;
		case '\f': toml_sb_puts(b, "\\f"); break;
		case '\r': toml_sb_puts(b, "\\r"); break;
		default:
			if (*c < 0x20 || *c == 0x7f)
				toml_sb_printf(b, "\\u%04x", *c);
			else
				toml_sb_putc(b, (char)*c);
		}
	}
	toml_sb_putc(b, '"');
}

/* Straight into the output: a key has no length limit but the input's. */
static void put_key(struct sb *b, const char *key)
{
	bool bare = *key != '\0';

	for (const char *c = key; *c && bare; c++)
		bare = toml_bare_char((unsigned char)*c);
	if (bare)
		toml_sb_puts(b, key);
	else
		put_quoted(b, key);
}

void toml_key_text(const char *key, char *buf, size_t len)
{
	struct sb b = { 0 };

	put_key(&b, key);
	snprintf(buf, len, "%s", b.b ? b.b : "\"\"");
	free(b.b);
}

static bool is_section(const struct toml_node *n)
{
	return n->kind == TOML_TABLE || (n->kind == TOML_ARRAY && (n->flags & TOML_F_AOT));
}

static void put_value(struct sb *b, const struct toml_node *n)
{
	switch (n->kind) {
	case TOML_STRING: put_quoted(b, n->str); break;
	case TOML_INT: toml_sb_printf(b, "%lld", n->num); break;
	case TOML_BOOL: toml_sb_puts(b, n->boolean ? "true" : "false"); break;
	case TOML_FLOAT:
	case TOML_DATETIME: toml_sb_puts(b, n->str); break;
	case TOML_ARRAY:
		toml_sb_putc(b, '[');
		for (size_t i = 0; i < n->n; i++) {
			toml_sb_puts(b, i ? ", " : "");
			put_value(b, n->kids[i]);
		}
		toml_sb_putc(b, ']');
		break;
	case TOML_TABLE:
		toml_sb_putc(b, '{');
		for (size_t i = 0; i < n->n; i++) {
			toml_sb_puts(b, i ? ", " : " ");
			put_key(b, n->kids[i]->key);
			toml_sb_puts(b, " = ");
			put_value(b, n->kids[i]);
		}
		toml_sb_puts(b, n->n ? " }" : "}");
		break;
	}
}

static void indent(struct sb *b, int depth)
{
	for (int i = 1; i < depth; i++)
		toml_sb_puts(b, "  ");
}

static void put_header(struct sb *b, const char *const *path, int depth, bool aot)
{
	if (b->n)
		toml_sb_putc(b, '\n');
	indent(b, depth);
	toml_sb_puts(b, aot ? "[[" : "[");
	for (int i = 0; i < depth; i++) {
		toml_sb_puts(b, i ? "." : "");
		put_key(b, path[i]);
	}
	toml_sb_puts(b, aot ? "]]\n" : "]\n");
}

static void put_table(struct sb *b, const struct toml_node *t, const char **path, int depth)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct toml_node *k = t->kids[i];
		if (is_section(k))
			continue;
		indent(b, depth + 1);
		put_key(b, k->key);
		toml_sb_puts(b, " = ");
		put_value(b, k);
		toml_sb_putc(b, '\n');
	}
	if (depth >= TOML_MAX_DEPTH) {
		b->too_deep = true;
		return;
	}
	for (size_t i = 0; i < t->n; i++) {
		const struct toml_node *k = t->kids[i];
		bool values = false;

		if (!is_section(k))
			continue;
		path[depth] = k->key;
		if (k->kind == TOML_ARRAY) {
			for (size_t e = 0; e < k->n; e++) {
				put_header(b, path, depth + 1, true);
				if (k->kids[e]->kind == TOML_TABLE)
					put_table(b, k->kids[e], path, depth + 1);
			}
			continue;
		}
		for (size_t j = 0; j < k->n; j++)
			values |= !is_section(k->kids[j]);
		if (values || k->n == 0)
			put_header(b, path, depth + 1, false);
		put_table(b, k, path, depth + 1);
	}
}

int toml_write(const struct toml_node *root, char **out, size_t *len)
{
	const char *path[TOML_MAX_DEPTH + 1];
	struct sb b = { 0 };

	put_table(&b, root, path, 0);
	if (!b.b)
		toml_sb_puts(&b, "");
	if (b.oom || b.too_deep) {
		free(b.b);
		return b.oom ? -ENOMEM : -E2BIG;
	}
	*out = b.b;
	*len = b.n;
	return 0;
}
