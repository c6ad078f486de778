/* nvimage: the strict decoder (nvimage.h).  Every byte is untrusted: the
 * header's sizes must add up to the file exactly, the checksum must match,
 * the trees must tile the node table in order, every string must be whole
 * (length, bytes, NUL, none inside), and each node's references, kind,
 * flags, kid count and depth are checked while its tree is built, into a
 * block of the size the tree declared, exactly.  libc only. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvimage/nvimage.h"

#define ALIGN _Alignof(struct yl_node)

__attribute__((format(printf, 3, 4)))
static int bad(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (why && whylen)
		vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

size_t nvi_node_bytes(uint32_t nkids, long keylen, long strlen)
{
	size_t s = sizeof(struct yl_node) + nkids * sizeof(struct yl_node *) +
		   (keylen >= 0 ? (size_t)keylen + 1 : 0) + (strlen >= 0 ? (size_t)strlen + 1 : 0);

	return (s + ALIGN - 1) / ALIGN * ALIGN;
}

static int check_header(const struct nvi_header *h, size_t len, char *why, size_t whylen)
{
	uint64_t want;

	if (len < sizeof(*h))
		return bad(why, whylen, "%zu bytes: shorter than the header", len);
	if (memcmp(h->magic, NVI_MAGIC, sizeof(h->magic)))
		return bad(why, whylen, "not an image (bad magic)");
	if (h->version != NVI_VERSION || h->header_size != sizeof(*h))
		return bad(why, whylen, "version %u (header %u bytes): this library reads %u",
			   h->version, h->header_size, NVI_VERSION);
	if (len > NVI_MAX_SIZE || h->total_size != len || h->reserved)
		return bad(why, whylen, "size %llu in the header, %zu on disk",
			   (unsigned long long)h->total_size, len);
	want = sizeof(*h) + (uint64_t)h->ntrees * sizeof(struct nvi_tree_rec) +
	       (uint64_t)h->nnodes * sizeof(struct nvi_rec) + h->strtab_size;
	if (h->ntrees == 0 || h->ntrees > NVI_MAX_TREES || h->nnodes < h->ntrees || want != len)
		return bad(why, whylen, "%u trees, %u nodes, %u string bytes do not make %zu bytes",
			   h->ntrees, h->nnodes, h->strtab_size, len);
	if (nvi_hash((const char *)h + sizeof(*h), len - sizeof(*h)) != h->checksum)
		return bad(why, whylen, "checksum mismatch");
	return 0;
}

/* The table is strings back to back; each start goes into the bitmap. */
static int check_strings(struct nvi *img, char *why, size_t whylen)
{
	size_t size = img->hdr->strtab_size, off = 0;
	uint32_t len;

	if (!(img->starts = calloc(size / 8 + 1, 1)))
		return -ENOMEM;
	while (off < size) {
		const char *s = img->strtab + off + 4;

		if (size - off < 5)
			return bad(why, whylen, "string at %zu: cut short", off);
		memcpy(&len, img->strtab + off, 4);
		if (len > size - off - 5 || s[len] != 0 || memchr(s, 0, len))
			return bad(why, whylen, "string at %zu: bad length %u or NUL", off, len);
		img->starts[off / 8] |= (unsigned char)(1u << off % 8);
		if (len > img->max_str)
			img->max_str = len;
		off += (size_t)len + 5;
	}
	return 0;
}

int nvi_open(struct nvi *img, const void *buf, size_t len, char *why, size_t whylen)
{
	const struct nvi_header *h = buf;
	size_t first = 0;
	int rc;

	memset(img, 0, sizeof(*img));
	if ((uintptr_t)buf % _Alignof(uint64_t))
		return bad(why, whylen, "buffer not aligned");
	if ((rc = check_header(h, len, why, whylen)) < 0)
		return rc;
	img->hdr = h;
	img->trees = (const struct nvi_tree_rec *)(h + 1);
	img->nodes = (const struct nvi_rec *)(img->trees + h->ntrees);
	img->strtab = (const char *)(img->nodes + h->nnodes);
	if ((rc = check_strings(img, why, whylen)) < 0)
		goto err;
	for (uint32_t k = 0; k < h->ntrees; k++) {
		const struct nvi_tree_rec *t = &img->trees[k];
		/* What count nodes can take at most (each with two of the
		 * longest strings, and count - 1 kid pointers between them), so
		 * a forged size never makes nvi_tree allocate more. */
		uint64_t most = (uint64_t)t->count * (nvi_node_bytes(1, (long)img->max_str,
								       (long)img->max_str));

		if (t->first != first || t->count == 0 || t->count > h->nnodes - first || t->zero ||
		    t->bytes < sizeof(struct yl_node) || t->bytes > most ||
		    t->bytes > NVI_MAX_TREE_BYTES) {
			rc = bad(why, whylen, "tree %u: nodes %u+%u (%u bytes), expected from %zu",
				 k, t->first, t->count, t->bytes, first);
			goto err;
		}
		first += t->count;
	}
	if (first != h->nnodes) {
		rc = bad(why, whylen, "%zu nodes outside every tree", h->nnodes - first);
		goto err;
	}
	return 0;
err:
	nvi_close(img);
	return rc;
}

void nvi_close(struct nvi *img)
{
	free(img->starts);
	memset(img, 0, sizeof(*img));
}

size_t nvi_tree_count(const struct nvi *img)
{
	return img->hdr ? img->hdr->ntrees : 0;
}

int nvi_matches(const struct nvi *img, const void *src, size_t len)
{
	return img->hdr && img->hdr->source_size == len && img->hdr->source_hash == nvi_hash(src, len);
}

struct walk {
	const struct nvi *img;
	size_t next, end;	/* node cursor within the tree */
	char *at, *limit;	/* the block being filled */
	char *why;
	size_t whylen;
};

/* A string checked by check_strings: its length, or -1 when off is no
 * string's start. */
static long str_len(const struct nvi *img, uint32_t off)
{
	uint32_t len;

	if (off >= img->hdr->strtab_size || !(img->starts[off / 8] & (1u << off % 8)))
		return -1;
	memcpy(&len, img->strtab + off, 4);
	return (long)len;
}

static int node_ok(struct walk *w, const struct nvi_rec *r, size_t at, unsigned depth,
		   bool keyed, long *klen, long *slen)
{
	*klen = *slen = -1;
	if (r->kind > YL_SEQ || (r->flags & ~NVI_QUOTED) || r->zero ||
	    ((r->flags & NVI_QUOTED) && r->kind != YL_SCALAR))
		return bad(w->why, w->whylen, "node %zu: bad kind %u or flags %#x", at,
			   r->kind, r->flags);
	if (keyed != (r->key != NVI_NONE))
		return bad(w->why, w->whylen, "node %zu: %s", at,
			   keyed ? "a mapping value without a key" : "a key outside a mapping");
	if (keyed && (*klen = str_len(w->img, r->key)) < 0)
		return bad(w->why, w->whylen, "node %zu: key offset %u is no string", at, r->key);
	if ((r->kind == YL_SCALAR && r->str == NVI_NONE) ||
	    ((r->kind == YL_MAP || r->kind == YL_SEQ) && r->str != NVI_NONE))
		return bad(w->why, w->whylen, "node %zu: text on a collection or none on a scalar",
			   at);
	if (r->str != NVI_NONE && (*slen = str_len(w->img, r->str)) < 0)
		return bad(w->why, w->whylen, "node %zu: text offset %u is no string", at, r->str);
	if (r->nkids && r->kind != YL_MAP && r->kind != YL_SEQ)
		return bad(w->why, w->whylen, "node %zu: a scalar with kids", at);
	if (r->nkids > w->end - w->next)
		return bad(w->why, w->whylen, "node %zu: %u kids, the tree has %zu more nodes",
			   at, r->nkids, w->end - w->next);
	if (r->nkids && depth >= YL_MAX_DEPTH)
		return bad(w->why, w->whylen, "node %zu: nested deeper than %u", at, YL_MAX_DEPTH);
	return 0;
}

static char *copy_str(const struct nvi *img, uint32_t off, long len, char **p)
{
	char *s = *p;

	memcpy(s, img->strtab + off + 4, (size_t)len + 1);
	*p += len + 1;
	return s;
}

/* Checks node w->next and lays it out as yl_clone does, then its kids. */
static int build(struct walk *w, unsigned depth, bool keyed, struct yl_node **out)
{
	const struct nvi_rec *r;
	struct yl_node *c;
	size_t at = w->next, own;
	long klen, slen;
	char *p;
	int rc;

	if (w->next >= w->end)
		return bad(w->why, w->whylen, "node %zu: kids run past their tree", at);
	r = &w->img->nodes[w->next++];
	if ((rc = node_ok(w, r, at, depth, keyed, &klen, &slen)) < 0)
		return rc;
	own = nvi_node_bytes(r->nkids, klen, slen);
	if (own > (size_t)(w->limit - w->at))
		return bad(w->why, w->whylen, "node %zu: past the tree's declared size", at);
	c = (struct yl_node *)w->at;
	w->at += own;
	p = (char *)(c + 1) + r->nkids * sizeof(c->kids[0]);
	*c = (struct yl_node){ .kind = (enum yl_kind)r->kind, .quoted = r->flags & NVI_QUOTED,
			       .in_block = depth > 0 };
	if (klen >= 0) {
		c->key = copy_str(w->img, r->key, klen, &p);
		c->key_inline = true;
	}
	if (slen >= 0) {
		c->str = copy_str(w->img, r->str, slen, &p);
		c->len = (size_t)slen;
		c->str_inline = true;
	}
	if (r->nkids) {
		c->kids = (struct yl_node **)(c + 1);
		c->kids_inline = true;
		c->cap = r->nkids;
	}
	*out = c;
	for (uint32_t i = 0; i < r->nkids; i++) {
		if ((rc = build(w, depth + 1, r->kind == YL_MAP, &c->kids[i])) < 0)
			return rc;
		c->n++;	/* yl_free sees only what was built */
	}
	return 0;
}

int nvi_tree(const struct nvi *img, size_t k, struct yl_node **out, char *why, size_t whylen)
{
	const struct nvi_tree_rec *t;
	struct walk w;
	char *block;
	int rc;

	*out = NULL;
	if (!img->hdr || k >= img->hdr->ntrees)
		return bad(why, whylen, "no tree %zu", k);
	t = &img->trees[k];
	if (!(block = malloc(t->bytes)))
		return -ENOMEM;
	w = (struct walk){ img, t->first, (size_t)t->first + t->count, block, block + t->bytes,
			   why, whylen };
	rc = build(&w, 0, false, out);
	if (rc == 0 && (w.next != w.end || w.at != w.limit))
		rc = bad(why, whylen, "tree %zu: %zu nodes outside its root or %zu bytes unused",
			 k, w.end - w.next, (size_t)(w.limit - w.at));
	if (rc < 0) {
		free(block);
		*out = NULL;
	}
	return rc;
}
