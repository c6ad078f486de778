/* InfiniBand devices in mokka-pcifs's view (view_ib.c). */
#ifndef MOKKA_WORKERS_PCIBUS_PCIFS_VIEW_IB_H
#define MOKKA_WORKERS_PCIBUS_PCIFS_VIEW_IB_H

#include "workers/pcibus/pcifs/view.h"

bool view_ib_class(const char *name);	/* infiniband, infiniband_verbs, infiniband_mad */
bool view_ib_held(const struct pcifs_model *m, const struct pcifs_fn *f);	/* by mlx5_core */
/* A VF's "<class>/<its name>[/...]" as its PF's file in ib's tree; the
 * device link is the caller's (it names the VF). */
int view_ib_vf_path(const struct view *v, int fn, const char *rest, char *path, size_t len,
		    bool *is_device_link);
int view_ib_list_vf_class(const struct view *v, int fn, const char *cls, view_fill fill,
			  void *ctx);
/* sys/class/<infiniband*>: p is below sys/class ("" = it). */
int view_ib_resolve_class(const struct view *v, const char *p, struct view_node *n);
int view_ib_list_class(const struct view *v, const char *p, view_fill fill, void *ctx);
/* A VF's node_guid or ports/<p>/gids/<i> (rest below its directory):
 * true when its PF's file must be rewritten with the VF's GUID. */
bool view_ib_vf_guid_file(const char *rest);
/* n->path (the PF's file) with the VF's GUID in place of the PF's. */
ssize_t view_ib_vf_guid(const struct view *v, const struct view_node *n, char *buf, size_t len);
uint64_t view_ib_vf_guid_of(uint64_t pf_guid, int vf);
/* A VF's infiniband_verbs/<uverbsN>/ibdev: its own IB device's name. */
int view_ib_vf_ibdev(const struct view *v, int fn, char *out, size_t len);
/* dev/infiniband: p is below it ("" = it). */
int view_ib_resolve_dev(const struct view *v, const char *p, struct view_node *n);
int view_ib_list_dev(const struct view *v, view_fill fill, void *ctx);

#endif
