/* The device state document (devstate.h): a versioned line format,
 *
 *   mokka-devstate 1
 *   pm 1 | cm 3 | pl 300000 | ac <mem> <gr> | lgc <min> <max> | lmc <min> <max>
 *   ecc <cur> <pend> | mig <cur> <pend> | acct 1 | boost 0 | serial <next>
 *   gi <id> <profile> <start> <size> <serial>
 *   ci <gi> <id> <profile> <start> <size> <serial>
 *   end
 *
 * and the instance helpers.  Text so an operator can read it; strict so a
 * torn or foreign file is refused whole instead of half-applied. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "devstate/devstate.h"

#define DS_HEADER "mokka-devstate"
#define MAX_WORDS 8

struct rule {
	const char *key;
	unsigned field;		/* DS_* bit, 0 for gi/ci/serial */
	unsigned nargs;
	uint32_t max;		/* every argument's bound */
};

static const struct rule rules[] = {
	{ "pm", DS_PM, 1, 1 }, { "cm", DS_CM, 1, 3 }, { "pl", DS_PL, 1, 10000000 },
	{ "ac", DS_AC, 2, 100000 }, { "lgc", DS_LGC, 2, 100000 },
	{ "lmc", DS_LMC, 2, 100000 }, { "ecc", DS_ECC, 2, 1 }, { "mig", DS_MIG, 2, 1 },
	{ "acct", DS_ACCT, 1, 1 }, { "boost", DS_BOOST, 1, 1 },
	{ "serial", 0, 1, UINT32_MAX }, { "gi", 0, 5, UINT32_MAX },
	{ "ci", 0, 6, UINT32_MAX }, { "end", 0, 0, 0 },
};

static int fail(char *why, size_t n, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *why, size_t n, unsigned line, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (why && n) {
		k = snprintf(why, n, "line %u: ", line);
		va_start(ap, fmt);
		if (k >= 0 && (size_t)k < n)
			vsnprintf(why + k, n - (size_t)k, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Decimal digits only, no leading zero (one canonical spelling), <= max. */
static bool parse_u32(const char *s, size_t len, uint32_t max, uint32_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > 10 || (len > 1 && s[0] == '0'))
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > max)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* Split one line into words separated by single spaces. */
static int split(const char *p, size_t len, const char *w[], size_t wl[])
{
	int n = 0;
	size_t i = 0;

	while (i < len) {
		size_t j = i;

		while (j < len && p[j] != ' ')
			j++;
		if (j == i || n == MAX_WORDS)
			return -1;	/* empty word (double/edge space) or too many */
		w[n] = p + i, wl[n++] = j - i;
		i = j + 1;
		if (j < len && i == len)
			return -1;	/* trailing space */
	}
	return n;
}

static int apply_gi(struct ds_gpu *g, const uint32_t *a, unsigned line, char *why, size_t n)
{
	struct ds_gi gi = { 0 };

	if (a[0] >= DS_MAX_GI || a[1] > 255 || a[2] > 7 || a[3] < 1 || a[3] > 8 ||
	    a[2] + a[3] > 8)
		return fail(why, n, line, "gi %u: id, profile or placement out of range", a[0]);
	gi.id = (uint8_t)a[0], gi.profile = (uint8_t)a[1];
	gi.start = (uint8_t)a[2], gi.size = (uint8_t)a[3], gi.serial = a[4];
	if (ds_gi_add(g, &gi) < 0)
		return fail(why, n, line, "gi %u: duplicate or too many", a[0]);
	return 0;
}

static int apply_ci(struct ds_gpu *g, const uint32_t *a, unsigned line, char *why, size_t n)
{
	struct ds_gi *gi = a[0] < DS_MAX_GI ? ds_gi_find(g, a[0]) : NULL;
	struct ds_ci ci = { 0 };

	if (!gi)
		return fail(why, n, line, "ci of gi %u: no such gi before it", a[0]);
	if (a[1] >= DS_MAX_CI || a[2] > 255 || a[3] > 7 || a[4] < 1 || a[4] > 8 ||
	    a[3] + a[4] > 8)
		return fail(why, n, line, "ci %u/%u: id, profile or placement out of range",
			    a[0], a[1]);
	ci.id = (uint8_t)a[1], ci.profile = (uint8_t)a[2];
	ci.start = (uint8_t)a[3], ci.size = (uint8_t)a[4], ci.serial = a[5];
	if (ds_ci_add(gi, &ci) < 0)
		return fail(why, n, line, "ci %u/%u: duplicate or too many", a[0], a[1]);
	return 0;
}

static void apply_field(struct ds_gpu *g, unsigned field, const uint32_t *a)
{
	switch (field) {
	case DS_PM: g->pm = (uint8_t)a[0]; break;
	case DS_CM: g->cm = (uint8_t)a[0]; break;
	case DS_PL: g->pl_mw = a[0]; break;
	case DS_AC: g->ac_mem = a[0], g->ac_gr = a[1]; break;
	case DS_LGC: g->lgc_min = a[0], g->lgc_max = a[1]; break;
	case DS_LMC: g->lmc_min = a[0], g->lmc_max = a[1]; break;
	case DS_ECC: g->ecc_cur = (uint8_t)a[0], g->ecc_pend = (uint8_t)a[1]; break;
	case DS_MIG: g->mig_cur = (uint8_t)a[0], g->mig_pend = (uint8_t)a[1]; break;
	case DS_ACCT: g->acct = (uint8_t)a[0]; break;
	case DS_BOOST: g->boost = (uint8_t)a[0]; break;
	default: break;
	}
	g->set |= field;
}

/* One body line; *done once "end" was read. */
static int decode_line(struct ds_gpu *g, const char *p, size_t len, unsigned line,
		       bool *seen_serial, bool *done, char *why, size_t n)
{
	const char *w[MAX_WORDS];
	size_t wl[MAX_WORDS];
	uint32_t a[MAX_WORDS];
	int nw = split(p, len, w, wl);

	if (nw <= 0)
		return fail(why, n, line, "empty line or stray spaces");
	for (size_t r = 0; r < sizeof(rules) / sizeof(rules[0]); r++) {
		const struct rule *ru = &rules[r];

		if (strlen(ru->key) != wl[0] || memcmp(ru->key, w[0], wl[0]) != 0)
			continue;
		if ((unsigned)nw != ru->nargs + 1)
			return fail(why, n, line, "'%s' takes %u value(s)", ru->key, ru->nargs);
		for (unsigned i = 0; i < ru->nargs; i++)
			if (!parse_u32(w[i + 1], wl[i + 1], ru->max, &a[i]))
				return fail(why, n, line, "'%s': value %u is not a number 0..%u",
					    ru->key, i + 1, ru->max);
		if (ru->field) {
			if (g->set & ru->field)
				return fail(why, n, line, "'%s' given twice", ru->key);
			apply_field(g, ru->field, a);
			return 0;
		}
		if (!strcmp(ru->key, "end"))
			return *done = true, 0;
		if (!strcmp(ru->key, "serial")) {
			if (*seen_serial)
				return fail(why, n, line, "'serial' given twice");
			*seen_serial = true;
			g->next_serial = a[0];
			return 0;
		}
		return ru->nargs == 5 ? apply_gi(g, a, line, why, n) : apply_ci(g, a, line, why, n);
	}
	return fail(why, n, line, "unknown key '%.*s'", (int)(wl[0] > 32 ? 32 : wl[0]), w[0]);
}

int ds_decode(const char *buf, size_t len, struct ds_gpu *out, char *why, size_t whylen)
{
	char header[32];
	const char *p = buf, *end = buf + len;
	bool seen_serial = false, done = false;
	unsigned line = 1;
	size_t hl;
	int r;

	memset(out, 0, sizeof(*out));
	if (len > DS_MAX_DOC)
		return fail(why, whylen, 0, "document larger than %d bytes", DS_MAX_DOC);
	hl = (size_t)snprintf(header, sizeof(header), DS_HEADER " %d\n", DS_VERSION);
	if (len < hl || memcmp(buf, header, hl) != 0)
		return fail(why, whylen, 1, "not a '" DS_HEADER " %d' document", DS_VERSION);
	for (p += hl; p < end && !done; ) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		line++;
		if (!nl)
			r = fail(why, whylen, line, "unterminated line (torn write?)");
		else if (memchr(p, '\0', (size_t)(nl - p)))
			r = fail(why, whylen, line, "NUL byte");
		else
			r = decode_line(out, p, (size_t)(nl - p), line, &seen_serial, &done, why,
					whylen);
		if (r < 0) {
			memset(out, 0, sizeof(*out));	/* refused whole: nothing half-applied */
			return r;
		}
		p = nl + 1;
	}
	if (!done || p != end) {
		memset(out, 0, sizeof(*out));
		return fail(why, whylen, line, done ? "bytes after 'end'" : "no 'end' line");
	}
	return 0;
}

int ds_encode(const struct ds_gpu *g, char *buf, size_t size)
{
	size_t k = 0;
	int r;

#define OUT(...) do { \
		r = snprintf(buf + k, size - k, __VA_ARGS__); \
		if (r < 0 || (size_t)r >= size - k) \
			return -ENOSPC; \
		k += (size_t)r; \
	} while (0)
	if (size == 0)
		return -ENOSPC;
	OUT(DS_HEADER " %d\n", DS_VERSION);
	if (g->set & DS_PM) OUT("pm %u\n", g->pm);
	if (g->set & DS_CM) OUT("cm %u\n", g->cm);
	if (g->set & DS_PL) OUT("pl %u\n", g->pl_mw);
	if (g->set & DS_AC) OUT("ac %u %u\n", g->ac_mem, g->ac_gr);
	if (g->set & DS_LGC) OUT("lgc %u %u\n", g->lgc_min, g->lgc_max);
	if (g->set & DS_LMC) OUT("lmc %u %u\n", g->lmc_min, g->lmc_max);
	if (g->set & DS_ECC) OUT("ecc %u %u\n", g->ecc_cur, g->ecc_pend);
	if (g->set & DS_MIG) OUT("mig %u %u\n", g->mig_cur, g->mig_pend);
	if (g->set & DS_ACCT) OUT("acct %u\n", g->acct);
	if (g->set & DS_BOOST) OUT("boost %u\n", g->boost);
	if (g->next_serial) OUT("serial %u\n", g->next_serial);
	for (unsigned i = 0; i < g->ngi; i++) {
		const struct ds_gi *gi = &g->gi[i];

		OUT("gi %u %u %u %u %u\n", gi->id, gi->profile, gi->start, gi->size, gi->serial);
		for (unsigned j = 0; j < gi->nci; j++)
			OUT("ci %u %u %u %u %u %u\n", gi->id, gi->ci[j].id, gi->ci[j].profile,
			    gi->ci[j].start, gi->ci[j].size, gi->ci[j].serial);
	}
	OUT("end\n");
#undef OUT
	return (int)k;
}

/* ---- instances ------------------------------------------------------ */

struct ds_gi *ds_gi_find(struct ds_gpu *g, unsigned id)
{
	for (unsigned i = 0; i < g->ngi; i++)
		if (g->gi[i].id == id)
			return &g->gi[i];
	return NULL;
}

int ds_gi_add(struct ds_gpu *g, const struct ds_gi *gi)
{
	unsigned i;

	if (ds_gi_find(g, gi->id))
		return -EEXIST;
	if (g->ngi >= DS_MAX_GI)
		return -ENOSPC;
	for (i = g->ngi; i > 0 && g->gi[i - 1].id > gi->id; i--)
		g->gi[i] = g->gi[i - 1];
	g->gi[i] = *gi;
	g->gi[i].nci = 0;
	g->ngi++;
	return 0;
}

void ds_gi_remove(struct ds_gpu *g, unsigned id)
{
	struct ds_gi *gi = ds_gi_find(g, id);
	size_t at;

	if (!gi)
		return;
	at = (size_t)(gi - g->gi);
	memmove(gi, gi + 1, (g->ngi - at - 1) * sizeof(*gi));
	g->ngi--;
}

struct ds_ci *ds_ci_find(struct ds_gi *gi, unsigned id)
{
	for (unsigned i = 0; i < gi->nci; i++)
		if (gi->ci[i].id == id)
			return &gi->ci[i];
	return NULL;
}

int ds_ci_add(struct ds_gi *gi, const struct ds_ci *ci)
{
	unsigned i;

	if (ds_ci_find(gi, ci->id))
		return -EEXIST;
	if (gi->nci >= DS_MAX_CI)
		return -ENOSPC;
	for (i = gi->nci; i > 0 && gi->ci[i - 1].id > ci->id; i--)
		gi->ci[i] = gi->ci[i - 1];
	gi->ci[i] = *ci;
	gi->nci++;
	return 0;
}

void ds_ci_remove(struct ds_gi *gi, unsigned id)
{
	struct ds_ci *ci = ds_ci_find(gi, id);
	size_t at;

	if (!ci)
		return;
	at = (size_t)(ci - gi->ci);
	memmove(ci, ci + 1, (gi->nci - at - 1) * sizeof(*ci));
	gi->nci--;
}

/* ---- MIG device UUIDs -------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

void ds_mig_uuid(const char *parent_uuid, unsigned gi, unsigned ci, uint32_t serial,
		 char *out, size_t size)
{
	uint64_t h = 1469598103934665603ull, a, b;

	for (const char *s = parent_uuid; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	a = mix(h ^ ((uint64_t)gi << 40) ^ ((uint64_t)ci << 32) ^ serial);
	b = mix(a ^ 0x4d49472dull);
	/* shaped like the driver's (RFC 4122 version 5, variant 1) */
	snprintf(out, size, "MIG-%08x-%04x-5%03x-%04x-%012llx", (unsigned)(a >> 32),
		 (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xfff,
		 (unsigned)(0x8000 | ((b >> 48) & 0x3fff)),
		 (unsigned long long)(b & 0xffffffffffffull));
}
