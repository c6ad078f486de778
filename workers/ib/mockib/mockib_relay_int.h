/* The relay's insides, shared by its connection code (mockib_relay.c) and
 * its membership code (mockib_gossip.c). */
#ifndef MOKKA_WORKERS_IB_MOCKIB_RELAY_INT_H
#define MOKKA_WORKERS_IB_MOCKIB_RELAY_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "workers/ib/mockib/mockib.h"
#include "workers/ib/mockib/mockib_relay.h"

struct mib_conn {
	struct mib_watch w;
	struct mib_conn *next;
	bool dead, connecting, outgoing;
	int peer;			/* index into peers (outgoing), else -1 */
	char dial[STATE_NAME_MAX];	/* the member it dials (learned), or "" */
	char remote[STATE_NAME_MAX];	/* member name once it registered */
	char addr[128];			/* for logs */
	char ip[MIB_GOSSIP_HOST];	/* the other end's numeric address */
	int dialer_port;		/* the dialing end's port: both ends know it */
	uint64_t since;
	uint8_t *in;
	size_t in_len, in_cap;
	uint8_t *out;
	size_t out_off, out_len, out_cap;
	uint64_t dropped;
};

struct mib_peer {
	char host[256];
	int port;			/* 0: a network, accepted but never dialed */
	char remote[STATE_NAME_MAX];	/* who answered there last */
	struct mib_conn *conn;
	uint64_t next_try;
	int fails;
	bool self;			/* it turned out to be this instance */
	bool warned;
};

/* A member heard of in a list but not (yet) connected to. */
struct mib_known {
	struct mib_known *next;
	struct mib_gossip_entry e;
	uint64_t next_try;
	int fails;
};

struct mib_relay {
	struct mib_watch lw;
	struct mib_peer *peers;
	int npeers;
	struct mib_conn *conns;
	struct mib_conn *graveyard;	/* closed, freed by mib_relay_reap */
	struct mib_known *known;
	uint64_t self_version;		/* incarnation (start time) + reloads */
	bool have_list;			/* a whole list came from a member */
	uint64_t digest_due, digest_period;
	/* Traffic, for logs and the benchmark: control = REGISTER, MEMBERS,
	 * DIGEST; all = every frame. */
	uint64_t ctl_out, ctl_out_bytes, ctl_in, ctl_in_bytes;
	uint64_t all_out, all_out_bytes, all_in, all_in_bytes;
	uint64_t started;
};

/* mockib_relay.c */
int mib_conn_send(struct mockib *d, struct mib_conn *c, uint8_t type, const void *a, size_t alen,
		  const void *b, size_t blen);
void mib_conn_close(struct mockib *d, struct mib_conn *c, const char *why, bool leave);
struct mib_conn *mib_conn_new(struct mockib *d, int fd, const char *addr, const char *ip);
void mib_conn_register(struct mockib *d, struct mib_conn *c);	/* queue our REGISTER */
/* A nonblocking connect to host:port (REGISTER goes out once connected). */
struct mib_conn *mib_conn_dial(struct mockib *d, const char *host, int port, bool quiet);
/* The port of a socket's own (getsockname) or other (getpeername) end. */
int mib_sock_port(int fd, int (*get)(int, struct sockaddr *, socklen_t *));
/* A delay of ms scaled by a random factor in [0.5, 1.5). */
uint64_t mib_jitter(uint64_t ms);
/* 1 s doubling per failure up to 30 s, with jitter. */
uint64_t mib_backoff(int fails);

/* mockib_gossip.c */
void mib_gossip_registered(struct mockib *d, struct mib_conn *c);
void mib_gossip_frame(struct mockib *d, struct mib_conn *c, uint8_t type, const uint8_t *p,
		      size_t len);
void mib_gossip_dial_failed(struct mockib *d, struct mib_conn *c);
void mib_gossip_tick(struct mockib *d, uint64_t now);
void mib_gossip_announce_self(struct mockib *d);
void mib_gossip_lost(struct mockib *d, const char *node);	/* before it leaves */
void mib_gossip_free(struct mockib *d);

#endif
