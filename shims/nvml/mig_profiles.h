/* MIG geometry per board (facts from NVIDIA's MIG user guide: profile
 * names, ids, slice counts, hardware units, instance counts, placements).
 * Used by the engine (instances, memory) and the MIG entry points. */
#ifndef MOKKA_NVML_MIG_PROFILES_H
#define MOKKA_NVML_MIG_PROFILES_H

#include <stdbool.h>
#include <stdint.h>

#define MIG_GI_PROFILE_COUNT 10	/* NVML_GPU_INSTANCE_PROFILE_COUNT (12.2 headers) */
#define MIG_CI_PROFILE_COUNT 8	/* NVML_COMPUTE_INSTANCE_PROFILE_COUNT */
#define MIG_MEM_SLICES 8
#define MIG_MAX_PLACEMENTS 8

/* One GPU-instance profile of a board. */
struct mig_gip {
	unsigned index;		/* NVML_GPU_INSTANCE_PROFILE_* */
	unsigned id;		/* what nvidia-smi shows and -cgi takes (19, 20, 15, ...) */
	const char *name;	/* "1g.5gb" */
	unsigned slices;	/* compute slices */
	unsigned mem_slices;	/* placement size, of 8 memory slices */
	unsigned count;		/* instances available */
	unsigned sm, ce, dec, enc, jpeg, ofa;
	uint64_t mem_mib;
};

struct mig_board {
	const char *name;	/* for messages */
	unsigned nprof;
	const struct mig_gip *prof;
	unsigned sm_per_slice;	/* a 1-slice compute instance's SMs */
};

/* The board a device is, from its PCI device id (upper 16 bits of
 * pci.device_id) and memory size; NULL: not MIG-capable. */
const struct mig_board *mig_board_for(uint32_t pci_device_id, uint64_t total_mib);
/* The same, else a board of that architecture ("ampere", "hopper",
 * "blackwell") and memory size: a custom profile with an unknown device id
 * but MIG instances on offer still gets a geometry. */
const struct mig_board *mig_board_guess(uint32_t pci_device_id, const char *arch,
					uint64_t total_mib);

const struct mig_gip *mig_gip_by_index(const struct mig_board *b, unsigned index);
const struct mig_gip *mig_gip_by_id(const struct mig_board *b, unsigned id);
const struct mig_gip *mig_gip_by_name(const struct mig_board *b, const char *name);

/* Placements of a GPU-instance profile: starts (memory slices); count. */
unsigned mig_gip_placements(const struct mig_gip *p, unsigned starts[MIG_MAX_PLACEMENTS]);
/* The GPU instance id a real driver gives a placement (its swizzle id):
 * 8 slices -> 0, 4 -> 1 + start/4, 2 -> 3 + start/2, 1 -> 7 + start. */
unsigned mig_gi_id(unsigned start, unsigned size);

/* Compute-instance profile `index` (NVML_COMPUTE_INSTANCE_PROFILE_*) inside
 * a GPU instance of profile gp: false when not offered there. */
struct mig_cip {
	unsigned index, slices, count, sm;
	char name[48];		/* "1c.3g.20gb", or the GI's name when full */
};
bool mig_cip_get(const struct mig_board *b, const struct mig_gip *gp, unsigned index,
		 struct mig_cip *out);
/* Placements of a compute-instance profile of `slices` in a GI of gi_slices. */
unsigned mig_cip_placements(unsigned slices, unsigned gi_slices,
			    unsigned starts[MIG_MAX_PLACEMENTS]);

#endif
