/* NETLINK_RDMA (NLDEV) as the kernel answers it, for the shims' netlink
 * sessions: `rdma dev|link|system|res` (iproute2, libmnl) and libibverbs'
 * device discovery (libnl-3).  IB.md §4. */
#ifndef MOKKA_WORKERS_IB_MOCKIB_NETLINK_H
#define MOKKA_WORKERS_IB_MOCKIB_NETLINK_H

#include <stddef.h>
#include <stdint.h>

#include "ipc/state.h"

struct mib_session;

/* One datagram the kernel would queue on the socket. */
typedef void (*mib_nl_emit)(void *arg, const void *buf, size_t len);

/* Handles every netlink message in buf (one sendmsg), emitting the reply
 * datagrams in order: replies (nlmsg_pid = pid, seq echoed), dump parts
 * (NLM_F_MULTI) then NLMSG_DONE, NLMSG_ERROR for errors and for acks when
 * NLM_F_ACK is set (never after a dump, like the kernel).  Never fails:
 * garbage gets an error or is skipped. */
void mib_nl_handle(const struct state_ib *ib, uint32_t pid, const uint8_t *buf, size_t len,
		   mib_nl_emit emit, void *arg);

/* The session glue (mockib_session.c calls it for NETLINK sessions). */
void mib_netlink_request(struct mib_session *s, const uint8_t *buf, size_t len);

/* new_encode_dev(), what CHARDEV carries: minor low byte | major << 8 |
 * the rest of minor << 12. */
uint64_t mib_nl_huge_dev(unsigned major, unsigned minor);

#endif
