/* Shared by the three IB shims (each .so compiles its own copy of these
 * files, all hidden): the MOCK_IB selector, the tree root, the daemon
 * socket path and lazily resolved "next" symbols.
 *
 *   MOCK_IB       full | sysfs (case-insensitive); anything else = off,
 *                 every hook a pass-through.
 *   MOCK_IB_ROOT  the tree root (default /var/lib/nvml-mock/ib); "/" means
 *                 no path rewriting (overlay-mount mode).
 *   MOCK_IB_SOCKET the daemon socket (default MOCKIB_DEFAULT_SOCKET).
 *
 * All are read once, on first use.
 */
#ifndef MOKKA_SHIMS_IB_IBSHIM_H
#define MOKKA_SHIMS_IB_IBSHIM_H

#include <errno.h>
#include <stddef.h>

#include "shims/redirect/redirect.h"

#define IBSHIM_DEFAULT_ROOT "/var/lib/nvml-mock/ib"

enum ibshim_mode {
	IBSHIM_OFF = 0,
	IBSHIM_SYSFS = 1,
	IBSHIM_FULL = 2,
};

struct ibshim_cfg {
	enum ibshim_mode mode;
	struct redirect_root tree;	/* root NULL = no rewriting */
	const char *socket;	/* daemon socket path */
};

/* The configuration (never NULL); errno is preserved. */
const struct ibshim_cfg *ibshim_cfg(void);

/* The next definition of `name` after this object, cached in *slot. */
void *ibshim_next(void **slot, const char *name);

/* Declares `real` as the next `name`, or fails with ENOSYS. */
#define REAL(name, failret)						\
	static void *slot_##name;					\
	__typeof__(name) *real =					\
		(__typeof__(name) *)ibshim_next(&slot_##name, #name);	\
	if (!real) {							\
		errno = ENOSYS;						\
		return failret;						\
	}

#endif
