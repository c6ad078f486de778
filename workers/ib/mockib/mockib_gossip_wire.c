/* The member-list frames of the relay (MEMBERS, DIGEST; see mockib_relay.h):
 * pure encode/decode of what another host sends. */
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "workers/ib/mockib/mockib_relay.h"
#include "workers/ib/mockib/mockib_umad.h"

void mib_members_head(uint8_t *buf, uint8_t flags, unsigned count)
{
	buf[0] = flags;
	buf[1] = (uint8_t)(count >> 8);
	buf[2] = (uint8_t)count;
}

int mib_members_put(uint8_t *buf, size_t cap, size_t *off, const struct mib_gossip_entry *e)
{
	size_t hl = strnlen(e->host, sizeof(e->host)), nl = strnlen(e->node, sizeof(e->node));
	uint8_t *p = buf + *off;

	if (hl >= sizeof(e->host) || !nl || nl >= sizeof(e->node) || e->port < 1 ||
	    e->port > 65535)
		return -EINVAL;
	if (*off > cap || cap - *off < 8 + 2 + 1 + hl + 1 + nl)
		return -ENOSPC;
	mib_put_be64(p, e->version);
	p[8] = (uint8_t)(e->port >> 8);
	p[9] = (uint8_t)e->port;
	p[10] = (uint8_t)hl;
	memcpy(p + 11, e->host, hl);
	p[11 + hl] = (uint8_t)nl;
	memcpy(p + 12 + hl, e->node, nl);
	*off += 12 + hl + nl;
	return 0;
}

/* Hosts are numeric addresses or DNS names: nothing else gets through. */
static bool host_ok(const uint8_t *h, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isalnum(h[i]) && (!h[i] || !strchr(".-:_%", h[i])))
			return false;
	return true;
}

static bool name_ok(const uint8_t *h, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (h[i] < 0x20 || h[i] == 0x7f)
			return false;
	return n > 0;
}

int mib_members_parse(const uint8_t *p, size_t len, uint8_t *flags,
		      int (*fn)(void *arg, const struct mib_gossip_entry *e), void *arg)
{
	unsigned count;
	size_t off = 3;

	if (len < 3)
		return -EINVAL;
	*flags = p[0];
	count = (unsigned)p[1] << 8 | p[2];
	if (count > MIB_GOSSIP_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < count; i++) {
		struct mib_gossip_entry e;
		size_t hl, nl;
		int r;

		if (len - off < 11)
			return -EINVAL;
		memset(&e, 0, sizeof(e));
		e.version = mib_be64(p + off);
		e.port = p[off + 8] << 8 | p[off + 9];
		hl = p[off + 10];
		if (!e.port || hl >= sizeof(e.host) || len - off - 11 < hl + 1 ||
		    !host_ok(p + off + 11, hl))
			return -EINVAL;
		memcpy(e.host, p + off + 11, hl);
		nl = p[off + 11 + hl];
		off += 12 + hl;
		if (nl >= sizeof(e.node) || len - off < nl || !name_ok(p + off, nl))
			return -EINVAL;
		memcpy(e.node, p + off, nl);
		off += nl;
		if (fn && (r = fn(arg, &e)) < 0)
			return r;
	}
	return off == len ? (int)count : -EINVAL;
}

void mib_digest_put(uint8_t buf[MIB_DIGEST_LEN], uint32_t count, uint64_t hash)
{
	buf[0] = (uint8_t)(count >> 24);
	buf[1] = (uint8_t)(count >> 16);
	buf[2] = (uint8_t)(count >> 8);
	buf[3] = (uint8_t)count;
	mib_put_be64(buf + 4, hash);
}

int mib_digest_parse(const uint8_t *p, size_t len, uint32_t *count, uint64_t *hash)
{
	if (len != MIB_DIGEST_LEN)
		return -EINVAL;
	*count = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	*hash = mib_be64(p + 4);
	return 0;
}

uint64_t mib_digest_term(const char *node, uint64_t version)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a 64 */

	for (const char *c = node; *c; c++)
		h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
	for (int i = 0; i < 8; i++)
		h = (h ^ (uint8_t)(version >> (8 * i))) * 0x100000001b3ull;
	return h;
}
