/* One simulated PCI function as the renderers need it, expanded from the
 * state's PCI plan (state.pci, computed by profile/compile_pci.c): its
 * place in the tree, identity, BARs, link, CPU mask and config space; and
 * its sysfs directory.  pcibus renders every function (R/sys,
 * /proc/bus/pci); ib renders its HCAs' functions in R/ib/sys with the same
 * code, so both trees agree.  This library (libmokka-pcifn) holds no
 * simulator: ib links it, not pcibus. */
#ifndef MOKKA_WORKERS_PCIBUS_PCI_FN_H
#define MOKKA_WORKERS_PCIBUS_PCI_FN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipc/state.h"
#include "workers/host.h"
#include "workers/pcibus/config_space.h"
#include "workers/simulator.h"

#define PCIBUS_MAX_FNS STATE_PCI_MAX_FNS
#define PCIBUS_MAX_CPUS STATE_PCI_MAX_CPUS
#define PCIBUS_CPU_WORDS (PCIBUS_MAX_CPUS / 32)
#define PCIBUS_NUM_RESOURCES STATE_PCI_NUM_RESOURCES
#define PCIBUS_BRIDGE_RESOURCES 13	/* first bridge window slot */

/* Kernel struct resource flags, as sysfs "resource" prints them. */
#define PCIBUS_RES_MEM		0x00000200UL
#define PCIBUS_RES_PREFETCH	0x00002000UL
#define PCIBUS_RES_SIZEALIGN	0x00040000UL
#define PCIBUS_RES_MEM_64	0x00100000UL

struct pcibus_resource {
	uint64_t start, size;	/* size 0 = empty slot */
	unsigned long flags;	/* PCIBUS_RES_* | the BAR's low type bits */
};

struct pcibus_fn {
	char bdf[16];			/* dddd:bb:dd.f */
	char root_id[16];		/* pcidddd:bb */
	char parent_bdf[16];		/* root port above; "" = none */
	char devpath[256];		/* "devices/<root>[/<port>]/<bdf>", under R/sys */
	int depth;			/* components in devpath */
	bool bridge;
	bool hca;			/* an InfiniBand HCA (state.ib.hcas) */
	const char *driver;		/* "nvidia", "mlx5_core", "pcieport", or driver_name */
	char driver_name[32];		/* an accelerator's, from the profile */
	unsigned domain, bus, dev, fn;
	uint16_t vendor, device, subsys_vendor, subsys_device;
	uint32_t class_code;
	uint8_t revision;
	int irq;
	int numa_node;
	struct state_pcie_link link;	/* normalized: every field valid */
	uint8_t primary_bus, secondary_bus, subordinate_bus;	/* bridges */
	int nres;			/* lines in sysfs "resource" */
	struct pcibus_resource res[PCIBUS_NUM_RESOURCES];
	uint32_t cpus[PCIBUS_CPU_WORDS];	/* local_cpus bitmap */
	uint8_t config[CONFIG_SPACE_SIZE];
};

struct pcibus_plan {
	char mock_root[256];		/* R, a host path */
	int ncpus;			/* nr_cpu_ids: the width of cpu masks */
	int nroots;
	char roots[STATE_PCI_MAX_ROOTS][16];	/* host bridges */
	int nfns;
	struct pcibus_fn fns[PCIBUS_MAX_FNS];	/* sorted by domain, bus, devfn */
};

/* Expand s->pci into p (with s's mock root).  A function whose config
 * space cannot be encoded is reported in errs ("pcibus: <bdf>/config: ...")
 * and kept.  0 or the first -errno. */
int pcibus_plan_load(const struct state *s, struct pcibus_plan *p, struct sim_errors *errs);

/* The function at bdf, or NULL. */
const struct pcibus_fn *pcibus_plan_find(const struct pcibus_plan *p, const char *bdf);

/* One function's directory <sys>/<f->devpath> with its attributes, config,
 * and driver/subsystem links (relative, so they resolve in any copy of the
 * tree).  sys is a host path ("<R>/sys", or the ib simulator's "<R>/ib/sys").
 * 0 or the first -errno, errors in errs. */
int sysfs_render_function(struct host *h, const struct pcibus_plan *p,
			  const struct pcibus_fn *f, const char *sys, struct sim_errors *errs);

/* Rendering helpers sysfs_fn.c shares with pcibus's sysfs_tree.c. */
struct pcibus_render {
	struct host *h;
	const struct pcibus_plan *p;
	struct sim_errors *errs;
	int first;
};
/* r < 0: report "pcibus: <who>/<what>: <op>: why" on surface who/what. */
int pcibus_check(struct pcibus_render *rd, int r, const char *who, const char *what,
		 const char *op);
/* 0, or -ENAMETOOLONG when it does not fit. */
int pcibus_path(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void pcibus_link(struct pcibus_render *rd, const char *who, const char *what,
		 const char *target, const char *path);
/* Names that become path components are well formed. */
bool pcibus_valid_names(const struct pcibus_fn *f);

/* Remember the first failure while going on to collect the rest. */
static inline int pcibus_first_error(int *first, int r)
{
	if (r < 0 && *first == 0)
		*first = r;
	return r;
}

#endif
