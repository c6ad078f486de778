/* mock-ib: the daemon behind the IB shims.  One epoll loop, no threads:
 *   - a unix SOCK_SEQPACKET listener for the shims (mockib_proto.h; mode
 *     0660, root and --socket-group, like /dev/infiniband/umad*): UMAD
 *     sessions (agents, outstanding requests, kernel-style timeouts) and
 *     NETLINK_RDMA sessions (mockib_netlink.c);
 *   - the fabric (fabric.h) built from this node plus the members that
 *     registered over the TCP relay (mockib_relay.c; hosts in ib.peers
 *     only), answered through the pure MAD engine;
 *   - signalfd (SIGHUP reload, SIGTERM/SIGINT exit) and one timerfd. */
#ifndef MOKKA_WORKERS_IB_MOCKIB_H
#define MOKKA_WORKERS_IB_MOCKIB_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ipc/state.h"
#include "shims/ib/mockib_proto.h"
#include "workers/ib/mad/fabric.h"
#include "workers/ib/mockib/mockib_umad.h"

struct mockib;

/* Every fd in the epoll set carries one of these as its data.ptr. */
struct mib_watch {
	int fd;
	void (*cb)(struct mockib *d, struct mib_watch *w, uint32_t events);
};

/* Limits: what one client may cost the daemon. */
#define MIB_MAX_AGENTS 32		/* the kernel's IB_UMAD_MAX_AGENTS */
#define MIB_IN_MAX (64 * 1024)		/* largest frame a client may send */
#define MIB_SOCKET_MODE 0660		/* owner root, group sock_gid */
#define MIB_QUEUE_FRAMES 512		/* per session, then drop */
#define MIB_QUEUE_BYTES (16u << 20)
#define MIB_MAX_SESSIONS 4096
#define MIB_MAX_PENDING 65536		/* outstanding requests, all sessions */
#define MIB_PENDING_PER_SESSION 4096

struct mib_frame {
	struct mib_frame *next;
	size_t len;
	uint8_t data[];
};

struct mib_agent {
	bool used;
	struct mockib_ctl reg;		/* as registered (mgmt_class 0 = send-only) */
};

struct mib_session {
	struct mib_watch w;		/* first: the epoll cookie */
	struct mib_session *next;
	struct mockib *d;
	uint64_t id;			/* for logs */
	bool hello;			/* hello received */
	bool dead;			/* closed; freed after the event batch */
	uint32_t kind, index, pid;
	int ca;				/* fabric index of its CA, cached for */
	uint64_t ca_gen;		/* this fabric generation (0 = none) */
	size_t hdr_len;			/* 56 until ENABLE_PKEY, then 64 */
	int npending;
	struct mib_agent agents[MIB_MAX_AGENTS];
	struct mib_frame *qhead, *qtail;	/* frames waiting for EPOLLOUT */
	int qframes;
	size_t qbytes;
	uint64_t dropped;		/* frames dropped on a full queue */
};

/* A request sent with timeout_ms > 0 that waits for its response: delivered
 * on a match (TID, or the relay's request id), else returned with status
 * ETIMEDOUT at the deadline, as the kernel does. */
struct mib_pending {
	struct mib_pending *next;	/* sorted by deadline */
	struct mib_session *s;
	uint32_t agent_id;
	uint64_t ca_guid;		/* sender CA's port GUID */
	uint64_t tid;
	uint8_t mgmt_class;
	uint64_t req_id;		/* relay request id, 0 = none */
	uint64_t deadline;		/* monotonic ms */
	size_t len;			/* the original frame (header + MAD) */
	uint8_t frame[];
};

/* A fabric member heard over the relay. */
struct mib_member {
	struct mib_member *next;
	char node[STATE_NAME_MAX];
	struct state_ib *ib;
	char *json;			/* its last REGISTER payload */
	size_t json_len;
	char host[64];			/* where its relay listens (MIB_GOSSIP_HOST) */
	int port;
	uint64_t version;		/* from its member list (0 = not yet) */
};

struct mib_relay;

struct mockib {
	char conf_path[PATH_MAX];
	char host_root[PATH_MAX];	/* "" = / */
	char node[STATE_NAME_MAX];
	struct state_ib *ib;		/* this node (heap) */
	char *reg_json;			/* our REGISTER payload = the config JSON */
	size_t reg_len;

	int epfd;
	struct mib_watch sig_w, timer_w, listen_w;
	bool listen_paused;		/* out of fds: accept again later */
	char sock_path[PATH_MAX * 2];	/* host_root + ib->socket */
	gid_t sock_gid;			/* its group (mode 0660, owner root) */
	struct mib_session *sessions;
	int nsessions;
	uint64_t next_session_id;

	struct mib_pending *pending;
	int npending;
	uint64_t next_req_id;		/* relay request ids (ANSWER/REPLY) */

	/* The fabric and the member array it was built from. */
	struct ib_fabric fab;
	bool fab_ok;
	bool fab_dirty;			/* members changed: rebuild after the batch */
	uint64_t fab_built;		/* monotonic ms of the last rebuild */
	uint64_t fab_gen;
	struct ib_member *fab_members;
	int fab_nmembers;
	struct mib_member *members;	/* remote members */
	struct mib_member *retired;	/* freed after the next rebuild */

	struct mib_relay *relay;
	uint64_t next_tick;		/* 1 s housekeeping */
	uint64_t armed;			/* timerfd deadline, 0 = disarmed */
	bool stop;

	/* Counters for logs and tests. */
	uint64_t mads_in, mads_out, timeouts, drops;
};

/* mockib_loop.c */
uint64_t mib_now_ms(void);
int mib_watch_add(struct mockib *d, struct mib_watch *w, uint32_t events);
int mib_watch_mod(struct mockib *d, struct mib_watch *w, uint32_t events);
void mib_watch_del(struct mockib *d, struct mib_watch *w);
void mib_timer_update(struct mockib *d);	/* re-arm for the earliest deadline */
int mib_run(struct mockib *d);			/* until SIGTERM/SIGINT; exit status */

/* mockib_config.c */
int mib_config_load(const char *host_root, const char *path, char *node, struct state_ib *ib,
		    char **json, size_t *json_len, char *err, size_t errlen);
int mib_reload(struct mockib *d);		/* SIGHUP */
int mib_fabric_rebuild(struct mockib *d);	/* after any member/config change */
/* Members changed: one rebuild for a burst of joins (the loop calls
 * mib_fabric_flush after each event batch, at most every 100 ms). */
void mib_fabric_changed(struct mockib *d);
int mib_fabric_flush(struct mockib *d);		/* rebuild now if changed */
const char *mib_ca_owner(const struct mockib *d, int ca);	/* node name */

/* mockib_session.c */
int mib_listen_open(struct mockib *d);
void mib_drop_chown(void);	/* after the socket's chgrp: never needed again */
void mib_listen_close(struct mockib *d);
void mib_listen_resume(struct mockib *d);	/* after EMFILE, once fds are free */
void mib_session_send(struct mib_session *s, const void *buf, size_t len);
void mib_session_close(struct mib_session *s, const char *why);
void mib_sessions_reap(struct mockib *d);
void mib_sessions_close_all(struct mockib *d);
int mib_session_ca(struct mib_session *s);	/* fabric index of its CA, -1 */
/* One frame a client sent (the hello, a control frame, a MAD or netlink). */
void mib_session_input(struct mib_session *s, const uint8_t *buf, size_t len);

/* mockib_mad.c: MAD dispatch, agents, pending requests */
void mib_mad_from_session(struct mib_session *s, const uint8_t *buf, size_t len);
/* A MAD that reached its target CA (local or relayed): a request for a
 * server agent or a response for a pending request. */
void mib_mad_deliver(struct mockib *d, int ca, const uint8_t *mad, size_t len, uint32_t slid,
		     uint32_t src_qpn, uint64_t src_guid);
/* A relayed answer to one of our forwarded requests. */
void mib_mad_relay_reply(struct mockib *d, uint64_t req_id, const uint8_t *mad, size_t len,
			 uint32_t slid, uint32_t qpn);
/* A forwarded request to answer for a local CA (from the relay). */
void mib_mad_answer_remote(struct mockib *d, const char *origin, uint64_t req_id, int ca,
			   int ingress_port, const uint8_t *mad, size_t len, uint32_t slid,
			   uint32_t src_qpn, uint64_t src_guid);
void mib_pending_expire(struct mockib *d, uint64_t now);
void mib_pending_drop_session(struct mockib *d, struct mib_session *s);
uint64_t mib_pending_next(const struct mockib *d);	/* earliest deadline, 0 = none */

/* mockib_member.c: remote members (REGISTER bookkeeping) */
struct mib_member *mib_member_find(struct mockib *d, const char *node);
/* An unchanged REGISTER from a known member: true.  false = decode it and
 * call mib_member_update. */
bool mib_member_refresh(struct mockib *d, const char *node, const uint8_t *json, size_t len);
/* Join or change (takes ib; the fabric is rebuilt after the batch).  0 or
 * -errno. */
int mib_member_update(struct mockib *d, const char *node, struct state_ib *ib,
		      const uint8_t *json, size_t len, const char *via);
void mib_member_leave(struct mockib *d, const char *node, const char *why);
void mib_members_drop_all(struct mockib *d);	/* the caller rebuilds */

/* mockib_relay.c */
int mib_relay_start(struct mockib *d);
void mib_relay_stop(struct mockib *d);
void mib_relay_tick(struct mockib *d, uint64_t now);
void mib_relay_config_changed(struct mockib *d);	/* after a reload */
void mib_relay_announce(struct mockib *d);	/* our config changed: REGISTER */
void mib_relay_members_changed(struct mockib *d);	/* a join or leave */
void mib_relay_counters(struct mockib *d);	/* log the traffic (SIGUSR1) */
void mib_relay_reap(struct mockib *d);		/* free connections closed in a batch */
void mib_relay_free(struct mockib *d);
/* Forward a MAD to the owner of a remote CA.  0 or -errno (no route). */
int mib_relay_send_mad(struct mockib *d, const char *to, int kind, uint64_t req_id,
		       uint64_t src_guid, uint32_t slid, uint32_t src_qpn, uint64_t dst_guid,
		       int ingress_port, const uint8_t *mad, size_t len);

#endif
