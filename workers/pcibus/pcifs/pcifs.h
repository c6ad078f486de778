/* mokka-pcifs: the PCI bus served over FUSE with the kernel's write
 * semantics (model.h, view.h).  The loader and the binding file. */
#ifndef MOKKA_WORKERS_PCIBUS_PCIFS_PCIFS_H
#define MOKKA_WORKERS_PCIBUS_PCIFS_PCIFS_H

#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "shims/nvml/pcibind.h"
#include "workers/pcibus/pcifs/model.h"
#include "workers/pcibus/pcifs/view.h"

/* Where things are, below the mock root R (host paths get the host root
 * in front). */
#define PCIFS_MOUNT "/run/pcifs"		/* the view's mount point */
#define PCIFS_CONF "/run/pcifs.conf"		/* IOMMU=on|off; re-read on SIGHUP */
#define PCIFS_STATE PCIBIND_FILE	/* beside the engine config */
#define PCIFS_ENGINE_CONFIG "/driver/config/config.yaml"
#define PCIFS_OVERRIDES "/driver/config/overrides.yaml"

/* What the profile says about the node's PCI bus: an IOMMU; the GPUs'
 * SR-IOV capability (total_vfs 0: none). */
struct pcifs_node {
	bool iommu;
	struct pcifs_sriov gpu;
};

/* sys: "<R>/sys" beneath rootfd (the host root), read as a chroot to it
 * would: no link leads out.  0, or the first -errno (what loaded stays). */
int pcifs_load(struct pcifs_model *m, int rootfd, const char *sys, const struct pcifs_node *node);
/* Bindings, overrides, removals, VFs and dynamic ids of from, onto a
 * freshly loaded to. */
void pcifs_carry(struct pcifs_model *to, const struct pcifs_model *from);
/* The binding file at rel beneath rootfd (load.c); -ELOOP: a link on the way. */
int pcifs_state_write(const struct pcifs_model *m, int rootfd, const char *rel);

/* From the engine config (the profile) and the overrides (profile.c). */
int pcifs_profile_iommu(const char *config);
/* pcie_topology.gpu_sriov (profile/compile_sriov.c checked it); none: total_vfs 0. */
void pcifs_profile_gpu_sriov(const char *config, struct pcifs_sriov *out);
bool pcifs_profile_busy(const char *config, const char *overrides, const char *bdf);
int pcifs_profile_held_gpus(const char *config, const struct pcifs_model *m);
/* The CDI spec and NFD features following a GPU's binding before the
 * write returns (sync.c): mark them before notifying the supervisor,
 * then wait (bounded) until both were replaced.  0 or -ETIMEDOUT. */
#define PCIFS_SYNC_SURFACES 2
#define PCIFS_SYNC_MS 10000
struct pcifs_sync {
	struct stat st[PCIFS_SYNC_SURFACES];
	bool had[PCIFS_SYNC_SURFACES];
	int gpus;		/* the GPU count NFD must show, -1: not checked */
};
void pcifs_sync_mark(const char *host, struct pcifs_sync *s);
int pcifs_sync_wait(const char *host, const struct pcifs_sync *s, int timeout_ms);

/* mountinfo's escapes (\\ooo) undone in place (stale.c). */
void pcifs_mountinfo_unescape(char *s);
/* Detach whatever is mounted at dir (a killed instance's mount). */
int pcifs_stale_unmount(const char *dir);

/* The mount by descriptor (mount.c): fuse_fd goes to libfuse as
 * "/dev/fd/N" (and is closed by it); root_fd is the mount's root; the
 * watcher detaches the mount when the daemon dies. */
struct pcifs_mount {
	int fuse_fd, root_fd, watch_fd;
	pid_t watcher;
};
/* Mounts a FUSE connection on the directory leaf in parent (an O_PATH
 * fd; leaf no link): 0, or -errno with why filled. */
int pcifs_mount_at(int parent, const char *leaf, struct pcifs_mount *m, char *why, size_t whylen);
/* Forks the watcher (before any thread starts): 0 or -errno. */
int pcifs_mount_watch(struct pcifs_mount *m);
/* Detaches the mount and ends the watcher: 0 or -errno of the detach. */
int pcifs_mount_release(struct pcifs_mount *m);

#endif
