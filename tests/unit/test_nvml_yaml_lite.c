/* yaml_lite, the mock NVML's own YAML reader: the subset the profiles use,
 * error positions, limits, conversions, and agreement with libyaml (the
 * supervisor's yaml_tree) on every shipped profile. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yaml_lite/yaml_lite.h"
#include "profile/yaml_tree.h"

static struct yl_node *ok(const char *s)
{
	struct yl_error e;
	struct yl_node *n = yl_parse(s, strlen(s), &e);

	cr_assert_not_null(n, "parse failed: %u:%u: %s\n%s", e.line, e.col, e.msg, s);
	return n;
}

static void bad(const char *s, unsigned line, unsigned col, const char *msg_part)
{
	struct yl_error e;
	struct yl_node *n = yl_parse(s, strlen(s), &e);

	cr_assert_null(n, "expected an error for:\n%s", s);
	cr_expect_eq(e.line, line, "line %u, want %u (%s) for:\n%s", e.line, line, e.msg, s);
	cr_expect_eq(e.col, col, "col %u, want %u (%s) for:\n%s", e.col, col, e.msg, s);
	cr_expect(strstr(e.msg, msg_part), "message '%s' lacks '%s'", e.msg, msg_part);
}

static const char *text(const struct yl_node *root, const char *path)
{
	const char *s = yl_text(yl_path(root, path));

	cr_assert_not_null(s, "no scalar at %s", path);
	return s;
}

Test(yaml_lite, block_structures)
{
	struct yl_node *r = ok("# head\n---\n"
			       "a: 1\n"
			       "list:\n- x\n- y  # c\n"
			       "nested:\n  - k: v\n    k2: [1, 2]\n  - - n1\n    - n2\n  -\n"
			       "deep:\n    deeper:\n        deepest: z\n"
			       "empty:\n"
			       "after: end\n");

	cr_assert_eq(r->kind, YL_MAP);
	cr_assert_str_eq(text(r, "a"), "1");
	cr_assert_eq(yl_get(r, "list")->n, 2);
	cr_assert_str_eq(text(r, "list[1]"), "y");
	cr_assert_str_eq(text(r, "nested[0].k"), "v");
	cr_assert_str_eq(text(r, "nested[0].k2[1]"), "2");
	cr_assert_str_eq(text(r, "nested[1][1]"), "n2");
	cr_assert(yl_is_null(yl_path(r, "nested[2]")));
	cr_assert_eq(yl_path(r, "nested[2]")->kind, YL_NULL, "an empty item is a null node");
	cr_assert_str_eq(text(r, "deep.deeper.deepest"), "z");
	cr_assert_eq(yl_get(r, "empty")->kind, YL_NULL);
	cr_assert_str_eq(text(r, "after"), "end");
	cr_assert_null(yl_path(r, "list[2]"));
	cr_assert_null(yl_path(r, "a.b"));
	cr_assert_eq(yl_get(r, "list")->line, 5, "a compact sequence starts at its first item");
	yl_free(r);
}

Test(yaml_lite, flow_collections)
{
	struct yl_node *r = ok("m: {a: 1, b: [x, {c: d}], e: , \"q k\": 'v'}\n"
			       "s: [[1, 2], [], {}, \"a, b\", trailing,]\n"
			       "multi: [1,\n  2, # comment\n  3]\n"
			       "url: [http://x:80/p]\n");

	cr_assert_str_eq(text(r, "m.a"), "1");
	cr_assert_str_eq(text(r, "m.b[1].c"), "d");
	cr_assert(yl_is_null(yl_path(r, "m.e")));
	cr_assert_str_eq(text(r, "m.q k"), "v");
	cr_assert_eq(yl_path(r, "s[1]")->kind, YL_SEQ);
	cr_assert_eq(yl_path(r, "s[2]")->kind, YL_MAP);
	cr_assert_str_eq(text(r, "s[3]"), "a, b");
	cr_assert_eq(yl_get(r, "s")->n, 5, "a trailing comma adds nothing");
	cr_assert_eq(yl_get(r, "multi")->n, 3);
	cr_assert_str_eq(text(r, "url[0]"), "http://x:80/p");
	yl_free(r);
}

Test(yaml_lite, scalars_and_escapes)
{
	struct yl_node *r = ok("d: \"t\\tq\\\"b\\\\s\\/ \\x41\\u00e9\\U0001F600\"\n"
			       "s: 'it''s # not a comment'\n"
			       "p: a#b   \n"
			       "h: 0x1A\n"
			       "n: ~\n"
			       "qn: \"null\"\n"
			       "sp: plain text with:colon\n"
			       "crlf: x\r\n");

	cr_assert_str_eq(text(r, "d"), "t\tq\"b\\s/ A\xc3\xa9\xf0\x9f\x98\x80");
	cr_assert_str_eq(text(r, "s"), "it's # not a comment");
	cr_assert(yl_get(r, "s")->quoted);
	cr_assert_str_eq(text(r, "p"), "a#b");
	cr_assert_eq(yl_get(r, "n")->kind, YL_NULL);
	cr_assert_str_eq(text(r, "qn"), "null", "a quoted null is a string");
	cr_assert_str_eq(text(r, "sp"), "plain text with:colon");
	cr_assert_str_eq(text(r, "crlf"), "x");
	yl_free(r);
}

Test(yaml_lite, empty_documents)
{
	const char *docs[] = { "", "# only a comment\n", "---\n", "\n\n   \n" };

	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		struct yl_node *r = ok(docs[i]);

		cr_assert_eq(r->kind, YL_NULL, "doc %zu", i);
		yl_free(r);
	}
}

Test(yaml_lite, errors_with_positions)
{
	bad("a: 1\na: 2\n", 2, 1, "duplicate key");
	bad("a: {b: 1, b: 2}\n", 1, 11, "duplicate key");
	bad("a: &x 1\n", 1, 4, "anchors");
	bad("a: *x\n", 1, 4, "aliases");
	bad("a: !!str 1\n", 1, 4, "tags");
	bad("a: |\n  x\n", 1, 4, "block scalars");
	bad("a:\n\tb: 1\n", 2, 1, "tab");
	bad("a: \"open\n", 1, 4, "unterminated");
	bad("a: [1, 2\n", 1, 4, "unterminated");
	bad("a: b: c\n", 1, 5, "not allowed");
	bad("a:\n  b: 1\n c: 2\n", 3, 2, "indentation");
	bad("a: 1\n  b: 2\n", 2, 3, "indentation");
	bad("- a\nb: 1\n", 2, 1, "unexpected content");
	bad("a: 1\n---\nb: 2\n", 2, 1, "several documents");
	bad("? a\n: b\n", 1, 1, "complex keys");
	bad("a: \"\\0\"\n", 1, 5, "NUL");
	bad("a: \"\\q\"\n", 1, 5, "escape");
	bad("a: \"\\ud800\"\n", 1, 11, "invalid character");
	bad("a: [1,,2]\n", 1, 7, "flow indicator");
	bad("a: {x 1}\n", 1, 8, "expected ':'");
	bad("a: \"x\" y\n", 1, 8, "after the value");
	bad("a: - b\n", 1, 4, "sequence item");
	bad("%YAML 1.2\n---\na: 1\n", 1, 1, "directives");
	bad("a: 1\rb: 2\n", 1, 5, "carriage return");
	bad("x:\n  y: 1\n  - z\n", 3, 3, "sequence item");
	/* characters: UTF-8 only, printable, one leading BOM at most */
	bad("a: 1\nb: \xc3\n", 2, 4, "UTF-8");
	bad("a: \xed\xa0\x80\n", 1, 4, "UTF-8");
	bad("a: \x01\n", 1, 4, "control character");
	bad("a: \xc2\x85" "b\n", 1, 4, "NEL");
	bad("\xef\xbb\xbf" "a: 1\n\xef\xbb\xbf" "b: 2\n", 2, 1, "byte order mark");
	bad("a: [x,#y]\n", 1, 7, "'#'");
	bad("a: [x\n  y]\n", 2, 3, "multi-line");
	bad("a: {?x: 1}\n", 1, 5, "complex keys");
}

Test(yaml_lite, nul_byte_position)
{
	struct yl_error e;

	cr_assert_null(yl_parse("a: 1\nb: x\0y\n", 12, &e));
	cr_assert_eq(e.line, 2);
	cr_assert_eq(e.col, 5);
}

Test(yaml_lite, limits)
{
	size_t n = YL_MAX_DEPTH + 10;
	char *deep = malloc(2 * n + 2), *flow = malloc(2 * n + 2), msg[200];
	struct yl_error e;

	/* "- - - - ... x" and "[[[[...]]]]" beyond the depth limit */
	for (size_t i = 0; i < n; i++) {
		memcpy(deep + 2 * i, "- ", 2);
		flow[i] = '[';
		flow[n + i] = ']';
	}
	strcpy(deep + 2 * n, "x");
	flow[2 * n] = 0;
	cr_assert_null(yl_parse(deep, strlen(deep), &e));
	cr_assert(strstr(e.msg, "too deep"), "%s", e.msg);
	cr_assert_null(yl_parse(flow, strlen(flow), &e));
	cr_assert(strstr(e.msg, "too deep"), "%s", e.msg);
	yl_error_format(&e, msg, sizeof(msg));
	cr_assert(!strncmp(msg, "1:", 2), "%s", msg);
	cr_assert_null(yl_parse("a: 1", (size_t)YL_MAX_INPUT + 1, &e));
	cr_assert(strstr(e.msg, "too large"));
	free(deep);
	free(flow);
}

/* The depth limit counts collections in block and flow form alike, so a
 * document one form holds the other holds too (the overrides emitter
 * writes nested sequences in flow form; libFuzzer found a block document
 * of 64 nested sequences whose flow form was refused).  Scalars do not
 * count. */
Test(yaml_lite, depth_limit_same_in_both_forms)
{
	size_t n = YL_MAX_DEPTH;
	char *deep = malloc(2 * n + 8), *flow = malloc(2 * n + 8);
	struct yl_node *a, *b;
	struct yl_error e;

	for (size_t i = 0; i < n; i++) {
		memcpy(deep + 2 * i, "- ", 2);
		flow[i] = '[';
		flow[n + 1 + i] = ']';
	}
	strcpy(deep + 2 * n, "x");
	flow[n] = 'x';
	flow[2 * n + 1] = 0;
	cr_assert_not_null(a = yl_parse(deep, strlen(deep), &e), "block at the limit: %s", e.msg);
	cr_assert_not_null(b = yl_parse(flow, strlen(flow), &e), "flow at the limit: %s", e.msg);
	cr_assert(yl_equal(a, b));
	yl_free(a);
	yl_free(b);
	/* one more collection is refused in both */
	memmove(flow + 1, flow, 2 * n + 2);
	flow[0] = '[';
	strcat(flow, "]");
	cr_assert_null(yl_parse(flow, strlen(flow), &e));
	cr_assert(strstr(e.msg, "too deep"), "%s", e.msg);
	free(deep);
	deep = malloc(2 * n + 8);
	for (size_t i = 0; i <= n; i++)
		memcpy(deep + 2 * i, "- ", 2);
	strcpy(deep + 2 * (n + 1), "x");
	cr_assert_null(yl_parse(deep, strlen(deep), &e));
	cr_assert(strstr(e.msg, "too deep"), "%s", e.msg);
	free(deep);
	free(flow);
}

Test(yaml_lite, conversions)
{
	struct yl_node *r = ok("u: 42\nh: 0xFFFF\nneg: -7\nbig: 18446744073709551615\n"
			       "over: 18446744073709551616\nf: 2.5\ne: 1e3\nnan: nan\n"
			       "t: true\ny: Yes\nno: NO\nq: \"17\"\nword: abc\n");
	uint64_t u;
	int64_t i;
	double d;
	bool b;

	cr_assert(yl_u64(yl_get(r, "u"), &u) && u == 42);
	cr_assert(yl_u64(yl_get(r, "h"), &u) && u == 0xffff);
	cr_assert_not(yl_u64(yl_get(r, "neg"), &u));
	cr_assert(yl_i64(yl_get(r, "neg"), &i) && i == -7);
	cr_assert(yl_u64(yl_get(r, "big"), &u) && u == UINT64_MAX);
	cr_assert_not(yl_u64(yl_get(r, "over"), &u));
	cr_assert_not(yl_i64(yl_get(r, "big"), &i));
	cr_assert(yl_double(yl_get(r, "f"), &d) && d == 2.5);
	cr_assert(yl_double(yl_get(r, "e"), &d) && d == 1000);
	cr_assert(yl_double(yl_get(r, "h"), &d) && d == 65535);
	cr_assert_not(yl_double(yl_get(r, "nan"), &d));
	cr_assert(yl_bool(yl_get(r, "t"), &b) && b);
	cr_assert(yl_bool(yl_get(r, "y"), &b) && b);
	cr_assert(yl_bool(yl_get(r, "no"), &b) && !b);
	cr_assert_not(yl_bool(yl_get(r, "u"), &b));
	cr_assert(yl_u64(yl_get(r, "q"), &u) && u == 17, "quoted numbers are accepted");
	cr_assert_not(yl_u64(yl_get(r, "word"), &u));
	cr_assert_not(yl_u64(yl_get(r, "missing"), &u));
	yl_free(r);
}

Test(yaml_lite, tree_helpers)
{
	struct yl_node *a = ok("m: {x: 1, y: [1, 2]}\nz: q\n");
	struct yl_node *b = ok("z: q\nm: {y: [1, 2], x: 1}\n");
	struct yl_node *c = yl_clone(a);

	cr_assert(yl_equal(a, b), "mapping order does not matter");
	cr_assert(yl_equal(a, c));
	cr_assert_eq(yl_map_set(c, "z", yl_new_scalar("r")), 0);
	cr_assert_not(yl_equal(a, c));
	cr_assert_str_eq(text(c, "z"), "r");
	yl_map_remove(yl_get(c, "m"), "x");
	cr_assert_null(yl_path(c, "m.x"));
	cr_assert_eq(yl_map_set(c, "new", yl_new(YL_MAP)), 0);
	cr_assert_eq(yl_get(c, "new")->kind, YL_MAP);
	cr_assert_null(yl_path(a, "m..x"));
	cr_assert_null(yl_path(a, "m.y[x]"));
	yl_free(a);
	yl_free(b);
	yl_free(c);
}

/* ---- agreement with libyaml on the shipped profiles ----------------- */

static void same_tree(const struct yl_node *y, const struct ynode *t, const char *where)
{
	if (yl_is_null(y)) {
		cr_assert(ytree_is_null(t), "%s: null vs '%s'", where, t && t->str ? t->str : "?");
		return;
	}
	switch (y->kind) {
	case YL_SCALAR:
		cr_assert_eq(t->kind, YNODE_SCALAR, "%s", where);
		cr_assert_str_eq(y->str, t->str, "%s", where);
		cr_assert_eq(y->quoted, !t->plain, "%s: quoting", where);
		break;
	case YL_SEQ:
		cr_assert_eq(t->kind, YNODE_SEQ, "%s", where);
		cr_assert_eq(y->n, t->n, "%s: length", where);
		for (size_t i = 0; i < y->n; i++)
			same_tree(y->kids[i], t->kids[i], where);
		break;
	case YL_MAP:
		cr_assert_eq(t->kind, YNODE_MAP, "%s", where);
		cr_assert_eq(y->n, ytree_map_size(t), "%s: size", where);
		for (size_t i = 0; i < y->n; i++) {
			char sub[512];

			snprintf(sub, sizeof(sub), "%s.%s", where, y->kids[i]->key);
			cr_assert_str_eq(ytree_map_key(t, i)->str, y->kids[i]->key, "%s", sub);
			same_tree(y->kids[i], ytree_map_value(t, i), sub);
		}
		break;
	default:
		break;
	}
}

Test(yaml_lite, shipped_profiles_match_libyaml)
{
	const char *src = getenv("MOKKA_SRCDIR");
	char dir[4096];
	struct dirent *de;
	DIR *dp;
	int seen = 0;

	snprintf(dir, sizeof(dir), "%s/etc/profiles", src ? src : ".");
	dp = opendir(dir);
	cr_assert_not_null(dp, "%s", dir);
	while ((de = readdir(dp))) {
		char path[8192], *buf = NULL;
		size_t len = 0;
		struct yl_error e;
		struct ytree_error te;
		struct ynode *t = NULL;
		struct yl_node *y;
		FILE *f;

		if (!strstr(de->d_name, ".yaml"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "rb");
		cr_assert_not_null(f);
		buf = malloc(1 << 20);
		len = fread(buf, 1, 1 << 20, f);
		fclose(f);
		y = yl_parse(buf, len, &e);
		cr_assert_not_null(y, "%s:%u:%u: %s", path, e.line, e.col, e.msg);
		cr_assert_eq(ytree_parse(buf, len, &t, &te), 0, "%s", path);
		same_tree(y, t, de->d_name);
		yl_free(y);
		ytree_free(t);
		free(buf);
		seen++;
	}
	closedir(dp);
	cr_assert_geq(seen, 7, "profiles found in %s", dir);
}

Test(yaml_lite, bom_utf8_and_null_keys)
{
	struct yl_node *r = ok("\xef\xbb\xbf" "k: \"\xe2\x82\xac\"\nm: {null: 1, ~: 2}\n");

	cr_assert_str_eq(text(r, "k"), "\xe2\x82\xac");
	cr_assert_eq(yl_get(r, "m")->n, 2);
	cr_assert_not_null(yl_get(yl_get(r, "m"), "null"), "a null key keeps its spelling");
	cr_assert_not_null(yl_get(yl_get(r, "m"), "~"));
	yl_free(r);
}

/* Document markers read as libyaml reads them (libFuzzer found "---" then
 * "..." read as the scalar "..."): an explicit document that ends at once
 * is null; "..." with no document, or a second "---", is refused. */
Test(yaml_lite, document_markers)
{
	static const char *const empty[] = { "---\n...\n", "---\n...\t", "---\n... # end\n" };
	struct yl_node *d;
	struct yl_error e;

	for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); i++) {
		cr_assert_not_null(d = yl_parse(empty[i], strlen(empty[i]), &e), "%s", e.msg);
		cr_assert(yl_is_null(d), "input %zu is an empty document", i);
		yl_free(d);
	}
	cr_assert_null(yl_parse("...\n", 4, &e));
	cr_assert(strstr(e.msg, "without a document"), "%s", e.msg);
	cr_assert_null(yl_parse("---\n---\n", 8, &e));
	cr_assert(strstr(e.msg, "several documents"), "%s", e.msg);
	cr_assert_not_null(d = yl_parse("---\na: 1\n...\n", 13, &e), "%s", e.msg);
	cr_assert_eq(d->kind, YL_MAP);
	yl_free(d);
	cr_assert_not_null(d = yl_parse("- ...\n", 6, &e), "%s", e.msg);
	cr_assert_str_eq(d->kids[0]->str, "...", "inside a collection it is a plain scalar");
	yl_free(d);
}
