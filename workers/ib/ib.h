/* ib simulator: what an InfiniBand HCA driver (mlx5_core + ib_core,
 * ib_umad, ib_uverbs, rdma_ucm) leaves on a node, rendered under R/ib
 * (IB.md §2.1, §3.1), plus the mock-ib daemon it describes:
 *
 *   sysfs_tree.c   sys/devices/<pci chain>/<hca bdf>/ (the PCI function, as
 *                  pcibus renders it) with infiniband/mlx5_N,
 *                  infiniband_mad/{umadN,issmN}, infiniband_verbs/uverbsN;
 *                  sys/class/infiniband* (relative links + abi_version),
 *                  sys/bus/pci/{devices,drivers/mlx5_core}
 *   sysfs_port.c   infiniband/mlx5_N/ports/1: state, rate, lid, gids, pkeys,
 *                  gid_attrs, counters, hw_counters
 *   devnodes.c     dev/infiniband/{umadN,issmN,uverbsN,rdma_cm}
 *   shims.c        lib/libibmock{sys,umad,verbs}.so (the LD_PRELOAD shims)
 *   simulator.c    Stage as a table of surfaces, mock-ib.json, the daemon
 *                  spec, readiness
 *
 * The PCI parent chain comes from the state's PCI plan (and the function
 * directory from libmokka-pcifn), so the HCA sits at the same path in R/sys
 * (pcibus) and R/ib/sys (here).  Everything is recorded
 * in the manifest: a shrinking HCA count or ib disabled converges.
 *
 * Standalone (tests): with R = /var/lib/nvml-mock,
 *   mokka-worker-ib --host-root DIR [--config PROFILE] [--node-name N] stage
 *   mock-ib --config /var/lib/nvml-mock/ib/mock-ib.json --host-root DIR
 * (the config path is a host path, joined to DIR by mock-ib), then e.g.
 *   MOCK_IB=full MOCK_IB_ROOT=DIR/var/lib/nvml-mock/ib \
 *   MOCK_IB_SOCKET=DIR/var/lib/nvml-mock/run/mock-ib.sock LD_PRELOAD=... ibstat
 * or overlay DIR/var/lib/nvml-mock/ib/{sys,dev} over /sys and /dev inside
 * `unshare -m --propagation private`.  `mokka-worker-ib ... discard` removes
 * exactly what stage made. */
#ifndef MOKKA_WORKERS_IB_IB_H
#define MOKKA_WORKERS_IB_IB_H

#include <stdbool.h>
#include <stddef.h>

#include "ipc/state.h"
#include "workers/pcibus/pci_fn.h"
#include "workers/simulator.h"

/* Host paths relative to R. */
#define IB_DIR "/ib"
#define IB_SYS IB_DIR "/sys"
#define IB_DEV IB_DIR "/dev/infiniband"
#define IB_LIB IB_DIR "/lib"
#define IB_CONFIG IB_DIR "/mock-ib.json"

#define IB_DAEMON "mock-ib"

/* Character devices (drivers/infiniband/core/user_mad.c, uverbs_main.c):
 * the first 64 umad/issm and 32 uverbs devices have fixed minors under
 * major 231; later ones live in a dynamically allocated region, whose
 * major a real kernel picks at load time (ours: below). */
#define IB_MAJOR 231
#define IB_UMAD_FIXED 64
#define IB_ISSM_MINOR_BASE 64
#define IB_UVERBS_FIXED 32
#define IB_UVERBS_MINOR_BASE 192
#define IB_DYN_MAD_MAJOR 507		/* infiniband_mad's dynamic region */
#define IB_DYN_VERBS_MAJOR 508		/* infiniband_verbs's dynamic region */
#define IB_DYN_MAD_MINORS (1024 - IB_UMAD_FIXED)	/* umad, then issm */
#define IB_MISC_MAJOR 10
#define IB_RDMA_CM_MINOR 58
#define IB_UMAD_MODE 0600		/* the kernel's default */
#define IB_UVERBS_MODE 0666		/* uverbs_devnode() */
#define IB_RDMA_CM_MODE 0666		/* ucma_misc.mode */

/* Table sizes per port (an mlx5 IB port has 8 GIDs; pkeys cut to 8). */
#define IB_NUM_GIDS 8
#define IB_NUM_PKEYS 8

/* Class ABI versions: libibumad wants >= 5, libibverbs exactly 6. */
#define IB_MAD_ABI "5"
#define IB_VERBS_ABI "6"
#define IB_MLX5_UVERBS_ABI "1"

struct ib_chrdev {
	unsigned major, minor;
};

/* The char devices of HCA index i (port 1). */
struct ib_chrdev ib_umad_dev(int i);
struct ib_chrdev ib_issm_dev(int i);
struct ib_chrdev ib_uverbs_dev(int i);

/* One Stage pass's output: collects the first error, every error in errs. */
struct ib_out {
	struct host *h;
	struct sim_errors *errs;
	int first;
};

/* Write / link / mknod with the failure recorded on surface "path". */
int ib_put(struct ib_out *o, const char *path, mode_t mode, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int ib_link(struct ib_out *o, const char *target, const char *path);
int ib_mkdir(struct ib_out *o, const char *path);
int ib_fail(struct ib_out *o, const char *surface, int r, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* "../" repeated n times (n <= 16). */
const char *ib_ups(int n);

/* The surfaces; each returns 0 or the first -errno, errors in errs. */
int ib_stage_sysfs(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs);
int ib_stage_devnodes(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs);
int ib_stage_shims(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs);
int ib_stage_config(struct sim_ctx *ctx, const struct state *s, struct sim_errors *errs);

/* ports/1 of one HCA under dir (the mlx5_N directory, a host path). */
int ib_render_port(struct ib_out *o, const struct state_ib *ib, const struct state_hca *h,
		   const char *dir);

/* Kernel text of a port's rate ("400 Gb/sec (4X NDR)"), state ("4: ACTIVE")
 * and physical state ("5: LinkUp"), without the newline. */
void ib_rate_text(int gbps, char *buf, size_t len);
void ib_state_text(int state, char *buf, size_t len);
void ib_phys_state_text(int phys, char *buf, size_t len);

/* The shim files staged into R/ib/lib, NULL-terminated. */
extern const char *const ib_shim_files[];

extern const struct simulator ib_simulator;

#endif
