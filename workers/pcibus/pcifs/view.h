/* mokka-pcifs's view: the paths it serves, below its mount point,
 *
 *   sys/bus/pci/{devices,drivers/<drv>/{bind,unbind,new_id,remove_id},
 *               drivers_probe,rescan}
 *   sys/devices/...          the staged tree, with each function's driver,
 *                            driver_override, remove, reset, iommu_group,
 *                            sriov_*, virtfnN/physfn; VFs; removed ones gone
 *   sys/kernel/iommu_groups/<n>/devices/<bdf>
 *   sys/module/<drv>         for drivers the staged tree has no module of
 *   dev/vfio/{vfio,<group>}  char nodes (a group's once vfio-pci holds it)
 *   dev/infiniband/...       ib's nodes and the VFs' (view_ib.c)
 *   sys/class/infiniband*    ib's devices and the VFs' (view_ib.c)
 *   proc/cmdline             the host's, plus the IOMMU parameters
 *   proc/bus/pci/...         pcibus's, without removed functions, with
 *                            the drivers of now and the VFs (view_proc.c)
 *
 * resolved against the model (model.h) and the staged files (R/sys). */
#ifndef MOKKA_WORKERS_PCIBUS_PCIFS_VIEW_H
#define MOKKA_WORKERS_PCIBUS_PCIFS_VIEW_H

#include <limits.h>
#include <sys/stat.h>

#include "workers/pcibus/pcifs/model.h"

enum view_kind { V_DIR, V_LINK, V_ATTR, V_PASS, V_CHR };

enum view_attr {
	A_NONE, A_BIND, A_UNBIND, A_NEW_ID, A_REMOVE_ID, A_UEVENT, A_DRIVERS_PROBE,
	A_AUTOPROBE, A_RESCAN, A_OVERRIDE, A_REMOVE, A_RESET, A_TOTALVFS, A_NUMVFS,
	A_CMDLINE, A_VF_DEVICE, A_VF_CONFIG, A_GROUP_TYPE, A_RESERVED, A_VF_IBDEV,
	A_PROC_DEVICES, A_SRIOV_OFFSET, A_SRIOV_STRIDE, A_SRIOV_VF_DEVICE, A_SRIOV_AUTOPROBE,
	A_VF_GUID, A_PF_CONFIG,
};

struct view {
	struct pcifs_model *m;
	char sys[PATH_MAX];		/* the staged tree: <host root><R>/sys */
	char ibsys[PATH_MAX];		/* ib's tree (<R>/ib/sys): HCAs' infiniband* dirs */
	char ibdev[PATH_MAX];		/* ib's device nodes (<R>/ib/dev/infiniband) */
	char cmdline[1024];		/* the host's /proc/cmdline, no newline */
	char procpci[PATH_MAX];		/* pcibus's <host root><R>/proc/bus/pci */
	/* Set by the daemon: the host root's fd and the length of its path
	 * (the prefix of every path above), so what the view reads and serves
	 * to every user comes from inside the root (view_open_file). */
	bool in_root;
	int rootfd;
	size_t rootlen;
};

struct view_node {
	enum view_kind kind;
	mode_t mode;			/* permission bits */
	int attr;			/* V_ATTR: enum view_attr */
	int fn, drv;			/* the function / driver it is about, or -1 */
	dev_t rdev;			/* V_CHR */
	char path[PATH_MAX];		/* V_PASS: the staged file; V_LINK: the target;
					 * A_VF_GUID: the PF's file it rewrites */
};

/* path is relative to the mount point, no leading '/' ("" = the root). */
int view_resolve(const struct view *v, const char *path, struct view_node *n);
/* A staged file (a path above) opened for reading, O_CLOEXEC added: with
 * in_root set, links on the way are resolved inside the host root, never
 * out of it (a link planted to /etc/shadow would otherwise be served to
 * every user).  fd or -errno. */
int view_open_file(const struct view *v, const char *path, int flags);

typedef int (*view_fill)(void *ctx, const char *name, const struct view_node *n);
/* The entries of directory path (resolved to dir); 0 or -errno. */
int view_list(const struct view *v, const char *path, const struct view_node *dir,
	      view_fill fill, void *ctx);

/* proc/bus/pci (view_proc.c): p relative to it; devices' content. */
int view_proc_resolve(const struct view *v, const char *p, struct view_node *n);
int view_proc_list(const struct view *v, const char *rel, view_fill fill, void *ctx);
ssize_t view_proc_devices(const struct view *v, char *buf, size_t len);

/* A PF's SR-IOV capability into its config space cs (sriov_cap.c). */
int pcifs_sriov_cap(uint8_t *cs, size_t len, const struct pcifs_model *m, const struct pcifs_fn *pf);

/* V_ATTR content into buf (at most len); its length or -errno. */
ssize_t view_read_attr(const struct view *v, const struct view_node *n, char *buf, size_t len);
/* A write to a V_ATTR: len or -errno (the model's). */
ssize_t view_write_attr(struct view *v, const struct view_node *n, const char *buf, size_t len);

#endif
