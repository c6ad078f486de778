/* A TOML parser and writer for containerd configurations: tables,
 * arrays of tables, dotted and quoted keys, basic/literal (multi-line)
 * strings, integers (decimal, hex, octal, binary), floats, booleans,
 * date-times (kept as text), arrays and inline tables, comments.  It
 * rejects what TOML 1.0 rejects that containerd's parser also refuses
 * (duplicate keys, tables defined twice, bad escapes, unclosed brackets)
 * so a config we write is one containerd loads.
 *
 * The tree keeps each value's byte span in the source, so a caller can
 * edit one value in place and leave every other byte (comments, layout)
 * alone. */
#ifndef MOKKA_WORKERS_CRI_TOML_H
#define MOKKA_WORKERS_CRI_TOML_H

#include <stdbool.h>
#include <stddef.h>

#define TOML_MAX_INPUT (1u << 20)
#define TOML_MAX_DEPTH 64

enum toml_kind {
	TOML_TABLE, TOML_ARRAY, TOML_STRING, TOML_INT, TOML_FLOAT, TOML_BOOL, TOML_DATETIME,
};

enum {
	TOML_F_HEADER = 1,	/* defined by a [header] */
	TOML_F_DOTTED = 2,	/* created by a dotted key */
	TOML_F_INLINE = 4,	/* an inline table or array value: closed */
	TOML_F_AOT = 8,		/* an array of tables ([[header]]) */
};

struct toml_node {
	enum toml_kind kind;
	char *key;			/* member name; NULL for array elements and root */
	char *str;			/* STRING value; FLOAT/DATETIME source text */
	long long num;			/* INT */
	bool boolean;			/* BOOL */
	struct toml_node **kids;	/* TABLE members in order; ARRAY elements */
	size_t n, cap;
	unsigned flags;
	int line, col;			/* where it was defined (1-based) */
	size_t start, end;		/* value bytes [start, end) in the source */
};

struct toml_error {
	int line, col;
	char msg[160];
};

struct toml_doc {
	struct toml_node *root;
	size_t first_header;		/* offset of the first [header] line, or len */
};

/* 0, or -EINVAL with where and why in err (-ENOMEM on allocation failure). */
int toml_parse(const char *text, size_t len, struct toml_doc *doc, struct toml_error *err);
void toml_doc_free(struct toml_doc *doc);
void toml_free(struct toml_node *n);

/* Member of a table (NULL when t is not a table or has none). */
struct toml_node *toml_get(const struct toml_node *t, const char *key);
/* Member path: keys NULL-terminated. */
struct toml_node *toml_getv(const struct toml_node *t, const char *const keys[]);

/* Building trees to write. */
struct toml_node *toml_new(enum toml_kind kind, const char *key);
struct toml_node *toml_new_string(const char *key, const char *value);
struct toml_node *toml_new_bool(const char *key, bool value);
struct toml_node *toml_clone(const struct toml_node *n, const char *key);
/* Add to a table, replacing a member of the same key (its position kept),
 * or append to an array.  Takes ownership of kid; -ENOMEM. */
int toml_put(struct toml_node *t, struct toml_node *kid);
/* The member table named key, created (appended) when absent or not a
 * table; NULL on allocation failure. */
struct toml_node *toml_table(struct toml_node *t, const char *key);

/* The tree as a TOML document: members of a table first, then its
 * sub-tables as [a."b.c"] headers (empty tables and tables with values
 * get a header), arrays of tables as [[...]], tables inside plain arrays
 * inline.  Deterministic: same tree, same bytes.  0, -ENOMEM, or -E2BIG
 * for tables nested deeper than TOML_MAX_DEPTH. */
int toml_write(const struct toml_node *root, char **out, size_t *len);

/* A key as written in a header or key/value line (bare when it can be),
 * cut to fit buf: for messages (the writer has no such limit). */
void toml_key_text(const char *key, char *buf, size_t len);

#endif
