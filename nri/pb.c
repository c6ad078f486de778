/* Protobuf wire format (see nri.h): varints, length-delimited fields and
 * the fixed widths, read strictly (no field runs past its message). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nri/nri.h"

static int varint(struct pb_reader *r, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end)
			return -EINVAL;
		uint8_t c = *r->p++;
		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 0;
	}
	return -EINVAL;
}

int pb_next(struct pb_reader *r, struct pb_field *f)
{
	uint64_t key;

	if (r->p >= r->end)
		return 0;
	if (varint(r, &key) < 0 || (key >> 3) == 0 || (key >> 3) > 0x1fffffff)
		return -EINVAL;
	memset(f, 0, sizeof(*f));
	f->num = (uint32_t)(key >> 3);
	f->type = (int)(key & 7);
	switch (f->type) {
	case PB_VARINT:
		return varint(r, &f->v) < 0 ? -EINVAL : 1;
	case PB_I64:
	case PB_I32: {
		size_t w = f->type == PB_I64 ? 8 : 4;
		if ((size_t)(r->end - r->p) < w)
			return -EINVAL;
		for (size_t i = 0; i < w; i++)
			f->v |= (uint64_t)r->p[i] << (8 * i);
		r->p += w;
		return 1;
	}
	case PB_LEN:
		if (varint(r, &f->v) < 0 || f->v > (uint64_t)(r->end - r->p))
			return -EINVAL;
		f->data = r->p;
		f->len = (size_t)f->v;
		r->p += f->len;
		return 1;
	default:
		return -EINVAL;	/* groups (3, 4) are not in these protocols */
	}
}

void pb_raw(struct pb_buf *b, const void *data, size_t len)
{
	if (b->err)
		return;
	if (b->n + len > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		uint8_t *nb;

		while (cap < b->n + len)
			cap *= 2;
		if (!(nb = realloc(b->b, cap))) {
			b->err = -ENOMEM;
			return;
		}
		b->b = nb;
		b->cap = cap;
	}
	if (len)
		memcpy(b->b + b->n, data, len);
	b->n += len;
}

static void raw_varint(struct pb_buf *b, uint64_t v)
{
	uint8_t t[10];
	size_t n = 0;

	do {
		t[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	pb_raw(b, t, n);
}

void pb_varint(struct pb_buf *b, uint32_t num, uint64_t v)
{
	raw_varint(b, (uint64_t)num << 3 | PB_VARINT);
	raw_varint(b, v);
}

void pb_bytes(struct pb_buf *b, uint32_t num, const void *data, size_t len)
{
	raw_varint(b, (uint64_t)num << 3 | PB_LEN);
	raw_varint(b, len);
	pb_raw(b, data, len);
}

void pb_str(struct pb_buf *b, uint32_t num, const char *s)
{
	pb_bytes(b, num, s, strlen(s));
}

void pb_msg(struct pb_buf *b, uint32_t num, struct pb_buf *child)
{
	if (child->err)
		b->err = child->err;
	pb_bytes(b, num, child->b, child->n);
	pb_free(child);
}

void pb_free(struct pb_buf *b)
{
	free(b->b);
	memset(b, 0, sizeof(*b));
}
