/* Identities derived from the inventory UID and a coordinate only, so a
 * retry, a restart or a leader change renders the same GPU UUIDs, serials,
 * fabric UUIDs and rack names for an unchanged coordinate.  128 bits of two
 * independently seeded hashes, formatted as an RFC 9562 version 8 UUID. */
#include <stdio.h>
#include <string.h>

#include "planner/planner.h"

/* FNV-1a over the coordinate's fields, each ended by a separator byte so
 * ("ab","c") and ("a","bc") differ; finished like pl_hash. */
static uint64_t mix_str(uint64_t h, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return (h ^ 0xff) * 0x100000001b3ull;
}

static uint64_t mix_int(uint64_t h, int v)
{
	uint32_t u = (uint32_t)v;

	for (int i = 0; i < 4; i++, u >>= 8)
		h = (h ^ (u & 0xff)) * 0x100000001b3ull;
	return h;
}

static uint64_t finish(uint64_t h)
{
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

static uint64_t coord_one(const char *salt, const char *inv_uid, const char *kind,
			  const char *group, int rack, int node, int gpu)
{
	uint64_t h = 0xcbf29ce484222325ull;

	h = mix_str(mix_str(mix_str(mix_str(h, salt), inv_uid), kind), group);
	return finish(mix_int(mix_int(mix_int(h, rack), node), gpu));
}

static void coord_hash(uint64_t out[2], const char *inv_uid, const char *kind,
		       const char *group, int rack, int node, int gpu)
{
	out[0] = coord_one("mokka-hi", inv_uid, kind, group, rack, node, gpu);
	out[1] = coord_one("mokka-lo", inv_uid, kind, group, rack, node, gpu);
}

void pl_uuid(char out[37], const char *inv_uid, const char *kind,
	     const char *group, int rack, int node, int gpu)
{
	uint64_t h[2];

	coord_hash(h, inv_uid, kind, group, rack, node, gpu);
	h[0] = (h[0] & ~0xf000ull) | 0x8000ull;			/* version 8 */
	h[1] = (h[1] & ~(3ull << 62)) | (2ull << 62);		/* RFC variant */
	snprintf(out, 37, "%08x-%04x-%04x-%04x-%012llx",
		 (unsigned)(h[0] >> 32), (unsigned)(h[0] >> 16) & 0xffff,
		 (unsigned)h[0] & 0xffff, (unsigned)(h[1] >> 48),
		 (unsigned long long)(h[1] & 0xffffffffffffull));
}

void pl_gpu_uuid(char out[41], const char *inv_uid, const char *group,
		 int rack, int node, int gpu)
{
	memcpy(out, "GPU-", 4);
	pl_uuid(out + 4, inv_uid, "gpu", group, rack, node, gpu);
}

/* 13 decimal digits, like a board serial; the leading 1 keeps the width. */
void pl_gpu_serial(char out[14], const char *inv_uid, const char *group,
		   int rack, int node, int gpu)
{
	uint64_t h[2];

	coord_hash(h, inv_uid, "serial", group, rack, node, gpu);
	snprintf(out, 14, "1%012llu", (unsigned long long)(h[0] % 1000000000000ull));
}

void pl_fabric_uuid(char out[37], const char *inv_uid, const char *group, int rack)
{
	pl_uuid(out, inv_uid, "fabric", group, rack, -1, -1);
}

/* GFD renders the clique as <cluster UUID>.<clique ID>; one NVLink domain
 * per rack, so the ID only has to be stable: 1..32767. */
int pl_clique_id(const char *inv_uid, const char *group, int rack)
{
	uint64_t h[2];

	coord_hash(h, inv_uid, "clique", group, rack, -1, -1);
	return (int)(h[0] % 32767) + 1;
}

char *pl_rack_name(struct pl_arena *a, const char *inv, const char *group, int rack)
{
	return pl_printf(a, "%s-%s-%d", inv, group, rack);
}
