/* The TCP relay's wire between mock-ib instances (pure encode/decode).
 *
 * Frame: 4-byte big-endian length L, then L bytes: a 1-byte type and the
 * payload (so L >= 1; L > MIB_RELAY_MAX closes the connection).
 *   REGISTER  payload = the sender's config JSON (state_ib_encode), sent on
 *             connect and again only when it changes (a reload); it names
 *             the sender and its HCAs.
 *   MEMBERS   the member list (mockib_gossip.c): u8 flags (bit 0: send me
 *             yours; bit 1: this is my whole list), u16 count, then per member u64 version, u16 relay
 *             port, u8 host length, host, u8 name length, name.  Sent
 *             after REGISTER with the sender alone (host "" = the address
 *             you see me at), whole to whoever asks.
 *   DIGEST    u32 member count, u64 hash of (name, version) of every member:
 *             a periodic check that two views agree (else MEMBERS).
 *   ANSWER    routing header + MAD: the owner of dst_guid answers it
 *             (mad_answer_local at ingress_port) and sends REPLY.
 *   DELIVER   routing header + MAD: give it to an agent on dst_guid (a
 *             server agent for a request, the requester for a response).
 *   REPLY     routing header + MAD: the answer to the origin's req_id.
 * Routing header (all big-endian): req_id u64, src_guid u64, dst_guid u64,
 * slid u32, src_qpn u32, ingress_port u8, 3 reserved bytes, origin node
 * name (128 bytes, NUL-padded); the MAD follows. */
#ifndef MOKKA_WORKERS_IB_MOCKIB_RELAY_H
#define MOKKA_WORKERS_IB_MOCKIB_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipc/state.h"

enum mib_relay_type {
	MIB_RELAY_REGISTER = 1,
	MIB_RELAY_ANSWER = 2,
	MIB_RELAY_DELIVER = 3,
	MIB_RELAY_REPLY = 4,
	MIB_RELAY_MEMBERS = 5,
	MIB_RELAY_DIGEST = 6,
};

#define MIB_RELAY_MAX (1u << 20)
#define MIB_RELAY_ORIGIN 128
#define MIB_RELAY_MADHDR (8 + 8 + 8 + 4 + 4 + 4 + MIB_RELAY_ORIGIN)

_Static_assert(STATE_NAME_MAX <= MIB_RELAY_ORIGIN, "node names fit the routing header");

struct mib_relay_mad {
	uint64_t req_id;
	uint64_t src_guid, dst_guid;
	uint32_t slid, src_qpn;
	uint8_t ingress_port;
	char origin[MIB_RELAY_ORIGIN];
	const uint8_t *mad;
	size_t len;
};

/* Writes the 5-byte frame head for a payload of plen bytes.  -EMSGSIZE
 * when the frame would exceed MIB_RELAY_MAX. */
int mib_relay_head(uint8_t head[5], uint8_t type, size_t plen);

/* Parses one frame at buf.  Returns the bytes it spans (> 0) and sets
 * type/payload/plen; 0 when more bytes are needed; -EPROTO for a zero or
 * oversize length (the connection must be closed). */
long mib_relay_parse(const uint8_t *buf, size_t len, uint8_t *type, const uint8_t **payload,
		     size_t *plen);

/* Routing header <-> bytes (MIB_RELAY_MADHDR bytes). */
void mib_relay_madhdr_put(uint8_t *buf, const struct mib_relay_mad *m);
/* m->mad/len point into p.  -EINVAL: short, no MAD, or a bad origin. */
int mib_relay_mad_parse(const uint8_t *p, size_t len, struct mib_relay_mad *m);

/* ---- member lists (MEMBERS, DIGEST) ---- */
#define MIB_GOSSIP_WANT_LIST 0x01	/* MEMBERS flag: answer with your list */
#define MIB_GOSSIP_WHOLE 0x02		/* MEMBERS flag: this is all I know */
#define MIB_GOSSIP_HOST 64		/* numeric v4/v6 or a DNS name */
#define MIB_GOSSIP_MAX 4096		/* members in one list */
#define MIB_DIGEST_LEN 12

struct mib_gossip_entry {
	uint64_t version;		/* the member's incarnation and reloads */
	int port;			/* its relay port */
	char host[MIB_GOSSIP_HOST];	/* "" = the address of the connection */
	char node[STATE_NAME_MAX];
};

/* Writes the MEMBERS head (flags, count) at buf (3 bytes). */
void mib_members_head(uint8_t *buf, uint8_t flags, unsigned count);
/* Appends one entry at buf + *off if it fits in cap: 0, or -ENOSPC (nothing
 * written) / -EINVAL (a name or host too long or empty name). */
int mib_members_put(uint8_t *buf, size_t cap, size_t *off, const struct mib_gossip_entry *e);
/* Parses a MEMBERS payload, calling fn per entry (a negative return stops
 * it and is returned).  Returns the entry count or -EINVAL (truncated,
 * trailing bytes, an empty or unterminated name, a host with a byte that
 * is no part of an address or DNS name, port 0). */
int mib_members_parse(const uint8_t *p, size_t len, uint8_t *flags,
		      int (*fn)(void *arg, const struct mib_gossip_entry *e), void *arg);
void mib_digest_put(uint8_t buf[MIB_DIGEST_LEN], uint32_t count, uint64_t hash);
int mib_digest_parse(const uint8_t *p, size_t len, uint32_t *count, uint64_t *hash);
/* One member's share of the digest hash (summed over members, so order
 * does not matter). */
uint64_t mib_digest_term(const char *node, uint64_t version);

/* Splits "host[:port],..." ("[v6]:port" too) into items.  Calls fn for
 * each with the host and port (default_port when absent).  An item
 * "addr/len" (a v4 or v6 network, no port) lets that network connect
 * without being dialed: fn gets it whole with port 0.  Returns the
 * number of items or -EINVAL for a malformed item (err says which). */
int mib_relay_peers_parse(const char *list, int default_port,
			  int (*fn)(void *arg, const char *host, int port), void *arg,
			  char *err, size_t errlen);

/* Whether a connection from sa comes from a host or network in the peers
 * list (any port: peers dial from ephemeral ones; IPv4 and IPv4-mapped
 * IPv6 alike).
 * Names are resolved on each call, so a peer whose address changed is
 * still let in (mockib_peer_addr.c). */
struct sockaddr;
bool mib_relay_addr_is_peer(const char *peers, const struct sockaddr *sa);

#endif
