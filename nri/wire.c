/* NRI's multiplexer frames and ttrpc messages (see nri.h).  Decoders of
 * bytes from the runtime: every length is checked against what is there
 * and the protocol's limit (tests/fuzz/fuzz_nri.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nri/nri.h"

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

ssize_t nri_mux_frame(const uint8_t *buf, size_t len, uint32_t *conn, const uint8_t **payload,
		      size_t *plen)
{
	uint32_t n;

	if (len < NRI_MUX_HDR)
		return 0;
	n = be32(buf + 4);
	if (n > NRI_TTRPC_HDR + NRI_TTRPC_MAX)
		return -EINVAL;
	if (len - NRI_MUX_HDR < n)
		return 0;
	*conn = be32(buf);
	*payload = buf + NRI_MUX_HDR;
	*plen = n;
	return (ssize_t)(NRI_MUX_HDR + n);
}

ssize_t nri_ttrpc_msg(const uint8_t *buf, size_t len, struct ttrpc_msg *m)
{
	uint32_t n;

	if (len < NRI_TTRPC_HDR)
		return 0;
	n = be32(buf);
	if (n > NRI_TTRPC_MAX)
		return -EINVAL;
	if (len - NRI_TTRPC_HDR < n)
		return 0;
	m->stream = be32(buf + 4);
	m->type = buf[8];
	m->flags = buf[9];
	m->data = buf + NRI_TTRPC_HDR;
	m->len = n;
	return (ssize_t)(NRI_TTRPC_HDR + n);
}

static int copy_str(const struct pb_field *f, char *dst, size_t size)
{
	if (f->type != PB_LEN || f->len >= size || memchr(f->data, '\0', f->len))
		return -EINVAL;
	memcpy(dst, f->data, f->len);
	dst[f->len] = '\0';
	return 0;
}

int nri_ttrpc_request(const uint8_t *buf, size_t len, struct ttrpc_request *r)
{
	struct pb_reader rd = { buf, buf + len };
	struct pb_field f;
	int k;

	memset(r, 0, sizeof(*r));
	while ((k = pb_next(&rd, &f)) > 0) {
		if (f.num == 1 && copy_str(&f, r->service, sizeof(r->service)) < 0)
			return -EINVAL;
		if (f.num == 2 && copy_str(&f, r->method, sizeof(r->method)) < 0)
			return -EINVAL;
		if (f.num == 3) {
			if (f.type != PB_LEN)
				return -EINVAL;
			r->payload = f.data;
			r->len = f.len;
		}
	}
	return k < 0 || !r->service[0] || !r->method[0] ? -EINVAL : 0;
}

int nri_ttrpc_response(const uint8_t *buf, size_t len, int *code, char *msg, size_t msglen,
		       const uint8_t **payload, size_t *plen)
{
	struct pb_reader rd = { buf, buf + len }, st;
	struct pb_field f, g;
	int k;

	*code = 0;
	*payload = NULL;
	*plen = 0;
	if (msglen)
		msg[0] = '\0';
	while ((k = pb_next(&rd, &f)) > 0) {
		if (f.num == 2 && f.type == PB_LEN) {
			*payload = f.data;
			*plen = f.len;
		}
		if (f.num != 1 || f.type != PB_LEN)
			continue;
		st = (struct pb_reader){ f.data, f.data + f.len };
		while ((k = pb_next(&st, &g)) > 0) {
			if (g.num == 1 && g.type == PB_VARINT)
				*code = (int)(int32_t)g.v;
			if (g.num == 2 && g.type == PB_LEN && msglen)
				snprintf(msg, msglen, "%.*s", (int)(g.len < 200 ? g.len : 200), g.data);
		}
		if (k < 0)
			return -EINVAL;
	}
	return k < 0 ? -EINVAL : 0;
}

int nri_frame(struct pb_buf *out, uint32_t conn, uint32_t stream, uint8_t type,
	      const struct pb_buf *msg)
{
	uint8_t h[NRI_MUX_HDR + NRI_TTRPC_HDR];
	size_t need = sizeof(h) + msg->n;

	if (msg->err || msg->n > NRI_TTRPC_MAX)
		return msg->err ? msg->err : -EFBIG;
	put_be32(h, conn);
	put_be32(h + 4, (uint32_t)(NRI_TTRPC_HDR + msg->n));
	put_be32(h + 8, (uint32_t)msg->n);
	put_be32(h + 12, stream);
	h[16] = type;
	h[17] = 0;
	if (out->cap < need) {
		uint8_t *nb = realloc(out->b, need);
		if (!nb)
			return -ENOMEM;
		out->b = nb;
		out->cap = need;
	}
	memcpy(out->b, h, sizeof(h));
	if (msg->n)
		memcpy(out->b + sizeof(h), msg->b, msg->n);
	out->n = need;
	out->err = 0;
	return 0;
}
