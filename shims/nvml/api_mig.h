/* Shared by api_mig.c, api_mig_ci.c and api_modes_mig.c. */
#ifndef MOKKA_NVML_API_MIG_H
#define MOKKA_NVML_API_MIG_H

#include "devstate/devstate.h"
#include "shims/nvml/mig_profiles.h"
#include "shims/nvml/mig_types.h"

/* A full GPU's handle with its MIG board: NOT_SUPPORTED without MIG,
 * INVALID_ARGUMENT for a MIG device handle. */
nvmlReturn_t mig_parent(nvmlDevice_t device, struct mdev **d, const struct mig_board **b);
/* MIG mode in force for the document g (the profile's when g sets none);
 * call outside mdev_state_update (it reads the device's tree). */
bool mig_enabled(struct mdev *d, const struct ds_gpu *g);
nvmlReturn_t mig_gi_fit(const struct ds_gpu *g, const struct mig_gip *p, int want,
			unsigned *start);

#endif
