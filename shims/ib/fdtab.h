/* Which fds a shim emulates: fd -> refcounted session (dups share one, like
 * they share a kernel file description).  The lookup that every hooked
 * read/write/close/... does for foreign fds is one lock-free load; the
 * session itself is only touched under the table's mutex (fdtab_lock), so
 * a concurrent close never frees it under a reader.
 */
#ifndef MOKKA_SHIMS_IB_FDTAB_H
#define MOKKA_SHIMS_IB_FDTAB_H

#include <stdbool.h>
#include <stdint.h>

#define FDTAB_MAX_AGENTS 32	/* kernel IB_UMAD_MAX_AGENTS, per fd */

struct ibfd {
	int refs;		/* table slots pointing here */
	int kind;		/* enum mockib_kind */
	/* umad / issm */
	unsigned hdr_size;	/* 56 until ENABLE_PKEY, then 64 */
	bool used;		/* an agent was registered (ENABLE_PKEY too late) */
	uint32_t agents;	/* bit i = agent id i registered */
	/* netlink */
	int nl_type;		/* SOCK_RAW / SOCK_DGRAM as asked */
	uint32_t nl_pid;	/* bound port id, 0 = not yet bound */
	uint32_t nl_groups;
};

/* Is fd emulated?  Lock-free; confirm under fdtab_lock before use. */
bool fdtab_has(int fd);

void fdtab_lock(void);
void fdtab_unlock(void);

/* With the lock held: the session of fd, or NULL. */
struct ibfd *fdtab_get(int fd);

/* Registers fd with a new session of `kind`.  0 or -EMFILE/-ENOMEM. */
int fdtab_add(int fd, int kind);

/* newfd now shares oldfd's session (after a successful dup). */
void fdtab_dup(int oldfd, int newfd);

/* Forgets fd (before the real close). */
void fdtab_del(int fd);

/* With the lock held: visits every live session once per slot. */
void fdtab_each(void (*fn)(int fd, struct ibfd *s, void *arg), void *arg);

#endif
