/* pcibus simulator: the GPUs and InfiniBand HCAs on a simulated PCI bus.
 *
 * Stage expands the state's PCI plan (pci_fn.h) and renders it as sysfs
 * (sysfs_tree.c) and /proc/bus/pci (procfs.c).  Apply writes the NFD
 * feature file (nfd.c). */
#ifndef MOKKA_WORKERS_PCIBUS_PCIBUS_H
#define MOKKA_WORKERS_PCIBUS_PCIBUS_H

#include "workers/pcibus/pci_fn.h"

/* The whole tree under R/sys: roots, functions, bus and driver links. */
int sysfs_tree_render(struct host *h, const struct pcibus_plan *p, struct sim_errors *errs);
int procfs_render(struct host *h, const struct pcibus_plan *p, struct sim_errors *errs);
int nfd_render(struct host *h, const struct state *s, struct sim_errors *errs);
/* Revoke: puts back a features file that was there before us (nfd.c). */
int nfd_revoke(struct sim_ctx *ctx, struct sim_errors *errs);

#define NFD_FEATURES_FILE "/etc/kubernetes/node-feature-discovery/features.d/nvml-mock.features"

extern const struct simulator pcibus_simulator;

#endif
