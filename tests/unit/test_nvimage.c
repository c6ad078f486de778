/* The compiled profile image (nvimage/): it round-trips every shipped
 * profile (the profile tree as yaml_lite reads it, each device's base as
 * the boot merge builds it), names its source bytes, and the decoder
 * refuses every corruption we can name, each with a resealed checksum so
 * the structural check itself is what refuses; a sweep mutating every
 * byte (resealed) never crashes and never hands out a partial tree. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvimage/nvimage.h"

static const char small[] =
	"version: \"1.0\"\n"
	"system: {driver_version: \"550.163.01\", num: 0x10, q: \"0\", n: ~}\n"
	"device_defaults:\n"
	"  name: G\n"
	"  power: {default_limit_mw: 700000}\n"
	"  pci: {device_id: 0x233010DE}\n"
	"devices:\n"
	"  - index: 0\n"
	"    name: \"Special\"\n"
	"    pci: {bus_id: \"0000:1a:00.0\"}\n"
	"  - 7\n"
	"  - index: 1\n"
	"    power: {default_limit_mw: 500000}\n"
	"    pci: {bus_id: \"0000:2a:00.0\"}\n";

/* Deep equality including what yl_equal leaves out (quoting, order). */
static void same_node(const struct yl_node *a, const struct yl_node *b, const char *where,
		      bool root)
{
	cr_assert_eq(a->kind, b->kind, "%s: kind", where);
	cr_assert_eq(a->quoted, b->quoted, "%s: quoted", where);
	/* a root's key is not the tree's (a cloned block keeps its own) */
	cr_assert(root || !a->key == !b->key, "%s: key", where);
	if (a->key && !root)
		cr_assert_str_eq(a->key, b->key, "%s", where);
	cr_assert_eq(!a->str, !b->str, "%s: text", where);
	if (a->str)
		cr_assert_str_eq(a->str, b->str, "%s", where);
	cr_assert_eq(a->n, b->n, "%s: kids", where);
	for (size_t i = 0; i < a->n; i++)
		same_node(a->kids[i], b->kids[i], where, false);
}

static void same_tree(const struct yl_node *a, const struct yl_node *b, const char *where)
{
	same_node(a, b, where, true);
}

static void compile(const char *src, size_t len, char **img, size_t *ilen)
{
	char why[200] = "";

	cr_assert_eq(nvi_compile(src, len, img, ilen, why, sizeof(why)), 0, "%s", why);
}

static void round_trip(const char *src, size_t len, const char *name)
{
	struct yl_error err;
	struct yl_node *prof = yl_parse(src, len, &err), *t;
	char *img, why[200] = "";
	size_t ilen;
	struct nvi v;

	cr_assert_not_null(prof, "%s", name);
	compile(src, len, &img, &ilen);
	cr_assert_eq(nvi_open(&v, img, ilen, why, sizeof(why)), 0, "%s: %s", name, why);
	cr_assert(nvi_matches(&v, src, len));
	cr_assert_not(nvi_matches(&v, src, len - 1));
	cr_assert_eq(nvi_tree(&v, 0, &t, why, sizeof(why)), 0, "%s: %s", name, why);
	same_tree(prof, t, name);
	yl_free(t);
	for (size_t k = 1; k < nvi_tree_count(&v); k++) {
		struct yl_node *base;

		cr_assert_eq(nvi_device_base(prof, k - 1, &base), 0);
		cr_assert_eq(nvi_tree(&v, k, &t, why, sizeof(why)), 0, "%s: %s", name, why);
		if (base)
			same_tree(base, t, name);
		else
			cr_assert_eq(t->kind, YL_NULL, "%s: devices[%zu] is no mapping", name, k - 1);
		/* a decoded tree is an ordinary one: it can be edited and freed */
		if (t->kind == YL_MAP)
			cr_assert_eq(yl_map_set(t, "name", yl_new_scalar("edited")), 0);
		yl_free(base);
		yl_free(t);
	}
	nvi_close(&v);
	free(img);
	yl_free(prof);
}

Test(nvimage, round_trip_small)
{
	round_trip(small, strlen(small), "small");
}

Test(nvimage, round_trip_every_shipped_profile)
{
	const char *srcdir = getenv("MOKKA_SRCDIR") ? getenv("MOKKA_SRCDIR") : ".";
	char dir[4096], path[8192];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/etc/profiles", srcdir);
	cr_assert_not_null(d = opendir(dir), "%s", dir);
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		FILE *f;
		char *buf;
		long len;

		if (l < 6 || strcmp(e->d_name + l - 5, ".yaml"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		cr_assert_not_null(f = fopen(path, "rb"));
		fseek(f, 0, SEEK_END);
		len = ftell(f);
		rewind(f);
		buf = malloc((size_t)len + 1);
		cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
		fclose(f);
		round_trip(buf, (size_t)len, e->d_name);
		free(buf);
		n++;
	}
	closedir(d);
	cr_assert_gt(n, 3);
}

/* A private, aligned, resealed copy to corrupt. */
struct img {
	char *buf;
	size_t len;
	struct nvi_header *h;
	struct nvi_tree_rec *t;
	struct nvi_rec *n;
	char *s;
};

static struct img fresh(void)
{
	struct img m;

	compile(small, strlen(small), &m.buf, &m.len);
	m.h = (struct nvi_header *)m.buf;
	m.t = (struct nvi_tree_rec *)(m.h + 1);
	m.n = (struct nvi_rec *)(m.t + m.h->ntrees);
	m.s = (char *)(m.n + m.h->nnodes);
	return m;
}

static void reseal(struct img *m)
{
	m->h->checksum = nvi_hash(m->buf + sizeof(*m->h), m->len - sizeof(*m->h));
}

/* Opens and builds every tree: 0 when all of it is accepted. */
static int decode_all(const char *buf, size_t len, char *why, size_t whylen)
{
	struct nvi v;
	int rc = nvi_open(&v, buf, len, why, whylen);

	for (size_t k = 0; rc == 0 && k < nvi_tree_count(&v); k++) {
		struct yl_node *t;

		rc = nvi_tree(&v, k, &t, why, whylen);
		cr_assert(rc == 0 ? t != NULL : t == NULL);
		yl_free(t);
	}
	nvi_close(&v);
	return rc;
}

static void refused(struct img *m, bool seal, const char *what)
{
	char why[200] = "";

	if (seal)
		reseal(m);
	cr_assert_eq(decode_all(m->buf, m->len, why, sizeof(why)), -EINVAL, "%s accepted", what);
	cr_assert_neq(why[0], 0, "%s: no reason given", what);
	free(m->buf);
}

/* The first node of tree 1 (devices[0]'s base: a mapping) and its first kid. */
#define DEV0(m) (&(m).n[(m).t[1].first])

Test(nvimage, every_corruption_refused)
{
	struct img m;
	char why[200];
	uint32_t len;

	m = fresh(); cr_assert_eq(decode_all(m.buf, m.len, why, sizeof(why)), 0, "%s", why);
	free(m.buf);
	m = fresh(); m.buf[sizeof(*m.h) + 3] ^= 1; refused(&m, false, "a flipped bit (checksum)");
	m = fresh(); m.h->magic[0] = 'X'; refused(&m, true, "bad magic");
	m = fresh(); m.h->version++; refused(&m, true, "another version");
	m = fresh(); m.h->header_size++; refused(&m, true, "another header size");
	m = fresh(); m.h->total_size++; refused(&m, true, "a total size off by one");
	m = fresh(); m.h->reserved = 1; refused(&m, true, "reserved set");
	m = fresh(); m.h->ntrees = 0; refused(&m, true, "no tree");
	m = fresh(); m.h->ntrees = NVI_MAX_TREES + 1; refused(&m, true, "too many trees");
	m = fresh(); m.h->nnodes--; refused(&m, true, "a node count that does not add up");
	m = fresh(); m.h->strtab_size++; refused(&m, true, "a string table past the end");
	m = fresh(); m.len--; refused(&m, false, "a truncated file");
	m = fresh(); m.t[1].first++; refused(&m, true, "a tree that does not follow the last");
	m = fresh(); m.t[1].count--; m.t[2].first--; m.t[2].count++;
	refused(&m, true, "trees that split a tree");
	m = fresh(); m.t[0].bytes += 8; refused(&m, true, "a declared size too large");
	m = fresh(); m.t[0].bytes -= 8; refused(&m, true, "a declared size too small");
	m = fresh(); m.t[0].bytes = UINT32_MAX; refused(&m, true, "a size no tree can take");
	m = fresh(); m.t[0].zero = 1; refused(&m, true, "a tree record's padding set");
	m = fresh(); m.n[0].kind = 4; refused(&m, true, "an unknown kind");
	m = fresh(); m.n[0].flags = 2; refused(&m, true, "an unknown flag");
	m = fresh(); m.n[0].flags = NVI_QUOTED; refused(&m, true, "a quoted mapping");
	m = fresh(); m.n[0].zero = 1; refused(&m, true, "node padding set");
	m = fresh(); m.n[0].key = 0; refused(&m, true, "a key on a root");
	m = fresh(); m.n[1].key = NVI_NONE; refused(&m, true, "a mapping value without a key");
	m = fresh(); m.n[1].key = 1; refused(&m, true, "a key inside a string");
	m = fresh(); m.n[1].key = m.h->strtab_size; refused(&m, true, "a key past the table");
	m = fresh(); m.n[0].str = 0; refused(&m, true, "text on a mapping");
	m = fresh(); m.n[0].nkids = m.h->nnodes; refused(&m, true, "kids past the tree");
	m = fresh(); m.n[0].nkids--; refused(&m, true, "a node outside its root");
	/* version: "1.0" is the root's first kid, a scalar */
	m = fresh(); m.n[1].str = NVI_NONE; refused(&m, true, "a scalar without text");
	m = fresh(); m.n[1].nkids = 1; refused(&m, true, "a scalar with kids");
	m = fresh(); DEV0(m)->kind = YL_SEQ; refused(&m, true, "keyed kids in a sequence");
	m = fresh(); memcpy(&len, m.s, 4); m.s[4] = 0; refused(&m, true, "a NUL inside a string");
	m = fresh(); len = m.h->strtab_size; memcpy(m.s, &len, 4);
	refused(&m, true, "a string longer than the table");
	m = fresh(); memcpy(&len, m.s, 4); m.s[4 + len] = 'x';
	refused(&m, true, "a string without its NUL");
}

Test(nvimage, nesting_is_bounded)
{
	char src[4096] = "a:\n", *p = src + 3;
	char *img, why[200];
	size_t ilen;

	/* 64 levels are yaml_lite's own limit: an image may hold them */
	for (int i = 1; i < YL_MAX_DEPTH - 1; i++)
		p += sprintf(p, "%*sa:\n", i, "");
	p += sprintf(p, "%*sx: 1\n", YL_MAX_DEPTH - 1, "");
	compile(src, strlen(src), &img, &ilen);
	cr_assert_eq(decode_all(img, ilen, why, sizeof(why)), 0, "%s", why);
	free(img);

	/* one more level, encoded by hand (the parser refuses it) */
	struct yl_node *root = yl_new(YL_MAP), *n = root;

	for (int i = 0; i <= YL_MAX_DEPTH; i++) {
		struct yl_node *k = yl_new(YL_MAP);

		cr_assert_eq(yl_map_set(n, "a", k), 0);
		n = k;
	}
	cr_assert_eq(yl_map_set(n, "x", yl_new_scalar("1")), 0);
	const struct yl_node *trees[] = { root };
	cr_assert_eq(nvi_encode(trees, 1, "", 0, &img, &ilen), 0);
	cr_assert_eq(decode_all(img, ilen, why, sizeof(why)), -EINVAL);
	cr_assert(strstr(why, "deeper"), "%s", why);
	free(img);
	yl_free(root);
}

/* Every byte after the header mutated, resealed: refused or accepted
 * whole, never a crash (ASan/UBSan in CI). */
Test(nvimage, every_byte_mutated)
{
	struct img m = fresh();
	char *copy = malloc(m.len), why[200];
	const unsigned char deltas[] = { 0x01, 0x80, 0xff };

	for (size_t i = sizeof(*m.h); i < m.len; i++) {
		for (size_t d = 0; d < sizeof(deltas); d++) {
			struct nvi_header *h = (struct nvi_header *)copy;

			memcpy(copy, m.buf, m.len);
			copy[i] ^= (char)deltas[d];
			h->checksum = nvi_hash(copy + sizeof(*h), m.len - sizeof(*h));
			(void)decode_all(copy, m.len, why, sizeof(why));
		}
	}
	free(copy);
	free(m.buf);
}
