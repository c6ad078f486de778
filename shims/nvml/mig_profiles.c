/* MIG profile tables per board.  Names, profile ids, compute/memory slice
 * counts, NVDEC/JPEG/OFA units, copy engines and instance counts follow
 * NVIDIA's MIG user guide ("Supported MIG Profiles").  Memory sizes (MiB)
 * are what nvidia-smi mig -lgip reports on the A100 40/80 GB and H100 80 GB
 * (4.75, 9.62, 19.50, 39.25 GiB, ...); on the other boards they follow the
 * profile names in the same proportions (the driver reserves a little of
 * each slice), rounded to 128 MiB. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "shims/nvml/mig_profiles.h"

/* NVML_GPU_INSTANCE_PROFILE_*: 1_SLICE 0, 2_SLICE 1, 3_SLICE 2, 4_SLICE 3,
 * 7_SLICE 4, 1_SLICE_REV1 (+me) 7, 1_SLICE_REV2 (double memory) 9. */
#define P1 0
#define P2 1
#define P3 2
#define P4 3
#define P7 4
#define P1ME 7
#define P1X2 9

/* Ampere GA100: 98 SMs in 7 slices of 14, 7 copy engines, 5 NVDECs, no NVENC. */
#define GA100(n1, n1x2, n2, n3, n4, n7, slice, m2, m4, full) { \
	{ P1, 19, n1, 1, 1, 7, 14, 1, 0, 0, 0, 0, slice }, \
	{ P1ME, 20, n1 "+me", 1, 1, 1, 14, 1, 1, 0, 1, 1, slice }, \
	{ P1X2, 15, n1x2, 1, 2, 4, 14, 1, 1, 0, 0, 0, m2 }, \
	{ P2, 14, n2, 2, 2, 3, 28, 2, 1, 0, 0, 0, m2 }, \
	{ P3, 9, n3, 3, 4, 2, 42, 3, 2, 0, 0, 0, m4 }, \
	{ P4, 5, n4, 4, 4, 1, 56, 4, 2, 0, 0, 0, m4 }, \
	{ P7, 0, n7, 7, 8, 1, 98, 7, 5, 0, 1, 1, full } }

/* Hopper GH100 and Blackwell GB100: one NVDEC and one JPEG per slice, the
 * OFA with the full GPU or +me, 8 copy engines. */
#define GH100(n1, n1x2, n2, n3, n4, n7, sm1, sm2, sm3, sm4, sm7, slice, m2, m4, full) { \
	{ P1, 19, n1, 1, 1, 7, sm1, 1, 1, 0, 1, 0, slice }, \
	{ P1ME, 20, n1 "+me", 1, 1, 1, sm1, 1, 1, 0, 1, 1, slice }, \
	{ P1X2, 15, n1x2, 1, 2, 4, sm1, 1, 1, 0, 1, 0, m2 }, \
	{ P2, 14, n2, 2, 2, 3, sm2, 2, 2, 0, 2, 0, m2 }, \
	{ P3, 9, n3, 3, 4, 2, sm3, 3, 3, 0, 3, 0, m4 }, \
	{ P4, 5, n4, 4, 4, 1, sm4, 4, 4, 0, 4, 0, m4 }, \
	{ P7, 0, n7, 7, 8, 1, sm7, 8, 7, 0, 7, 1, full } }

static const struct mig_gip a100_40[] = GA100("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb",
					      "4g.20gb", "7g.40gb", 4864, 9856, 19968, 40192);
static const struct mig_gip a100_80[] = GA100("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb",
					      "4g.40gb", "7g.80gb", 9728, 19968, 40192, 81152);
static const struct mig_gip h100_80[] = GH100("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb",
					      "4g.40gb", "7g.80gb", 16, 32, 60, 64, 132,
					      9984, 20096, 40448, 81152);
static const struct mig_gip h100_94[] = GH100("1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb",
					      "4g.47gb", "7g.94gb", 16, 32, 60, 64, 132,
					      11776, 23680, 47616, 95232);
static const struct mig_gip h100_96[] = GH100("1g.12gb", "1g.24gb", "2g.24gb", "3g.48gb",
					      "4g.48gb", "7g.96gb", 16, 32, 60, 64, 132,
					      11904, 24064, 48384, 96768);
static const struct mig_gip h200[] = GH100("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb",
					   "4g.71gb", "7g.141gb", 16, 32, 60, 64, 132,
					   16768, 35456, 71040, 142592);
static const struct mig_gip b200[] = GH100("1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb",
					   "4g.90gb", "7g.180gb", 18, 36, 54, 72, 148,
					   22784, 45824, 91392, 181248);
static const struct mig_gip gb200[] = GH100("1g.23gb", "1g.47gb", "2g.47gb", "3g.93gb",
					    "4g.93gb", "7g.186gb", 18, 36, 54, 72, 152,
					    23552, 47360, 94976, 187136);
static const struct mig_gip gb300[] = GH100("1g.34gb", "1g.67gb", "2g.67gb", "3g.135gb",
					    "4g.135gb", "7g.269gb", 20, 40, 60, 80, 160,
					    34304, 68864, 138112, 274944);

#define BOARD(n, t, sm) { n, sizeof(t) / sizeof(t[0]), t, sm }
static const struct mig_board boards[] = {
	BOARD("A100 40GB", a100_40, 14), BOARD("A100 80GB", a100_80, 14),
	BOARD("H100 80GB", h100_80, 16), BOARD("H100 94GB", h100_94, 16),
	BOARD("H100 96GB", h100_96, 16), BOARD("H200 141GB", h200, 16),
	BOARD("B200", b200, 18), BOARD("GB200", gb200, 18), BOARD("GB300", gb300, 20),
};

/* PCI device ids (10de:xxxx) of the MIG-capable boards; the memory size
 * picks between the 40/80 GB (A100) and 80/94/96 GB (H100) variants. */
static const struct {
	uint16_t lo, hi;	/* id range */
	uint64_t max_mib;	/* this board up to this size (0: any) */
	unsigned board;
} ids[] = {
	{ 0x20b0, 0x20bf, 48 * 1024, 0 }, { 0x20b0, 0x20bf, 0, 1 },
	{ 0x20f0, 0x20f5, 48 * 1024, 0 }, { 0x20f0, 0x20f5, 0, 1 },
	{ 0x2320, 0x233f, 88 * 1024, 2 }, { 0x2320, 0x233f, 95 * 1024, 3 },
	{ 0x2320, 0x233f, 100 * 1024, 4 }, { 0x2320, 0x233f, 0, 5 },
	{ 0x2340, 0x234f, 0, 4 },
	{ 0x2900, 0x2903, 0, 6 }, { 0x2940, 0x294f, 0, 7 },
	{ 0x3180, 0x31ff, 0, 8 },
};

const struct mig_board *mig_board_for(uint32_t pci_device_id, uint64_t total_mib)
{
	uint16_t dev = (uint16_t)(pci_device_id >> 16);

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		if (dev >= ids[i].lo && dev <= ids[i].hi &&
		    (!ids[i].max_mib || total_mib <= ids[i].max_mib))
			return &boards[ids[i].board];
	return NULL;
}

const struct mig_board *mig_board_guess(uint32_t pci_device_id, const char *arch,
					uint64_t total_mib)
{
	static const struct {
		const char *arch;
		uint64_t max_mib;	/* up to this size (0: any) */
		uint32_t id;
	} by_arch[] = {
		{ "ampere", 0, 0x20b00000 }, { "hopper", 100 * 1024, 0x23300000 },
		{ "hopper", 0, 0x23350000 }, { "blackwell", 185 * 1024, 0x29010000 },
		{ "blackwell", 250 * 1024, 0x29410000 }, { "blackwell", 0, 0x31c20000 },
	};
	const struct mig_board *b = mig_board_for(pci_device_id, total_mib);

	for (size_t i = 0; !b && arch && i < sizeof(by_arch) / sizeof(by_arch[0]); i++)
		if (!strcasecmp(arch, by_arch[i].arch) &&
		    (!by_arch[i].max_mib || total_mib <= by_arch[i].max_mib))
			b = mig_board_for(by_arch[i].id, total_mib);
	return b;
}

const struct mig_gip *mig_gip_by_index(const struct mig_board *b, unsigned index)
{
	for (unsigned i = 0; b && i < b->nprof; i++)
		if (b->prof[i].index == index)
			return &b->prof[i];
	return NULL;
}

const struct mig_gip *mig_gip_by_id(const struct mig_board *b, unsigned id)
{
	for (unsigned i = 0; b && i < b->nprof; i++)
		if (b->prof[i].id == id)
			return &b->prof[i];
	return NULL;
}

const struct mig_gip *mig_gip_by_name(const struct mig_board *b, const char *name)
{
	if (name && !strncasecmp(name, "MIG ", 4))
		name += 4;
	for (unsigned i = 0; b && name && i < b->nprof; i++)
		if (!strcasecmp(b->prof[i].name, name))
			return &b->prof[i];
	return NULL;
}

/* Aligned starts: 1-slice profiles everywhere but the last memory slice
 * (0..6), 2-slice ones at even starts (3 of them for 2g, 4 for the
 * double-memory 1g), 4-slice at 0 and 4 (3g) or 0 (4g), 8 at 0. */
unsigned mig_gip_placements(const struct mig_gip *p, unsigned starts[MIG_MAX_PLACEMENTS])
{
	unsigned n = 0;

	for (unsigned s = 0; s + p->mem_slices <= MIG_MEM_SLICES; s += p->mem_slices) {
		if (p->mem_slices == 1 && s == 7)
			break;
		if (n < p->count || strstr(p->name, "+me"))
			starts[n++] = s;
	}
	return n;
}

unsigned mig_gi_id(unsigned start, unsigned size)
{
	switch (size) {
	case 8: return 0;
	case 4: return 1 + start / 4;
	case 2: return 3 + start / 2;
	default: return 7 + start;
	}
}

/* NVML_COMPUTE_INSTANCE_PROFILE_*: index -> compute slices. */
static const unsigned ci_slices[MIG_CI_PROFILE_COUNT] = { 1, 2, 3, 4, 7, 0, 0, 0 };

static unsigned align_up_pow2(unsigned v)
{
	unsigned a = 1;

	while (a < v)
		a <<= 1;
	return a;
}

unsigned mig_cip_placements(unsigned slices, unsigned gi_slices,
			    unsigned starts[MIG_MAX_PLACEMENTS])
{
	unsigned n = 0, step = align_up_pow2(slices);

	if (slices == gi_slices)
		return starts[0] = 0, 1;
	for (unsigned s = 0; s + slices <= gi_slices && n < MIG_MAX_PLACEMENTS; s += step)
		starts[n++] = s;
	return n;
}

bool mig_cip_get(const struct mig_board *b, const struct mig_gip *gp, unsigned index,
		 struct mig_cip *out)
{
	unsigned starts[MIG_MAX_PLACEMENTS];

	if (index >= MIG_CI_PROFILE_COUNT || !ci_slices[index] || ci_slices[index] > gp->slices)
		return false;
	out->index = index;
	out->slices = ci_slices[index];
	out->count = mig_cip_placements(out->slices, gp->slices, starts);
	if (out->count == 0)
		return false;
	if (out->slices == gp->slices) {
		out->sm = gp->sm;
		snprintf(out->name, sizeof(out->name), "%s", gp->name);
	} else {
		out->sm = b->sm_per_slice * out->slices;
		snprintf(out->name, sizeof(out->name), "%uc.%s", out->slices, gp->name);
	}
	return true;
}
