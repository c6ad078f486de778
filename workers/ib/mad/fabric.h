/* The InfiniBand fabric mock-ib answers for, and its MAD engine.
 *
 * Every mock-ib instance builds the same fabric from the same member set
 * (itself plus the peers that registered over TCP): the members' CAs plus
 * synthetic switches of a rail-optimised 2-level fat tree.  Switches belong
 * to nobody, so every instance answers for them; a CA is answered by the
 * instance that owns it (ca->local), others are forwarded to the owner.
 *
 * The engine is pure: no I/O, no clocks.  The daemon (mockib_*.c) does
 * sockets, agents, timeouts and the relay. */
#ifndef MOKKA_WORKERS_IB_FABRIC_H
#define MOKKA_WORKERS_IB_FABRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipc/state.h"

/* One member of the fabric: a node and its HCAs (one port each). */
struct ib_member {
	char node[STATE_NAME_MAX];
	const struct state_ib *ib;	/* not owned */
	bool local;			/* this instance owns these CAs */
};

#define IB_LINK_NONE 0
#define IB_LINK_CA 1
#define IB_LINK_SWITCH 2

struct ib_link {
	int kind;			/* IB_LINK_* */
	int idx;			/* index into cas[] or sws[] */
	int port;			/* the peer's port number */
};

struct ib_fab_ca {
	int member;			/* index into the member array given to build */
	const struct state_hca *hca;	/* identity, state, counters (not owned) */
	const struct state_ib *ib;	/* the member's global settings */
	bool local;
	struct ib_link up;		/* port 1's peer (a leaf), or none */
};

/* 254 = the most an IB switch can number (NumPorts is a byte, 255 is
 * reserved): a spine needs one port per leaf. */
#define IB_SWITCH_MAX_PORTS 254
struct ib_fab_switch {
	uint64_t guid;			/* node GUID = port GUID (port 0) */
	uint32_t lid;			/* port 0's LID; 1 = the SM's switch */
	char desc[64];			/* "MF0;leaf-r0-g0:MQM9700/U1" style */
	int nports;
	struct ib_link port[IB_SWITCH_MAX_PORTS + 1];	/* [1..nports] */
};

struct ib_fabric {
	struct ib_fab_ca *cas;
	int ncas;
	struct ib_fab_switch *sws;
	int nsws;
	uint32_t sm_lid;		/* 1 */
	int sm_switch;			/* index of the switch holding sm_lid, -1 */
	/* Shape (from the first member after sorting).  sws[0..nleaves-1]
	 * are leaves, the rest spines.  A leaf serves rails_per_leaf
	 * adjacent rails: 1, unless one leaf per rail would need spines
	 * wider than IB_SWITCH_MAX_PORTS (then the fewest that fit). */
	int leaf_ports;			/* CA-facing ports per leaf (1..128) */
	int spines;			/* 0 = leaves only, no interconnect */
	int nleaves;
	int rails_per_leaf;
	int rate_gbps;			/* switch-to-switch links */
	struct ib_fab_index *ix;	/* private: LID and GUID lookups */
};

/* Deterministic for a given member set (members are sorted by node name
 * inside; CAs keep member order then HCA index).  0 or -errno. */
int ib_fabric_build(struct ib_fabric *f, const struct ib_member *m, int n);
void ib_fabric_free(struct ib_fabric *f);

/* Lookups; -1 when absent. */
int ib_fabric_ca_by_lid(const struct ib_fabric *f, uint32_t lid);
int ib_fabric_ca_by_guid(const struct ib_fabric *f, uint64_t port_guid);
int ib_fabric_local_ca(const struct ib_fabric *f, const char *name);	/* "mlx5_0" */
int ib_fabric_switch_by_lid(const struct ib_fabric *f, uint32_t lid);
int ib_fabric_switch_by_guid(const struct ib_fabric *f, uint64_t guid);

/* ------------------------------------------------------------------ */
/* The MAD engine.                                                     */

enum mad_verdict {
	MAD_REPLY,	/* out->reply is the response for the sender */
	MAD_FORWARD,	/* target_ca is remote: its owner must answer
			 * (mad_answer_local there) and the reply comes back */
	MAD_DELIVER,	/* give the MAD to an agent on target_ca (a server
			 * agent for a request, the requester for a response);
			 * remote target_ca: relay it to the owner first */
	MAD_DROP,	/* nobody answers; the sender times out */
};

/* A MAD as sent through a umad port. */
struct mad_in {
	int ca;			/* sender's CA (fabric index, a local CA) */
	uint32_t dlid;		/* umad header lid (network order converted) */
	uint32_t qpn;		/* umad header qpn: 0 SMI, 1 GSI */
	const uint8_t *mad;
	size_t len;		/* >= 24; normally 256 */
};

struct mad_result {
	enum mad_verdict v;
	int target_ca;		/* FORWARD / DELIVER */
	int ingress_port;	/* FORWARD: port the SMP enters target_ca on (1) */
	uint8_t *reply;		/* REPLY: malloc'd response MAD, caller frees */
	size_t reply_len;	/* 256; for an SA GetTableResp (RMPP) exactly
				 * 56 + records x record size, as the kernel
				 * reassembles it: less than 256 for a short
				 * table (the buffer is still >= 256 bytes),
				 * more for a multi-segment one */
	uint32_t reply_slid;	/* REPLY: LID the response comes from */
	uint32_t reply_qpn;	/* REPLY: remote QP (0 SMI, 1 GSI) */
};

/* Decide what happens to a MAD a local agent sent.  0 (out->v says what
 * to do; out is always initialised, reply NULL unless MAD_REPLY), -EINVAL
 * for a malformed MAD (len < 24, base version != 1, DR hop count > 63, bad
 * ca; out->v = MAD_DROP), -ENOMEM.  A DR SMP ignores in->dlid (pure
 * directed route); a response (method bit 0x80) of a GSI class is
 * MAD_DELIVERed to the CA owning in->dlid.  The engine reads the members'
 * state_ib live: a Reload that edits port states or counters in place
 * needs no rebuild (wiring never depends on them). */
int mad_process(const struct ib_fabric *f, const struct mad_in *in, struct mad_result *out);

/* On the owner of ca: answer a MAD forwarded for it (SMP at ingress_port,
 * which must be 1; PMA), or MAD_DELIVER to ca for a vendor-class request
 * (a server agent) or a GSI response (the requester).  A DR reply made
 * here carries only its own hop of the ReturnPath (the requester's side
 * walked the rest); tools do not read it.  Same return codes. */
int mad_answer_local(const struct ib_fabric *f, int ca, int ingress_port,
		     const uint8_t *mad, size_t len, struct mad_result *out);

void mad_result_free(struct mad_result *r);

#endif
