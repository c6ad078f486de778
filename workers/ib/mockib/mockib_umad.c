/* struct ib_user_mad <-> bytes (see mockib_umad.h for the layout). */
#include <errno.h>
#include <string.h>

#include "workers/ib/mockib/mockib_umad.h"

static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

uint64_t mib_be64(const uint8_t *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

void mib_put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

int mib_uhdr_parse(const uint8_t *buf, size_t len, size_t hdr_len, struct mib_uhdr *h)
{
	if ((hdr_len != 64 && hdr_len != 56) || len < hdr_len)
		return -EINVAL;
	memset(h, 0, sizeof(*h));
	h->agent_id = get32(buf);
	h->status = get32(buf + 4);
	h->timeout_ms = get32(buf + 8);
	h->retries = get32(buf + 12);
	h->length = get32(buf + 16);
	h->qpn = be32(buf + 20);
	h->qkey = be32(buf + 24);
	h->lid = (uint16_t)(buf[28] << 8 | buf[29]);
	h->sl = buf[30];
	h->path_bits = buf[31];
	h->grh_present = buf[32];
	h->gid_index = buf[33];
	h->hop_limit = buf[34];
	h->tclass = buf[35];
	memcpy(h->gid, buf + 36, 16);
	h->flow_label = be32(buf + 52);
	if (hdr_len == 64)
		memcpy(&h->pkey_index, buf + 56, 2);
	return 0;
}

void mib_uhdr_build(uint8_t *buf, size_t hdr_len, const struct mib_uhdr *h)
{
	memset(buf, 0, hdr_len);
	put32(buf, h->agent_id);
	put32(buf + 4, h->status);
	put32(buf + 8, h->timeout_ms);
	put32(buf + 12, h->retries);
	put32(buf + 16, h->length);
	put_be32(buf + 20, h->qpn);
	put_be32(buf + 24, h->qkey);
	buf[28] = (uint8_t)(h->lid >> 8);
	buf[29] = (uint8_t)h->lid;
	buf[30] = h->sl;
	buf[31] = h->path_bits;
	buf[32] = h->grh_present;
	buf[33] = h->gid_index;
	buf[34] = h->hop_limit;
	buf[35] = h->tclass;
	memcpy(buf + 36, h->gid, 16);
	put_be32(buf + 52, h->flow_label);
	if (hdr_len == 64)
		memcpy(buf + 56, &h->pkey_index, 2);
}
