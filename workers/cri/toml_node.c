/* TOML trees: nodes, lookups, building (see toml.h), and the string
 * buffer the parser and writer share. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/cri/toml_internal.h"

void toml_sb_putn(struct sb *s, const char *p, size_t n)
{
	if (s->oom)
		return;
	if (s->n + n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 64;
		while (cap < s->n + n + 1)
			cap *= 2;
		char *b = realloc(s->b, cap);
		if (!b) {
			s->oom = true;
			return;
		}
		s->b = b;
		s->cap = cap;
	}
	memcpy(s->b + s->n, p, n);
	s->n += n;
	s->b[s->n] = '\0';
}

void toml_sb_puts(struct sb *s, const char *p)
{
	toml_sb_putn(s, p, strlen(p));
}

void toml_sb_putc(struct sb *s, char c)
{
	toml_sb_putn(s, &c, 1);
}

void toml_sb_printf(struct sb *s, const char *fmt, ...)
{
	char buf[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		toml_sb_putn(s, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}


struct toml_node *toml_new(enum toml_kind kind, const char *key)
{
	struct toml_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->kind = kind;
	if (key && !(n->key = strdup(key))) {
		free(n);
		return NULL;
	}
	return n;
}

void toml_free(struct toml_node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++)
		toml_free(n->kids[i]);
	free(n->kids);
	free(n->key);
	free(n->str);
	free(n);
}

void toml_doc_free(struct toml_doc *doc)
{
	toml_free(doc->root);
	doc->root = NULL;
}

int toml_add_kid(struct toml_node *t, struct toml_node *kid)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 4;
		struct toml_node **k = realloc(t->kids, cap * sizeof(*k));
		if (!k)
			return -ENOMEM;
		t->kids = k;
		t->cap = cap;
	}
	t->kids[t->n++] = kid;
	return 0;
}

struct toml_node *toml_get(const struct toml_node *t, const char *key)
{
	if (!t || t->kind != TOML_TABLE)
		return NULL;
	for (size_t i = 0; i < t->n; i++)
		if (t->kids[i]->key && strcmp(t->kids[i]->key, key) == 0)
			return t->kids[i];
	return NULL;
}

struct toml_node *toml_getv(const struct toml_node *t, const char *const keys[])
{
	struct toml_node *n = (struct toml_node *)t;

	for (int i = 0; n && keys[i]; i++)
		n = toml_get(n, keys[i]);
	return n;
}

struct toml_node *toml_new_string(const char *key, const char *value)
{
	struct toml_node *n = toml_new(TOML_STRING, key);

	if (n && !(n->str = strdup(value))) {
		toml_free(n);
		return NULL;
	}
	return n;
}

struct toml_node *toml_new_bool(const char *key, bool value)
{
	struct toml_node *n = toml_new(TOML_BOOL, key);

	if (n)
		n->boolean = value;
	return n;
}

struct toml_node *toml_clone(const struct toml_node *src, const char *key)
{
	struct toml_node *n = toml_new(src->kind, key);

	if (!n)
		return NULL;
	n->num = src->num;
	n->boolean = src->boolean;
	n->flags = src->flags;
	n->line = src->line;
	n->col = src->col;
	if (src->str && !(n->str = strdup(src->str)))
		goto oom;
	for (size_t i = 0; i < src->n; i++) {
		struct toml_node *k = toml_clone(src->kids[i], src->kids[i]->key);
		if (!k || toml_add_kid(n, k) < 0) {
			toml_free(k);
			goto oom;
		}
	}
	return n;
oom:
	toml_free(n);
	return NULL;
}

int toml_put(struct toml_node *t, struct toml_node *kid)
{
	if (t->kind == TOML_TABLE && kid->key) {
		for (size_t i = 0; i < t->n; i++)
			if (t->kids[i]->key && strcmp(t->kids[i]->key, kid->key) == 0) {
				toml_free(t->kids[i]);
				t->kids[i] = kid;
				return 0;
			}
	}
	return toml_add_kid(t, kid);
}

struct toml_node *toml_table(struct toml_node *t, const char *key)
{
	struct toml_node *n = toml_get(t, key);

	if (n && n->kind == TOML_TABLE)
		return n;
	if (!(n = toml_new(TOML_TABLE, key)))
		return NULL;
	if (toml_put(t, n) < 0) {
		toml_free(n);
		return NULL;
	}
	return n;
}

