/* gpudriver's MIG surfaces (mig.c, mig_watch.c, mig_layout.c). */
#ifndef MOKKA_WORKERS_GPUDRIVER_MIG_H
#define MOKKA_WORKERS_GPUDRIVER_MIG_H

#include <stddef.h>

#include "devstate/devstate.h"
#include "workers/gpudriver/gpudriver.h"

#define GD_MIG_CDI_SPEC "/var/run/cdi/mokka-mig.yaml"

/* The store's directory as this process reaches it (host root joined). */
int gd_mig_store_dir(const struct host *h, const char *mock_root, char *out, size_t len);
/* ds_open of the store resolved beneath rootfd (root: its path, for the
 * log), never through a link; made first when create. */
int gd_mig_store_open(int rootfd, const char *root, const char *mock_root, bool create,
		      struct ds_store *st);

/* Start (once per process) or re-point the thread that keeps the live MIG
 * surfaces and the MIG CDI spec equal to the store. */
void gd_mig_watch(struct sim_ctx *ctx, const struct state *s, const struct gd_conf *c);
/* One synchronous pass of what the thread does (tests, Apply). */
int gd_mig_sync_now(void);
/* Revoke: the MIG CDI spec goes (the nodes go with their generations). */
int gd_mig_revoke(struct sim_ctx *ctx);

/* Declared layouts (profile mig-enabled / mig-devices per GPU): applied
 * to a GPU whose store document does not exist yet. */
int gd_mig_apply_layouts(const struct state *s, struct ds_store *st, struct sim_errors *errs);

#endif
