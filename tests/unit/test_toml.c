/* The TOML parser and writer cri uses for containerd configs: what it
 * accepts (containerd's own default config among it), what it refuses
 * with line and column, value spans, and the writer's round trip. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/cri/toml.h"

static struct toml_doc doc;
static struct toml_error err;

static void fini(void)
{
	toml_doc_free(&doc);
}

TestSuite(toml, .fini = fini);

static int parse(const char *text)
{
	toml_doc_free(&doc);
	return toml_parse(text, strlen(text), &doc, &err);
}

static const struct toml_node *at(const char *const keys[])
{
	return toml_getv(doc.root, keys);
}
#define AT(...) at((const char *const[]){ __VA_ARGS__, NULL })

/* containerd 1.6's `config default` (abridged, same constructs). */
static const char containerd_default[] =
	"disabled_plugins = []\n"
	"imports = []\n"
	"oom_score = 0\n"
	"root = \"/var/lib/containerd\"\n"
	"version = 2\n"
	"\n"
	"[grpc]\n"
	"  address = \"/run/containerd/containerd.sock\"\n"
	"  max_recv_message_size = 16777216\n"
	"\n"
	"[plugins]\n"
	"\n"
	"  [plugins.\"io.containerd.gc.v1.scheduler\"]\n"
	"    pause_threshold = 0.02\n"
	"    schedule_delay = \"0s\"\n"
	"\n"
	"  [plugins.\"io.containerd.grpc.v1.cri\"]\n"
	"    sandbox_image = \"registry.k8s.io/pause:3.6\"\n"
	"    [plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
	"      default_runtime_name = \"runc\"\n"
	"      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes]\n"
	"        [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
	"          runtime_type = \"io.containerd.runc.v2\"\n"
	"          [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
	"            SystemdCgroup = true\n"
	"    [plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors]\n"
	"  [plugins.\"io.containerd.internal.v1.opt\"]\n"
	"    path = \"/opt/containerd\"\n";

Test(toml, containerd_default_config)
{
	const char *cri = "io.containerd.grpc.v1.cri";

	cr_assert_eq(parse(containerd_default), 0, "%d:%d: %s", err.line, err.col, err.msg);
	cr_assert_eq(AT("version")->kind, TOML_INT);
	cr_assert_eq(AT("version")->num, 2);
	cr_assert_eq(AT("imports")->kind, TOML_ARRAY);
	cr_assert_eq(AT("imports")->n, 0);
	cr_assert_str_eq(AT("grpc", "address")->str, "/run/containerd/containerd.sock");
	cr_assert_eq(AT("plugins", "io.containerd.gc.v1.scheduler", "pause_threshold")->kind,
		     TOML_FLOAT);
	cr_assert_str_eq(AT("plugins", cri, "sandbox_image")->str, "registry.k8s.io/pause:3.6");
	cr_assert_eq(AT("plugins", cri, "containerd", "runtimes", "runc", "options",
			"SystemdCgroup")->boolean, true);
	cr_assert_eq(AT("plugins", cri, "registry", "mirrors")->kind, TOML_TABLE);
	/* the first header is "[grpc]" on line 7 */
	cr_assert_eq(doc.first_header, (size_t)(strstr(containerd_default, "[grpc]") -
						 containerd_default));
}

Test(toml, value_spans)
{
	const char *text = "version = 2\nimports = [ \"/a/*.toml\" , 'b' ] # two\n[x]\n";
	const struct toml_node *imp;

	cr_assert_eq(parse(text), 0);
	imp = AT("imports");
	cr_assert_eq(imp->line, 2);
	cr_assert_eq(imp->start, (size_t)(strchr(text, '[') - text));
	cr_assert_eq(text[imp->end - 1], ']');
	cr_assert_eq(imp->n, 2);
	cr_assert_eq(strncmp(text + imp->kids[1]->start, "'b'", 3), 0);
	cr_assert_eq(imp->kids[1]->end - imp->kids[1]->start, 3);
}

Test(toml, strings)
{
	cr_assert_eq(parse("a = \"tab\\there \\\"q\\\" \\\\ \\u00e9\\U0001F600\"\n"
			   "b = 'C:\\path'\n"
			   "c = \"\"\"\nline one\\\n    continued\"\"\"\n"
			   "d = '''\nraw \\n ''quotes'''''\n"
			   "e = \"\"\n"), 0, "%d:%d: %s", err.line, err.col, err.msg);
	cr_assert_str_eq(AT("a")->str, "tab\there \"q\" \\ \xc3\xa9\xf0\x9f\x98\x80");
	cr_assert_str_eq(AT("b")->str, "C:\\path");
	cr_assert_str_eq(AT("c")->str, "line onecontinued");
	cr_assert_str_eq(AT("d")->str, "raw \\n ''quotes''");
	cr_assert_str_eq(AT("e")->str, "");
}

Test(toml, numbers_and_dates)
{
	cr_assert_eq(parse("a = 0x1F\nb = 0o17\nc = 0b101\nd = -1_000\ne = +3.5e-2\n"
			   "f = -inf\ng = 9223372036854775807\nh = -9223372036854775808\n"
			   "i = 1979-05-27T07:32:00Z\nj = 1979-05-27 07:32:00\nk = 07:32:00\n"
			   "l = true\nm = false\n"), 0, "%d:%d: %s", err.line, err.col, err.msg);
	cr_assert_eq(AT("a")->num, 31);
	cr_assert_eq(AT("b")->num, 15);
	cr_assert_eq(AT("c")->num, 5);
	cr_assert_eq(AT("d")->num, -1000);
	cr_assert_eq(AT("e")->kind, TOML_FLOAT);
	cr_assert_str_eq(AT("f")->str, "-inf");
	cr_assert_eq(AT("g")->num, 9223372036854775807LL);
	cr_assert_eq(AT("h")->num, (-9223372036854775807LL - 1));
	cr_assert_eq(AT("i")->kind, TOML_DATETIME);
	cr_assert_str_eq(AT("j")->str, "1979-05-27 07:32:00");
	cr_assert_eq(AT("k")->kind, TOML_DATETIME);
	cr_assert_eq(AT("l")->boolean, true);
	cr_assert_eq(AT("m")->kind, TOML_BOOL);
}

Test(toml, tables_keys_and_arrays)
{
	cr_assert_eq(parse("a.b.\"c.d\" = 1\n"
			   "\"quoted key\" = { x = 1, y.z = [1, [2, 3], {w = \"v\"}] }\n"
			   "arr = [\n  1, # one\n  2,\n]\n"
			   "[[srv]]\nname = \"a\"\n[srv.sub]\nk = 1\n[[srv]]\nname = \"b\"\n"
			   "[t]\nk = 1\n[t.u]\nk = 2\n"), 0, "%d:%d: %s", err.line, err.col, err.msg);
	cr_assert_eq(AT("a", "b", "c.d")->num, 1);
	cr_assert_eq(AT("quoted key", "y", "z")->n, 3);
	cr_assert_str_eq(AT("quoted key", "y", "z")->kids[2]->kids[0]->str, "v");
	cr_assert_eq(AT("arr")->n, 2);
	cr_assert_eq(AT("srv")->n, 2);
	cr_assert_eq(AT("srv")->kids[0]->kids[1]->kind, TOML_TABLE);	/* [srv.sub] */
	cr_assert_str_eq(AT("srv")->kids[1]->kids[0]->str, "b");
	cr_assert_eq(AT("t", "u", "k")->num, 2);
}

static void refused(const char *text, int line, int col, const char *what)
{
	int r = parse(text);

	cr_assert_eq(r, -EINVAL, "accepted: %s", text);
	cr_assert_eq(err.line, line, "%s: line %d, want %d (%s)", text, err.line, line, err.msg);
	cr_assert_eq(err.col, col, "%s: col %d, want %d (%s)", text, err.col, col, err.msg);
	cr_assert(strstr(err.msg, what), "%s: '%s' lacks '%s'", text, err.msg, what);
}

Test(toml, refused_with_line_and_column)
{
	refused("a = 1\na = 2\n", 2, 1, "duplicate key 'a'");
	refused("[x]\nk = 1\n[x]\n", 3, 1, "table defined twice");
	refused("[x]\n[x.y]\n[x]\n", 3, 1, "table defined twice");
	refused("a = \"open\n", 1, 5, "unterminated string");
	refused("a = \"bad \\q\"\n", 1, 11, "invalid escape");
	refused("a = [1, 2\nb = 3\n", 2, 1, "expected ',' or ']'");
	refused("a = [1,\n", 1, 5, "unclosed array");
	refused("a = {x = 1,\n y = 2}\n", 1, 5, "unclosed inline table");
	refused("a = {x = 1,}\n", 1, 12, "expected a key");
	refused("a = 01\n", 1, 5, "invalid number");
	refused("a = 1__0\n", 1, 5, "invalid number");
	refused("a = 9223372036854775808\n", 1, 5, "out of range");
	refused("a = 0xffffffffffffffffff\n", 1, 5, "out of range");
	refused("a = nope\n", 1, 5, "invalid number");
	refused("a =\n", 1, 4, "expected a value");
	refused("a = 1 b = 2\n", 1, 7, "end of the line");
	refused("[unclosed\n", 1, 10, "close the table header");
	refused("a = 1\na.b = 2\n", 2, 1, "already defined as a value");
	refused("[a.b]\n[a]\nb.c = 1\n", 3, 1, "already defined as a table");
	refused("a = {x = 1}\n[a.y]\n", 2, 1, "already a value");
	refused("[a]\n[[a]]\n", 2, 1, "already defined as a table");
	refused("a = \"\x01\"\n", 1, 6, "control character");
	refused("a = \"\xc3\"\n", 1, 6, "invalid UTF-8");
	refused("a = \"\xed\xa0\x80\"\n", 1, 6, "invalid UTF-8");	/* surrogate */
	refused("a = 1\rb = 2\n", 1, 6, "carriage return");
	refused("= 1\n", 1, 1, "expected a key");
	refused("a = \"\\ud800\"\n", 1, 12, "not a Unicode scalar");
}

Test(toml, deep_nesting_refused)
{
	char text[512] = "a = ";

	for (int i = 0; i < 100; i++)
		strcat(text, "[");
	cr_assert_eq(parse(text), -EINVAL);
	cr_assert(strstr(err.msg, "nested deeper"), "%s", err.msg);
}

Test(toml, crlf_and_comments)
{
	cr_assert_eq(parse("# head\r\nversion = 2 # tail\r\n\r\n[a] # c\r\nk = 'v'\r\n"), 0,
		     "%d:%d: %s", err.line, err.col, err.msg);
	cr_assert_str_eq(AT("a", "k")->str, "v");
}

static char *write_doc(void)
{
	char *out;
	size_t len;

	cr_assert_eq(toml_write(doc.root, &out, &len), 0);
	cr_assert_eq(strlen(out), len);
	return out;
}

Test(toml, write_round_trip)
{
	char *once, *twice;

	cr_assert_eq(parse(containerd_default), 0);
	once = write_doc();
	cr_assert_eq(parse(once), 0, "writer output does not parse: %d:%d: %s\n%s", err.line,
		     err.col, err.msg, once);
	twice = write_doc();
	cr_assert_str_eq(once, twice);
	cr_assert(strstr(once, "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
			 "            SystemdCgroup = true\n"), "%s", once);
	free(once);
	free(twice);
}

Test(toml, write_values_and_keys)
{
	char *out;

	cr_assert_eq(parse("s = \"a\\\"b\\n\\u0001\"\n\"k y\" = [1, {a = 2, b = {}}]\n"
			   "[[t]]\n[t.u]\nx = 1\n[e]\n"), 0);
	out = write_doc();
	cr_assert_str_eq(out, "s = \"a\\\"b\\n\\u0001\"\n\"k y\" = [1, { a = 2, b = {} }]\n"
			 "\n[[t]]\n\n  [t.u]\n    x = 1\n\n[e]\n");
	free(out);
}

/* A quoted key longer than 1 KiB (escapes included) is written whole:
 * the writer cut it at 1023 bytes, closing quote and all (libFuzzer). */
Test(toml, write_long_keys)
{
	static char in[8192], key[3001];
	char *once, *twice;

	memset(key, 'k', 3000);
	for (int i = 0; i < 3000; i += 7)
		key[i] = ' ';		/* not bare: quoted */
	snprintf(in, sizeof(in), "[a.\"%s\"]\n\"%s\" = 1\n", key, key);
	cr_assert_eq(parse(in), 0, "%d:%d: %s", err.line, err.col, err.msg);
	once = write_doc();
	cr_assert_eq(parse(once), 0, "writer output does not parse: %d:%d: %s", err.line,
		     err.col, err.msg);
	twice = write_doc();
	cr_assert_str_eq(once, twice);
	free(once);
	free(twice);
}

Test(toml, build_and_replace)
{
	struct toml_node *root = toml_new(TOML_TABLE, NULL), *t, *copy;
	char *out;
	size_t len;

	t = toml_table(root, "plugins");
	cr_assert_not_null(t);
	cr_assert_eq(toml_table(root, "plugins"), t);
	cr_assert_eq(toml_put(t, toml_new_string("x", "1")), 0);
	cr_assert_eq(toml_put(t, toml_new_bool("y", false)), 0);
	cr_assert_eq(toml_put(t, toml_new_string("x", "2")), 0);	/* replaced in place */
	copy = toml_clone(t, "copy");
	cr_assert_eq(toml_put(root, copy), 0);
	cr_assert_eq(toml_write(root, &out, &len), 0);
	cr_assert_str_eq(out, "[plugins]\n  x = \"2\"\n  y = false\n\n[copy]\n  x = \"2\"\n  y = false\n");
	free(out);
	toml_free(root);
}

Test(toml, key_text)
{
	char buf[64];

	toml_key_text("bare-key_1", buf, sizeof(buf));
	cr_assert_str_eq(buf, "bare-key_1");
	toml_key_text("io.containerd.grpc.v1.cri", buf, sizeof(buf));
	cr_assert_str_eq(buf, "\"io.containerd.grpc.v1.cri\"");
	toml_key_text("", buf, sizeof(buf));
	cr_assert_str_eq(buf, "\"\"");
}

Test(toml, size_limit)
{
	size_t n = TOML_MAX_INPUT + 1;
	char *big = malloc(n);

	memset(big, '#', n);
	cr_assert_eq(toml_parse(big, n, &doc, &err), -EINVAL);
	cr_assert(strstr(err.msg, "too large"));
	free(big);
}
