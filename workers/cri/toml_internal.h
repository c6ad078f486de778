/* Shared by toml_node.c, toml_parse.c and toml_write.c; not API. */
#ifndef MOKKA_WORKERS_CRI_TOML_INTERNAL_H
#define MOKKA_WORKERS_CRI_TOML_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "workers/cri/toml.h"

/* A growing NUL-terminated buffer; oom sticks once set. */
struct sb {
	char *b;
	size_t n, cap;
	bool oom, too_deep;
};

void toml_sb_putn(struct sb *s, const char *p, size_t n);
void toml_sb_puts(struct sb *s, const char *p);
void toml_sb_putc(struct sb *s, char c);
void toml_sb_printf(struct sb *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Append kid to a table or array (no key check); 0 or -ENOMEM. */
int toml_add_kid(struct toml_node *t, struct toml_node *kid);

/* A bare key character: A-Z a-z 0-9 _ - */
static inline bool toml_bare_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

#endif
