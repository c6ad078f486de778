/* A node of its own: the derivations (identity.h) and the profile
 * rewrite that applies them, through libyaml's document API so that the
 * compiler, the staged engine config the mock NVML reads and everything
 * that compiles that config again see the same identities. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "profile/compile.h"
#include "profile/identity.h"
#include "profile/yaml_doc.h"

#define MAX_TEMPLATES 128

/* FNV-1a-64 over the fields, each ended by a NUL so "ab","c" != "a","bc";
 * then SplitMix64's finalizer so every output bit depends on every input. */
static uint64_t hash_fields(uint64_t seed, const char *const *f, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ seed;

	for (size_t i = 0; i < n; i++) {
		for (const char *p = f[i] ? f[i] : ""; *p; p++)
			h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
		h *= 0x100000001b3ull;
	}
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

void identity_gpu_uuid(const char *node, const char *tmpl, int index, char *out)
{
	char idx[16];
	const char *f[] = { "gpu-uuid", node, tmpl, idx };
	uint64_t a, b;

	snprintf(idx, sizeof(idx), "%d", index);
	a = hash_fields(1, f, 4);
	b = hash_fields(2, f, 4);
	/* version 4 and the RFC 4122 variant: the shape every UUID parser takes */
	snprintf(out, IDENTITY_UUID_LEN, "GPU-%08x-%04x-%04x-%04x-%012llx",
		 (unsigned)(a >> 32), (unsigned)(a >> 16) & 0xffffu,
		 (unsigned)(a & 0x0fffu) | 0x4000u, (unsigned)(b >> 48 & 0x3fffu) | 0x8000u,
		 (unsigned long long)(b & 0xffffffffffffull));
}

void identity_serial(const char *node, const char *kind, const char *tmpl, unsigned salt,
		     char *out)
{
	char s[16];
	const char *f[] = { "serial", node, kind, tmpl, s };
	const char *prefix = "1650";

	if (tmpl && strspn(tmpl, "0123456789") >= 4)
		prefix = tmpl;
	snprintf(s, sizeof(s), "%u", salt);
	snprintf(out, IDENTITY_SERIAL_LEN, "%.4s%09llu", prefix,
		 (unsigned long long)(hash_fields(3, f, 5) % 1000000000ull));
}

uint32_t identity_node_id(const char *node)
{
	uint32_t h = 0x811c9dc5u;

	if (!node || !*node)
		return 0;
	for (; *node; node++)
		h = (h ^ (unsigned char)*node) * 16777619u;
	return h;
}

uint64_t identity_ib_node_guid(uint32_t prefix_hi, const char *node, int idx)
{
	uint32_t ident = ((identity_node_id(node) & 0x7fffffu) << 9) | ((uint32_t)idx << 1);

	return (uint64_t)prefix_hi << 32 | ident;
}

/* ------------------------------------------------------------------ */

/* One template serial and what it became on this node (per kind). */
struct serials {
	const char *kind;
	int n;
	char tmpl[MAX_TEMPLATES][32], out[MAX_TEMPLATES][IDENTITY_SERIAL_LEN];
};

/* The same template gives the same serial; a clash with another
 * template's is salted away (1 in 10^9 per pair). */
static const char *serial_for(struct serials *t, const char *node, const char *tmpl)
{
	char v[IDENTITY_SERIAL_LEN];
	int i, j;

	for (i = 0; i < t->n; i++)
		if (!strcmp(t->tmpl[i], tmpl))
			return t->out[i];
	if (t->n == MAX_TEMPLATES)
		return NULL;
	for (unsigned salt = 0;; salt++) {
		identity_serial(node, t->kind, tmpl, salt, v);
		for (j = 0; j < t->n && strcmp(t->out[j], v); j++)
			;
		if (j == t->n)
			break;
	}
	snprintf(t->tmpl[t->n], sizeof(t->tmpl[0]), "%s", tmpl);
	memcpy(t->out[t->n], v, sizeof(v));
	return t->out[t->n++];
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* map's scalar value for key, copied into buf ("" if none or not a scalar). */
static const char *get_str(yaml_document_t *d, int map, const char *key, char *buf, size_t n)
{
	yaml_node_t *v = yaml_document_get_node(d, ydoc_get(d, map, key));

	snprintf(buf, n, "%s", v && v->type == YAML_SCALAR_NODE ? (char *)v->data.scalar.value : "");
	return buf;
}

struct derive {
	yaml_document_t *d;
	const char *node;
	char dflt_serial[32];
	struct serials board, chassis;
};

/* map's key (a serial) -> the derived one, when map has it (or, for the
 * board serial, when dflt is set: the device inherits device_defaults'). */
static int derive_serial(struct derive *x, int map, const char *key, struct serials *t,
			 const char *dflt)
{
	char tmpl[32];
	const char *v;

	if (!map || yaml_document_get_node(x->d, map)->type != YAML_MAPPING_NODE)
		return 0;
	if (!*get_str(x->d, map, key, tmpl, sizeof(tmpl)) && (!dflt || !*dflt))
		return 0;
	if (!(v = serial_for(t, x->node, tmpl[0] ? tmpl : dflt)))
		return -ENOMEM;
	return ydoc_set_scalar(x->d, map, key, v, true);
}

static int derive_device(struct derive *x, int dev, int pos)
{
	char tmpl[64], buf[32], uuid[IDENTITY_UUID_LEN], *end;
	long index = pos;
	int rc;

	if (yaml_document_get_node(x->d, dev)->type != YAML_MAPPING_NODE)
		return 0;
	/* the compiler checks the index; a bad one here just falls back */
	if (*get_str(x->d, dev, "index", buf, sizeof(buf))) {
		index = strtol(buf, &end, 10);
		if (*end)
			index = pos;
	}
	identity_gpu_uuid(x->node, get_str(x->d, dev, "uuid", tmpl, sizeof(tmpl)), (int)index,
			  uuid);
	if ((rc = ydoc_set_scalar(x->d, dev, "uuid", uuid, true)) < 0 ||
	    (rc = derive_serial(x, dev, "serial", &x->board, x->dflt_serial)) < 0)
		return rc;
	return derive_serial(x, ydoc_get(x->d, dev, "platform"), "chassis_serial_number",
			     &x->chassis, NULL);
}

static int derive_all(yaml_document_t *d, const char *node)
{
	struct derive *x = calloc(1, sizeof(*x));
	int root = 1, defs, devs, n, rc = 0;

	if (!x)
		return -ENOMEM;
	x->d = d;
	x->node = node;
	x->board.kind = "board";
	x->chassis.kind = "chassis";
	defs = ydoc_get(d, root, "device_defaults");
	get_str(d, defs, "serial", x->dflt_serial, sizeof(x->dflt_serial));
	devs = ydoc_get(d, root, "devices");
	n = devs && yaml_document_get_node(d, devs)->type == YAML_SEQUENCE_NODE ?
	    (int)(yaml_document_get_node(d, devs)->data.sequence.items.top -
		  yaml_document_get_node(d, devs)->data.sequence.items.start) : 0;
	for (int i = 0; rc == 0 && i < n; i++)
		rc = derive_device(x, yaml_document_get_node(d, devs)->data.sequence.items.start[i], i);
	/* the defaults too, for GPUs a longer list would add */
	if (rc == 0 && defs)
		rc = derive_serial(x, defs, "serial", &x->board, NULL);
	if (rc == 0 && defs)
		rc = derive_serial(x, ydoc_get(d, defs, "platform"), "chassis_serial_number",
				   &x->chassis, NULL);
	if (rc == 0)
		rc = ydoc_set_scalar(d, root, IDENTITY_KEY, "pinned", false);
	free(x);
	return rc;
}

static int mode_of(yaml_document_t *d, const char *name, enum identity_mode *m, char *err,
		   size_t errlen)
{
	char v[32];
	int id = ydoc_get(d, 1, IDENTITY_KEY);
	yaml_mark_t at;

	*m = IDENTITY_DEFAULT;
	if (!id)
		return 0;
	get_str(d, 1, IDENTITY_KEY, v, sizeof(v));
	if (!strcmp(v, "pinned"))
		*m = IDENTITY_PINNED;
	else if (!strcmp(v, "derived"))
		*m = IDENTITY_DERIVED;
	if (*m != IDENTITY_DEFAULT)
		return 0;
	at = yaml_document_get_node(d, id)->start_mark;
	return fail(err, errlen, "%s:%zu:%zu: " IDENTITY_KEY ": want pinned or derived, got '%.32s'",
		    name, at.line + 1, at.column + 1, v);
}

int identity_apply(const char *name, const char *yaml, size_t len, const char *node,
		   bool by_default, char **out, size_t *olen, char *err, size_t errlen)
{
	enum identity_mode m = IDENTITY_DEFAULT;
	yaml_parser_t parser;
	yaml_document_t d;
	yaml_node_t *root;
	int rc;

	*out = NULL;
	*olen = 0;
	name = name ? name : "<profile>";
	/* most profiles never name the key: no second parse for them */
	if (!yaml || len > PROFILE_MAX_FILE ||
	    (!by_default && !memmem(yaml, len, IDENTITY_KEY, strlen(IDENTITY_KEY))))
		return 0;
	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	rc = yaml_parser_load(&parser, &d);
	yaml_parser_delete(&parser);
	if (!rc)
		return 0;	/* the compiler says where and why */
	root = yaml_document_get_root_node(&d);
	rc = !root || root->type != YAML_MAPPING_NODE ? 0 : mode_of(&d, name, &m, err, errlen);
	if (rc < 0 || !root || root->type != YAML_MAPPING_NODE || !node || !*node ||
	    m == IDENTITY_PINNED || (m == IDENTITY_DEFAULT && !by_default)) {
		yaml_document_delete(&d);
		return rc;
	}
	if ((rc = derive_all(&d, node)) < 0) {
		yaml_document_delete(&d);
		return rc;
	}
	return ydoc_emit(&d, out, olen, NULL);
}
