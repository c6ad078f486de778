/* The TCP relay's wire between mock-ib instances (pure encode/decode).
 *
 * Frame: 4-byte big-endian length L, then L bytes: a 1-byte type and the
 * payload (so L >= 1; L > MIB_RELAY_MAX closes the connection).
 *   REGISTER  payload = the sender's config JSON (state_ib_encode), sent on
 *             connect and every second; it names the sender and its HCAs.
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

/* Splits "host[:port],..." ("[v6]:port" too) into items.  Calls fn for
 * each with the host and port (default_port when absent).  Returns the
 * number of items or -EINVAL for a malformed item (err says which). */
int mib_relay_peers_parse(const char *list, int default_port,
			  int (*fn)(void *arg, const char *host, int port), void *arg,
			  char *err, size_t errlen);

/* Whether a connection from sa comes from a host in the peers list (any
 * port: peers dial from ephemeral ones; IPv4 and IPv4-mapped IPv6 alike).
 * Names are resolved on each call, so a peer whose address changed is
 * still let in (mockib_peer_addr.c). */
struct sockaddr;
bool mib_relay_addr_is_peer(const char *peers, const struct sockaddr *sa);

#endif
