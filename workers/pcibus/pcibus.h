/* pcibus simulator: the GPUs and InfiniBand HCAs on a simulated PCI bus.
 *
 * Stage turns the compiled state into a plan (every PCI function with its
 * place in the tree, identity, BARs, link and config space) and renders it
 * as sysfs (sysfs_tree.c) and /proc/bus/pci (procfs.c).  Apply writes the
 * NFD feature file (nfd.c). */
#ifndef MOKKA_WORKERS_PCIBUS_PCIBUS_H
#define MOKKA_WORKERS_PCIBUS_PCIBUS_H

#include <stdbool.h>
#include <stdint.h>

#include "ipc/state.h"
#include "workers/host.h"
#include "workers/pcibus/config_space.h"
#include "workers/simulator.h"

/* Each GPU and HCA, plus a root port each at most. */
#define PCIBUS_MAX_FNS (2 * (STATE_MAX_DEVICES + STATE_MAX_HCAS))
#define PCIBUS_MAX_CPUS 8192			/* the kernel's largest NR_CPUS */
#define PCIBUS_CPU_WORDS (PCIBUS_MAX_CPUS / 32)
#define PCIBUS_NUM_RESOURCES 17		/* kernel: 6 BARs, ROM, 6 IOV, 4 bridge */
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
	char parent_bdf[16];		/* root port above a GPU; "" = none */
	char devpath[256];		/* "devices/<root>[/<port>]/<bdf>", under R/sys */
	int depth;			/* components in devpath */
	bool bridge;
	bool hca;			/* an InfiniBand HCA (state.ib.hcas) */
	const char *driver;		/* "nvidia", "mlx5_core", "pcieport" */
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
	char roots[STATE_MAX_ROOTS + STATE_MAX_DEVICES + STATE_MAX_HCAS][16];	/* host bridges */
	int nfns;
	struct pcibus_fn fns[PCIBUS_MAX_FNS];	/* sorted by domain, bus, devfn */
};

/* Build the plan from state; a device that cannot be placed is reported in
 * errs and left out.  0 or the first -errno. */
int pcibus_plan_build(const struct state *s, struct pcibus_plan *p, struct sim_errors *errs);

/* Remember the first failure while going on to collect the rest. */
static inline int pcibus_first_error(int *first, int r)
{
	if (r < 0 && *first == 0)
		*first = r;
	return r;
}

/* The HCAs' PCI identity (ConnectX, mlx5_core). */
#define PCIBUS_MLX_VENDOR	0x15b3
#define PCIBUS_MLX_SUBSYS	0x0023
#define PCIBUS_HCA_CLASS	0x020700	/* network, InfiniBand controller */

/* The function at bdf, or NULL. */
const struct pcibus_fn *pcibus_plan_find(const struct pcibus_plan *p, const char *bdf);

int sysfs_tree_render(struct host *h, const struct pcibus_plan *p, struct sim_errors *errs);

/* One function's directory <sys>/<f->devpath> with its attributes, config,
 * and driver/subsystem links (relative, so they resolve in any copy of the
 * tree).  sys is a host path ("<R>/sys", or the ib simulator's "<R>/ib/sys").
 * 0 or the first -errno, errors in errs. */
int sysfs_render_function(struct host *h, const struct pcibus_plan *p,
			  const struct pcibus_fn *f, const char *sys, struct sim_errors *errs);
int procfs_render(struct host *h, const struct pcibus_plan *p, struct sim_errors *errs);
int nfd_render(struct host *h, const struct state *s, struct sim_errors *errs);

#define NFD_FEATURES_FILE "/etc/kubernetes/node-feature-discovery/features.d/nvml-mock.features"

extern const struct simulator pcibus_simulator;

#endif
