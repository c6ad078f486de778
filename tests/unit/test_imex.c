/* The IMEX worker's parsers and checks (workers/imex/): SHA-256 against
 * FIPS 180-4's vectors, the tar reader over archives built here (ustar
 * with a prefix, a GNU long name, a pax path, corrupt ones), member path
 * safety and the checksum list. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/imex/imex.h"

TestSuite(imex);

Test(imex, sha256_vectors)
{
	char hex[65];
	char *million = malloc(1000000);

	sha256_hex("", 0, hex);
	cr_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sha256_hex("abc", 3, hex);
	cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, hex);
	cr_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	cr_assert_not_null(million);
	memset(million, 'a', 1000000);
	sha256_hex(million, 1000000, hex);
	cr_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(million);
}

/* ---- a tiny tar writer for the tests ---- */

struct tarbuf {
	unsigned char b[16384];
	size_t n;
};

static void header(struct tarbuf *t, const char *name, const char *prefix, char type,
		   size_t size, bool corrupt)
{
	unsigned char *h = t->b + t->n;
	unsigned sum = 0;

	memset(h, 0, 512);
	memcpy(h, name, strlen(name) > 100 ? 100 : strlen(name));
	memcpy(h + 100, "0000644", 7);
	snprintf((char *)h + 124, 12, "%011zo", size);
	memset(h + 148, ' ', 8);
	h[156] = (unsigned char)type;
	memcpy(h + 257, "ustar\0" "00", 8);
	if (prefix)
		memcpy(h + 345, prefix, strlen(prefix));
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum + (corrupt ? 1 : 0));
	t->n += 512;
}

static void member(struct tarbuf *t, const char *name, const char *prefix, char type,
		   const char *data)
{
	size_t len = data ? strlen(data) : 0;

	header(t, name, prefix, type, len, false);
	memset(t->b + t->n, 0, (len + 511) / 512 * 512);
	if (len)
		memcpy(t->b + t->n, data, len);
	t->n += (len + 511) / 512 * 512;
}

static void end(struct tarbuf *t)
{
	memset(t->b + t->n, 0, 1024);
	t->n += 1024;
}

struct seen {
	int n;
	char names[8][1024];
	char types[8];
	char data[8][64];
};

static int record(const struct tar_member *m, void *arg)
{
	struct seen *s = arg;

	cr_assert_lt(s->n, 8);
	snprintf(s->names[s->n], sizeof(s->names[0]), "%s", m->name);
	s->types[s->n] = m->type;
	snprintf(s->data[s->n], sizeof(s->data[0]), "%.*s", (int)m->size, (const char *)m->data);
	s->n++;
	return 0;
}

Test(imex, tar_names)
{
	static struct tarbuf t;
	struct seen s = { 0 };
	char err[256] = "", longname[160], pax[64];

	member(&t, "bin/", "top", '5', NULL);
	member(&t, "nvidia-imex", "top/bin", '0', "#!/bin/sh\n");
	memset(longname, 'd', 150);
	strcpy(longname + 150, "/LICENSE");
	member(&t, "././@LongLink", NULL, 'L', longname);
	member(&t, "truncated-name", NULL, '0', "license");
	snprintf(pax, sizeof(pax), "%d path=etc/nvidia-imex/config.cfg\n", 35);
	member(&t, "PaxHeader", NULL, 'x', pax);
	member(&t, "short", NULL, '0', "cfg");
	member(&t, "link", NULL, '2', NULL);
	end(&t);
	cr_assert_eq(tar_walk(t.b, t.n, record, &s, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.n, 5);
	cr_assert_str_eq(s.names[0], "top/bin/");
	cr_assert_str_eq(s.names[1], "top/bin/nvidia-imex");
	cr_assert_str_eq(s.data[1], "#!/bin/sh\n");
	cr_assert_eq(strlen(s.names[2]), 158, "the GNU long name: %s", s.names[2]);
	cr_assert_str_eq(s.data[2], "license");
	cr_assert_str_eq(s.names[3], "etc/nvidia-imex/config.cfg", "the pax path");
	cr_assert_eq(s.types[4], '2');
}

Test(imex, tar_refuses_corruption)
{
	static struct tarbuf t;
	struct seen s = { 0 };
	char err[256];

	header(&t, "x", NULL, '0', 3, true);
	t.n += 512;
	end(&t);
	cr_assert_lt(tar_walk(t.b, t.n, record, &s, err, sizeof(err)), 0);
	cr_assert(strstr(err, "bad header"), "%s", err);

	t.n = 0;
	header(&t, "big", NULL, '0', 4096, false);	/* the data is not there */
	cr_assert_lt(tar_walk(t.b, t.n, record, &s, err, sizeof(err)), 0);
	cr_assert(strstr(err, "past the end"), "%s", err);

	t.n = 0;
	header(&t, "huge", NULL, '0', (size_t)IMEX_MAX_MEMBER + 1, false);
	cr_assert_eq(tar_walk(t.b, t.n, record, &s, err, sizeof(err)), -EFBIG);

	t.n = 0;
	member(&t, "PaxHeader", NULL, 'x', "99 path=x\n");
	end(&t);
	cr_assert_lt(tar_walk(t.b, t.n, record, &s, err, sizeof(err)), 0, "a pax length lie");
}

Test(imex, safe_paths)
{
	char n[256];

	cr_assert(imex_safe_path("./a/b/nvidia-imex", n, sizeof(n)));
	cr_assert_str_eq(n, "a/b/nvidia-imex");
	cr_assert(imex_safe_path("a/dir/", n, sizeof(n)));
	static const char *const bad[] = { "", "/etc/passwd", "../x", "a/../../x", "a//b",
					   "a/./b", ".", "./", "a/.." };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_not(imex_safe_path(bad[i], n, sizeof(n)), "accepted '%s'", bad[i]);
}

Test(imex, checksum_list)
{
	struct imex_sums s;
	char err[128];
	const char *a = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

	cr_assert_eq(imex_sums_parse("# comment\n"
				     "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"
				     "  ./top/bin/nvidia-imex\n"
				     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
				     " *LICENSE\n", &s, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.n, 2);
	cr_assert_str_eq(imex_sums_find(&s, "top/bin/nvidia-imex"), a, "exact path, lowercased");
	cr_assert_str_eq(imex_sums_find(&s, "./x/nvidia-imex"), a, "by base name");
	cr_assert_not_null(imex_sums_find(&s, "LICENSE"));
	cr_assert_null(imex_sums_find(&s, "nvidia-imex-ctl"));
	cr_assert_lt(imex_sums_parse("abc  x\n", &s, err, sizeof(err)), 0);
	cr_assert(strstr(err, "line 1"), "%s", err);
}
