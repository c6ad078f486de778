/* nvimage: the encoder and compiler (nvimage.h), for the gpudriver worker
 * and the tests; the library only decodes.  Strings are stored once each
 * (keys and values repeat across the device trees). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvimage/nvimage.h"

struct enc {
	struct nvi_rec *nodes;
	size_t nnodes, cap;
	char *str;		/* the string table */
	size_t nstr, strcap;
	uint32_t *slots;	/* open addressing over string offsets (+1; 0 free) */
	size_t nslots, used;
	size_t bytes;		/* the current tree's decoded size */
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t c = *cap ? *cap : 64;
	void *n;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	if (!(n = realloc(*p, c * elem)))
		return -ENOMEM;
	*p = n;
	*cap = c;
	return 0;
}

static int rehash(struct enc *e)
{
	size_t n = e->nslots ? e->nslots * 2 : 256;
	uint32_t *s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < e->nslots; i++) {
		uint32_t len, off = e->slots[i];
		size_t j;

		if (!off--)
			continue;
		memcpy(&len, e->str + off, 4);
		for (j = nvi_hash(e->str + off + 4, len) & (n - 1); s[j]; j = (j + 1) & (n - 1))
			;
		s[j] = off + 1;
	}
	free(e->slots);
	e->slots = s;
	e->nslots = n;
	return 0;
}

/* The offset of s (len bytes) in the table, added when new. */
static int intern(struct enc *e, const char *s, size_t len, uint32_t *off)
{
	uint32_t l32 = (uint32_t)len, have;
	size_t j;

	if (len > NVI_MAX_SIZE || e->nstr + len + 5 > NVI_MAX_SIZE)
		return -EFBIG;
	if ((e->used + 1) * 2 > e->nslots && rehash(e) < 0)
		return -ENOMEM;
	for (j = nvi_hash(s, len) & (e->nslots - 1); e->slots[j]; j = (j + 1) & (e->nslots - 1)) {
		*off = e->slots[j] - 1;
		memcpy(&have, e->str + *off, 4);
		if (have == l32 && !memcmp(e->str + *off + 4, s, len))
			return 0;
	}
	if (grow((void **)&e->str, &e->strcap, e->nstr + len + 5, 1) < 0)
		return -ENOMEM;
	*off = (uint32_t)e->nstr;
	memcpy(e->str + e->nstr, &l32, 4);
	memcpy(e->str + e->nstr + 4, s, len);
	e->str[e->nstr + 4 + len] = 0;
	e->nstr += len + 5;
	e->slots[j] = *off + 1;
	e->used++;
	return 0;
}

static int put(struct enc *e, const struct yl_node *n, bool keyed)
{
	static const struct yl_node null_node = { .kind = YL_NULL };
	struct nvi_rec r = { .key = NVI_NONE, .str = NVI_NONE };
	int rc;

	if (!n)
		n = &null_node;
	if (e->nnodes >= NVI_MAX_SIZE / sizeof(r))
		return -EFBIG;
	if (grow((void **)&e->nodes, &e->cap, e->nnodes + 1, sizeof(r)) < 0)
		return -ENOMEM;
	r.kind = (uint8_t)n->kind;
	r.flags = n->kind == YL_SCALAR && n->quoted ? NVI_QUOTED : 0;
	r.nkids = n->kind == YL_MAP || n->kind == YL_SEQ ? (uint32_t)n->n : 0;
	const char *key = keyed ? (n->key ? n->key : "") : NULL;
	const char *text = n->kind == YL_MAP || n->kind == YL_SEQ ? NULL
			 : n->str ? n->str : n->kind == YL_SCALAR ? "" : NULL;
	long klen = key ? (long)strlen(key) : -1;
	long slen = text ? (long)(n->str ? strnlen(text, n->len) : 0) : -1;

	if (key && (rc = intern(e, key, (size_t)klen, &r.key)) < 0)
		return rc;
	if (text && (rc = intern(e, text, (size_t)slen, &r.str)) < 0)
		return rc;
	e->bytes += nvi_node_bytes(r.nkids, klen, slen);
	e->nodes[e->nnodes++] = r;
	for (size_t i = 0; i < r.nkids; i++)
		if ((rc = put(e, n->kids[i], n->kind == YL_MAP)) < 0)
			return rc;
	return 0;
}

int nvi_encode(const struct yl_node *const *trees, size_t ntrees, const void *src,
	       size_t srclen, char **out, size_t *outlen)
{
	struct enc e = { 0 };
	struct nvi_header h = { .version = NVI_VERSION, .header_size = sizeof(h) };
	struct nvi_tree_rec *tr = NULL;
	size_t size;
	char *buf;
	int rc = 0;

	*out = NULL;
	if (ntrees == 0 || ntrees > NVI_MAX_TREES)
		return -EINVAL;
	if (!(tr = calloc(ntrees, sizeof(*tr))))
		return -ENOMEM;
	for (size_t k = 0; rc == 0 && k < ntrees; k++) {
		tr[k].first = (uint32_t)e.nnodes;
		e.bytes = 0;
		rc = put(&e, trees[k], false);
		tr[k].count = (uint32_t)(e.nnodes - tr[k].first);
		if (rc == 0 && e.bytes > UINT32_MAX)
			rc = -EFBIG;
		tr[k].bytes = (uint32_t)e.bytes;
	}
	size = sizeof(h) + ntrees * sizeof(*tr) + e.nnodes * sizeof(struct nvi_rec) + e.nstr;
	if (rc == 0 && size > NVI_MAX_SIZE)
		rc = -EFBIG;
	if (rc == 0 && !(buf = malloc(size)))
		rc = -ENOMEM;
	if (rc == 0) {
		memcpy(h.magic, NVI_MAGIC, sizeof(h.magic));
		h.total_size = size;
		h.source_size = srclen;
		h.source_hash = nvi_hash(src, srclen);
		h.ntrees = (uint32_t)ntrees;
		h.nnodes = (uint32_t)e.nnodes;
		h.strtab_size = (uint32_t)e.nstr;
		memcpy(buf + sizeof(h), tr, ntrees * sizeof(*tr));
		memcpy(buf + sizeof(h) + ntrees * sizeof(*tr), e.nodes,
		       e.nnodes * sizeof(struct nvi_rec));
		if (e.nstr)
			memcpy(buf + size - e.nstr, e.str, e.nstr);
		h.checksum = nvi_hash(buf + sizeof(h), size - sizeof(h));
		memcpy(buf, &h, sizeof(h));
		*out = buf;
		*outlen = size;
	}
	free(tr);
	free(e.nodes);
	free(e.str);
	free(e.slots);
	return rc;
}

int nvi_compile(const char *src, size_t srclen, char **out, size_t *outlen, char *why,
		size_t whylen)
{
	struct yl_error err;
	struct yl_node *prof = yl_parse(src, srclen, &err), **trees = NULL;
	size_t ndev, k;
	int rc = 0;

	*out = NULL;
	if (!prof) {
		yl_error_format(&err, why, whylen);
		return -EINVAL;
	}
	ndev = yl_get(prof, "devices") && yl_get(prof, "devices")->kind == YL_SEQ ?
	       yl_get(prof, "devices")->n : 0;
	if (ndev + 1 > NVI_MAX_TREES) {
		snprintf(why, whylen, "%zu devices: an image holds at most %u", ndev,
			 NVI_MAX_TREES - 1);
		rc = -EINVAL;
	} else if (!(trees = calloc(ndev + 1, sizeof(*trees)))) {
		rc = -ENOMEM;
	}
	if (rc == 0)
		trees[0] = prof;
	for (k = 0; rc == 0 && k < ndev; k++)
		rc = nvi_device_base(prof, k, &trees[k + 1]);
	if (rc == 0)
		rc = nvi_encode((const struct yl_node *const *)trees, ndev + 1, src, srclen, out,
				outlen);
	if (rc < 0 && rc != -EINVAL)
		snprintf(why, whylen, "%s", strerror(-rc));
	for (k = 1; trees && k <= ndev; k++)
		yl_free(trees[k]);
	free(trees);
	yl_free(prof);
	return rc;
}
