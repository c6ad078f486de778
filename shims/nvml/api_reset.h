/* Export-table slots behind nvidia-smi -r (api_reset.c).  Each takes the
 * table's four machine words. */
#ifndef MOKKA_NVML_API_RESET_H
#define MOKKA_NVML_API_RESET_H

#include <stdint.h>

#include "shims/nvml/nvml_types.h"

/* 13: (dev): reset one GPU. */
nvmlReturn_t nvml_slot_reset_one(uintptr_t dev, uintptr_t a1, uintptr_t a2, uintptr_t a3);
/* 20: (dev, unsigned *is_primary). */
nvmlReturn_t nvml_slot_reset_primary(uintptr_t dev, uintptr_t out, uintptr_t a2, uintptr_t a3);
/* 169: (unsigned *state): how nvidia-smi -r picks its reset path. */
nvmlReturn_t nvml_slot_reset_path(uintptr_t out, uintptr_t a1, uintptr_t a2, uintptr_t a3);
/* 182: (void **group, nvmlDevice_t *devs, unsigned n, unsigned flags). */
nvmlReturn_t nvml_slot_reset_group(uintptr_t out, uintptr_t devs, uintptr_t n, uintptr_t a3);
/* 183: (group, char *bus_ids[], unsigned *n): the members' PCI bus ids. */
nvmlReturn_t nvml_slot_reset_members(uintptr_t grp, uintptr_t bufs, uintptr_t count,
				     uintptr_t a3);
/* 184: (group): free it. */
nvmlReturn_t nvml_slot_reset_free(uintptr_t grp, uintptr_t a1, uintptr_t a2, uintptr_t a3);

#endif
