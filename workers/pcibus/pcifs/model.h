/* mokka-pcifs's model of the PCI bus: which functions are present, which
 * driver each is bound to, driver_override, the drivers' dynamic ids,
 * IOMMU groups and SR-IOV virtual functions.  Every write the kernel
 * accepts on a sysfs PCI attribute is one operation here, applied at once
 * and answering the kernel's errno (drivers/base/bus.c, drivers/pci/
 * pci-driver.c, pci-sysfs.c, iov.c).  No FUSE, no files: the daemon
 * (pcifs.c) serves it, the fuzz target drives it directly. */
#ifndef MOKKA_WORKERS_PCIBUS_PCIFS_MODEL_H
#define MOKKA_WORKERS_PCIBUS_PCIFS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PCIFS_MAX_FNS 4096	/* 640 planned functions + 8 VF slots per HCA */
#define PCIFS_MAX_DRIVERS 16
#define PCIFS_MAX_IDS 32
#define PCIFS_OVERRIDE_MAX 4095		/* PAGE_SIZE - 1, driver_set_override() */
#define PCIFS_MLX5_TOTALVFS 8
#define PCIFS_GPU_MAX_VFS 256
#define PCIFS_ANY_ID 0xffffffffu

struct pcifs_id {
	uint32_t vendor, device, subvendor, subdevice, class_code, class_mask;
};

/* A PF's SR-IOV capability: TotalVFs, First VF Offset, VF Stride, VF
 * Device ID (0: the mlx5 PRM's VF id for a ConnectX, else the PF's). */
struct pcifs_sriov {
	int total_vfs, offset, stride;
	uint16_t vf_device;
};

struct pcifs_driver {
	char name[32];
	bool sriov;			/* has sriov_configure (sysfs sriov_numvfs) */
	int nids;
	struct pcifs_id ids[PCIFS_MAX_IDS];	/* new_id's dynamic ids */
};

struct pcifs_fn {
	char bdf[16];
	char devpath[256];		/* "devices/<root>/.../<bdf>", below sys */
	char backing[256];		/* devpath whose staged files back it (a VF: its PF's) */
	uint16_t vendor, device, subvendor, subdevice;
	uint32_t class_code;
	char home[32];			/* the driver whose static id table matches */
	bool bridge;
	bool present;			/* false after remove, or a VF not enabled */
	int driver;			/* index into drivers, -1 = none */
	char *override;			/* driver_override, NULL = "(null)" */
	int group;			/* IOMMU group */
	int pf;				/* a VF's PF (index), -1 */
	int totalvfs, numvfs, vf0;	/* a PF: its VFs are fns[vf0 .. vf0+totalvfs-1] */
	int vf_offset, vf_stride;	/* a PF: its SR-IOV capability's */
	unsigned resets;
};

struct pcifs_model {
	bool iommu;			/* the node has an IOMMU: vfio-pci binds */
	int nfns;
	struct pcifs_fn fns[PCIFS_MAX_FNS];
	int ndrv;
	struct pcifs_driver drv[PCIFS_MAX_DRIVERS];
	unsigned gen;			/* bumped by every change */
	/* A GPU nvidia cannot let go of (processes open): unbind and remove
	 * answer EBUSY.  NULL = never. */
	bool (*busy)(const struct pcifs_model *m, int fn);
};

/* Setup: a driver (found or added), a function (VF slots of a PF with
 * an SR-IOV capability are added by pcifs_model_add_vfs; a ConnectX's is
 * pcifs_mlx5_sriov: 8 VFs at offset 1, stride 1). */
int pcifs_driver_get(struct pcifs_model *m, const char *name);
int pcifs_model_add(struct pcifs_model *m, const struct pcifs_fn *f);
int pcifs_model_add_vfs(struct pcifs_model *m, int pf, const struct pcifs_sriov *cap);
extern const struct pcifs_sriov pcifs_mlx5_sriov;
/* Number the IOMMU groups (one per function) once every function is in. */
void pcifs_model_groups(struct pcifs_model *m);
void pcifs_model_free(struct pcifs_model *m);

int pcifs_find(const struct pcifs_model *m, const char *bdf);	/* present or not */
const char *pcifs_driver_name(const struct pcifs_model *m, const struct pcifs_fn *f);

/* The writes.  Each returns len (the write's count) or -errno. */
ssize_t pcifs_bind(struct pcifs_model *m, int drv, const char *buf, size_t len);
ssize_t pcifs_unbind(struct pcifs_model *m, int drv, const char *buf, size_t len);
ssize_t pcifs_new_id(struct pcifs_model *m, int drv, const char *buf, size_t len);
ssize_t pcifs_remove_id(struct pcifs_model *m, int drv, const char *buf, size_t len);
ssize_t pcifs_drivers_probe(struct pcifs_model *m, const char *buf, size_t len);
ssize_t pcifs_rescan(struct pcifs_model *m, const char *buf, size_t len);
ssize_t pcifs_set_override(struct pcifs_model *m, int fn, const char *buf, size_t len);
ssize_t pcifs_remove(struct pcifs_model *m, int fn, const char *buf, size_t len);
ssize_t pcifs_reset(struct pcifs_model *m, int fn, const char *buf, size_t len);
ssize_t pcifs_set_numvfs(struct pcifs_model *m, int fn, const char *buf, size_t len);

/* Invariants (the fuzz target's and the tests'): every bound function is
 * present, its driver exists; VFs are present only below an enabled PF.
 * 0 or -EUCLEAN with why. */
int pcifs_model_check(const struct pcifs_model *m, char *why, size_t len);

#endif
