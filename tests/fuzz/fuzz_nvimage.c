/* Fuzz the compiled profile image's decoder (nvimage/nvimage_dec.c): the
 * input, resealed (its checksum recomputed, so mutations reach the
 * structural checks), is opened and every tree built; it must never
 * crash, a refused tree is never handed out, and an accepted image
 * re-encodes to one that decodes to the same trees, node by node. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nvimage/nvimage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Node by node, in order (yl_equal looks keys up, and the decoder does
 * not refuse a mapping that repeats a key: yl_get takes the first). */
static bool same(const struct yl_node *a, const struct yl_node *b, bool root)
{
	if (a->kind != b->kind || a->quoted != b->quoted || a->n != b->n ||
	    !a->str != !b->str || (a->str && strcmp(a->str, b->str)) ||
	    (!root && (!a->key != !b->key || (a->key && strcmp(a->key, b->key)))))
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (!same(a->kids[i], b->kids[i], false))
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct yl_node *trees[8] = { 0 };
	char *buf = malloc(size + 1), *again = NULL, why[200];
	size_t n = 0, alen;
	struct nvi v;
	int rc;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (size >= sizeof(struct nvi_header)) {
		struct nvi_header *h = (struct nvi_header *)buf;

		h->checksum = nvi_hash(buf + sizeof(*h), size - sizeof(*h));
	}
	rc = nvi_open(&v, buf, size, why, sizeof(why));
	for (size_t k = 0; rc == 0 && k < nvi_tree_count(&v) && k < 8; k++, n = k) {
		rc = nvi_tree(&v, k, &trees[k], why, sizeof(why));
		if ((rc == 0) != (trees[k] != NULL))
			abort();
	}
	if (rc == 0 && n > 0 &&
	    nvi_encode((const struct yl_node *const *)trees, n, "", 0, &again, &alen) == 0) {
		struct nvi w;

		if (nvi_open(&w, again, alen, why, sizeof(why)) < 0)
			abort();
		for (size_t k = 0; k < n; k++) {
			struct yl_node *t;

			if (nvi_tree(&w, k, &t, why, sizeof(why)) < 0 || !same(t, trees[k], true))
				abort();
			yl_free(t);
		}
		nvi_close(&w);
		free(again);
	}
	for (size_t k = 0; k < n; k++)
		yl_free(trees[k]);
	nvi_close(&v);
	free(buf);
	return 0;
}
