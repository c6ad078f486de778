/* The overrides document as YAML text: mappings in block style, sequences
 * in flow style (yaml_lite reads both), scalars plain when plain is safe
 * in either context, else double-quoted with escapes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "overrides/overrides.h"

/* Plain in block and flow context alike: a conservative character set and
 * a start no YAML indicator can claim. */
static bool safe_plain(const char *s, size_t len)
{
	if (!len || len != strlen(s))
		return false;
	if (strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./+-") != len)
		return false;
	if ((s[0] == '-' || s[0] == '+' || s[0] == '.') && !(s[1] >= '0' && s[1] <= '9'))
		return false;
	return true;
}

/* Code points yaml_lite refuses raw in a document (yp_first_bad_char):
 * C1 controls (NEL), the Unicode line breaks, BOM and non-characters. */
static bool needs_escape(unsigned long cp)
{
	return (cp >= 0x80 && cp < 0xa0) || cp == 0x2028 || cp == 0x2029 || cp == 0xfeff ||
	       cp == 0xfffe || cp == 0xffff || (cp >= 0xd800 && cp <= 0xdfff);
}

/* The UTF-8 sequence at s (its length in *n); -1 when not one. */
static long utf8_at(const unsigned char *s, size_t left, size_t *n)
{
	unsigned c = s[0];
	size_t need = c >= 0xf0 && c <= 0xf7 ? 3 : c >= 0xe0 && c <= 0xef ? 2 :
		      c >= 0xc0 && c <= 0xdf ? 1 : 0;
	unsigned long cp = c & (0x3fu >> need);

	if (!need || need >= left)
		return -1;
	for (size_t k = 1; k <= need; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return -1;
		cp = cp << 6 | (s[k] & 0x3fu);
	}
	*n = need + 1;
	return (long)cp;
}

static void quoted(FILE *f, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	for (size_t i = 0; i < len;) {
		unsigned char c = s[i];
		size_t n = 1;
		long cp;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else if (c < 0x80 || (cp = utf8_at(s + i, len - i, &n)) < 0)
			fputc(c, f), n = 1;
		else if (needs_escape((unsigned long)cp))
			fprintf(f, cp > 0xffff ? "\\U%08lx" : "\\u%04lx", (unsigned long)cp);
		else
			fwrite(s + i, 1, n, f);
		i += n;
	}
	fputc('"', f);
}

static void key(FILE *f, const char *k)
{
	size_t n = strlen(k);

	/* Index keys are quoted as the reference writes them ("2"). */
	if (safe_plain(k, n) && strspn(k, "0123456789") != n)
		fputs(k, f);
	else
		quoted(f, k, n);
}

static void scalar(FILE *f, const struct yl_node *n)
{
	if (!n->quoted && safe_plain(n->str, n->len))
		fputs(n->str, f);
	else
		quoted(f, n->str, n->len);
}

static void flow(FILE *f, const struct yl_node *n)
{
	if (yl_is_null(n)) {
		fputs("null", f);
		return;
	}
	switch (n->kind) {
	case YL_SCALAR:
		scalar(f, n);
		return;
	case YL_SEQ:
	case YL_MAP:
		fputc(n->kind == YL_SEQ ? '[' : '{', f);
		for (size_t i = 0; i < n->n; i++) {
			if (i)
				fputs(", ", f);
			if (n->kind == YL_MAP) {
				key(f, n->kids[i]->key);
				fputs(": ", f);
			}
			flow(f, n->kids[i]);
		}
		fputc(n->kind == YL_SEQ ? ']' : '}', f);
		return;
	default:
		fputs("null", f);
	}
}

static void block(FILE *f, const struct yl_node *map, int indent)
{
	for (size_t i = 0; i < map->n; i++) {
		const struct yl_node *v = map->kids[i];

		fprintf(f, "%*s", indent, "");
		key(f, v->key);
		if (!yl_is_null(v) && v->kind == YL_MAP && v->n) {
			fputs(":\n", f);
			block(f, v, indent + 2);
			continue;
		}
		fputs(": ", f);
		flow(f, v);
		fputc('\n', f);
	}
}

int ovr_emit(const struct yl_node *doc, char **out, size_t *len)
{
	FILE *f = open_memstream(out, len);

	if (!f)
		return -ENOMEM;
	if (!yl_is_null(doc) && doc->kind == YL_MAP && doc->n) {
		block(f, doc, 0);
	} else {
		flow(f, doc);
		fputc('\n', f);
	}
	if (fclose(f) != 0) {
		free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}
