/* yaml_tree: node kinds and marks, scalar typing, and the bounds that keep
 * hostile documents (deep nesting, aliases, many nodes) harmless. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/yaml_tree.h"

static struct ynode *parse_ok(const char *s)
{
	struct ytree_error e;
	struct ynode *root = NULL;
	int rc = ytree_parse(s, strlen(s), &root, &e);

	cr_assert_eq(rc, 0, "parse failed: %d:%d: %s", e.line, e.col, e.msg);
	return root;
}

static struct ytree_error parse_err(const char *s, size_t len)
{
	struct ytree_error e;
	struct ynode *root = (struct ynode *)1;
	int rc = ytree_parse(s, len, &root, &e);

	cr_assert_eq(rc, -EINVAL, "expected -EINVAL, got %d", rc);
	cr_assert_null(root);
	return e;
}

Test(yaml_tree, kinds_and_marks)
{
	struct ynode *r = parse_ok("a: 1\nlist:\n  - x\n  - \"y\"\nm: {k: v}\n");
	const struct ynode *list, *m;

	cr_assert_eq(r->kind, YNODE_MAP);
	cr_assert_eq(ytree_map_size(r), 3);
	list = ytree_map_get(r, "list");
	cr_assert_eq(list->kind, YNODE_SEQ);
	cr_assert_eq(list->n, 2);
	cr_assert_str_eq(list->kids[0]->str, "x");
	cr_assert(list->kids[0]->plain);
	cr_assert_not(list->kids[1]->plain, "a quoted scalar is not plain");
	cr_assert_eq(list->kids[1]->line, 4);
	cr_assert_eq(list->kids[1]->col, 5);
	m = ytree_map_get(r, "m");
	cr_assert_eq(m->line, 5);
	cr_assert_eq(m->col, 4);
	cr_assert_str_eq(ytree_map_get(m, "k")->str, "v");
	cr_assert_null(ytree_map_get(r, "missing"));
	ytree_free(r);
}

Test(yaml_tree, empty_stream_gives_null_root)
{
	struct ytree_error e;
	struct ynode *r = (struct ynode *)1;

	cr_assert_eq(ytree_parse("", 0, &r, &e), 0);
	cr_assert_null(r);
	cr_assert_eq(ytree_parse("# only a comment\n", 17, &r, &e), 0);
	cr_assert_null(r);
}

Test(yaml_tree, scalar_typing)
{
	struct ynode *r = parse_ok("d: 42\nh: 0x233010DE\nneg: -5\nq: \"7\"\nb: yes\n"
				   "f: 12.5\nnul: ~\nbig: 18446744073709551615\n"
				   "over: 18446744073709551616\nword: 0x0x1\n");
	int64_t i;
	uint64_t u;
	bool b;
	double d;

	cr_assert_eq(ytree_int(ytree_map_get(r, "d"), &i), 0);
	cr_assert_eq(i, 42);
	cr_assert_eq(ytree_uint(ytree_map_get(r, "h"), &u), 0);
	cr_assert_eq(u, 0x233010DEu);
	cr_assert_eq(ytree_int(ytree_map_get(r, "neg"), &i), 0);
	cr_assert_eq(i, -5);
	cr_assert_eq(ytree_uint(ytree_map_get(r, "neg"), &u), -ERANGE);
	cr_assert_eq(ytree_int(ytree_map_get(r, "q"), &i), -EINVAL,
		     "a quoted number is a string");
	cr_assert_eq(ytree_bool(ytree_map_get(r, "b"), &b), 0);
	cr_assert(b);
	cr_assert_eq(ytree_bool(ytree_map_get(r, "d"), &b), -EINVAL);
	cr_assert_eq(ytree_float(ytree_map_get(r, "f"), &d), 0);
	cr_assert_float_eq(d, 12.5, 1e-9);
	cr_assert(ytree_is_null(ytree_map_get(r, "nul")));
	cr_assert_not(ytree_is_null(ytree_map_get(r, "d")));
	cr_assert_eq(ytree_uint(ytree_map_get(r, "big"), &u), 0);
	cr_assert_eq(u, UINT64_MAX);
	cr_assert_eq(ytree_uint(ytree_map_get(r, "over"), &u), -ERANGE);
	cr_assert_eq(ytree_int(ytree_map_get(r, "big"), &i), -ERANGE);
	cr_assert_eq(ytree_uint(ytree_map_get(r, "word"), &u), -EINVAL);
	ytree_free(r);
}

Test(yaml_tree, syntax_error_has_mark)
{
	const char *s = "a: 1\nb: [1, 2\nc: 3\n";
	struct ytree_error e = parse_err(s, strlen(s));

	cr_assert_gt(e.line, 1, "line %d", e.line);
	cr_assert_gt(e.col, 0);
	cr_assert_neq(e.msg[0], '\0');
}

Test(yaml_tree, duplicate_key_rejected)
{
	const char *s = "a: 1\nb: 2\na: 3\n";
	struct ytree_error e = parse_err(s, strlen(s));

	cr_assert_eq(e.line, 3);
	cr_assert_eq(e.col, 1);
	cr_assert(strstr(e.msg, "duplicate key 'a'"), "%s", e.msg);
}

Test(yaml_tree, aliases_rejected)
{
	/* The first rung of "billion laughs": refused, not expanded. */
	const char *s = "a: &x [lol, lol]\nb: [*x, *x]\n";
	struct ytree_error e = parse_err(s, strlen(s));

	cr_assert_eq(e.line, 2);
	cr_assert(strstr(e.msg, "aliases are not supported"), "%s", e.msg);
}

Test(yaml_tree, deep_nesting_rejected)
{
	size_t depth = 10000;
	char *s = malloc(2 * depth + 1);
	struct ytree_error e;

	memset(s, '[', depth);
	memset(s + depth, ']', depth);
	s[2 * depth] = '\0';
	e = parse_err(s, 2 * depth);
	cr_assert_eq(e.line, 1);
	cr_assert_eq(e.col, YTREE_MAX_DEPTH + 1);
	cr_assert(strstr(e.msg, "nesting deeper than"), "%s", e.msg);
	free(s);
}

Test(yaml_tree, depth_at_limit_accepted)
{
	char s[2 * YTREE_MAX_DEPTH + 1];
	struct ynode *r;

	memset(s, '[', YTREE_MAX_DEPTH);
	memset(s + YTREE_MAX_DEPTH, ']', YTREE_MAX_DEPTH);
	s[2 * YTREE_MAX_DEPTH] = '\0';
	r = parse_ok(s);
	cr_assert_eq(r->kind, YNODE_SEQ);
	ytree_free(r);
}

Test(yaml_tree, node_count_bounded)
{
	size_t n = YTREE_MAX_NODES + 10;
	char *s = malloc(2 * n + 3);
	struct ytree_error e;

	s[0] = '[';
	for (size_t i = 0; i < n; i++) {
		s[1 + 2 * i] = '1';
		s[2 + 2 * i] = ',';
	}
	s[2 * n] = ']';
	s[2 * n + 1] = '\0';
	e = parse_err(s, 2 * n + 1);
	cr_assert(strstr(e.msg, "more than"), "%s", e.msg);
	free(s);
}

Test(yaml_tree, multiple_documents_rejected)
{
	const char *s = "a: 1\n---\nb: 2\n";
	struct ytree_error e = parse_err(s, strlen(s));

	cr_assert_eq(e.line, 2);
	cr_assert(strstr(e.msg, "multiple documents"), "%s", e.msg);
}

Test(yaml_tree, complex_key_rejected)
{
	const char *s = "? [a, b]\n: 1\n";
	struct ytree_error e = parse_err(s, strlen(s));

	cr_assert(strstr(e.msg, "mapping keys must be scalars"), "%s", e.msg);
}

Test(yaml_tree, embedded_nul_kept_with_length)
{
	struct ynode *r = parse_ok("a: \"x\\0y\"\n");
	const struct ynode *a = ytree_map_get(r, "a");
	int64_t i;

	cr_assert_eq(a->len, 3);
	cr_assert_eq(a->str[1], '\0');
	cr_assert_eq(ytree_int(a, &i), -EINVAL);
	ytree_free(r);
}
