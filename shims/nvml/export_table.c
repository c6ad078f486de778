/* nvmlInternalGetExportTable: the private function table nvidia-smi asks
 * for right after init (NVML.md §2.3).  Word 0 is the table's size in
 * bytes; slot k sits at byte offset 8*k and is called only when the size
 * exceeds 8*k.  nvidia-smi trusts a slot's output whenever it returns
 * SUCCESS, so a slot succeeds only after writing its output; every slot
 * not understood answers NOT_SUPPORTED. */
#include <pthread.h>
#include <string.h>

#include "shims/nvml/nvml_types.h"
#include "shims/nvml/api_board.h"
#include "shims/nvml/api_reset.h"

#define TABLE_BYTES 0x1000
#define TABLE_SLOTS (TABLE_BYTES / 8)	/* every slot the size admits exists */

typedef uintptr_t arg_t;
typedef nvmlReturn_t (*slot_fn)(arg_t, arg_t, arg_t, arg_t);

static nvmlReturn_t slot_unsupported(arg_t a0, arg_t a1, arg_t a2, arg_t a3)
{
	(void)a0, (void)a1, (void)a2, (void)a3;
	return NVML_ERROR_NOT_SUPPORTED;
}

/* NAME: a slot that hands its first three arguments and EXTRA to HELPER. */
#define SLOT_WITH(name, helper, extra)                                    \
	static nvmlReturn_t name(arg_t a0, arg_t a1, arg_t a2, arg_t a3) \
	{                                                                \
		(void)a3;                                                \
		return helper(a0, a1, a2, extra);                        \
	}

static struct mdev *slot_device(arg_t a)
{
	void *h = (void *)a;

	return engine_initialized() && h && engine_is_device(h) ? h : NULL;
}

/* 23: how two GPUs connect, for topo -m.  Called with the GPUs' PCI bus id
 * strings (nvmlPciInfo_t.busId) and an int out: 0 PIX, 1 PXB, 2 PHB,
 * 3 NODE, 4 SYS, 4 + n for n bonded NVLinks (NV1..NV18; larger values
 * print "Unknown").  Values found by running nvidia-smi 535. */
#define SMI_TOPO_NVLINK_BASE 4
#define SMI_TOPO_NVLINK_MAX 18

static unsigned smi_topology_code(struct mdev *a, struct mdev *b)
{
	static const struct {
		int level;
		unsigned code;
	} pcie_codes[] = {
		{ NVML_TOPOLOGY_INTERNAL, 0 }, { NVML_TOPOLOGY_SINGLE, 0 },
		{ NVML_TOPOLOGY_MULTIPLE, 1 }, { NVML_TOPOLOGY_HOSTBRIDGE, 2 },
		{ NVML_TOPOLOGY_NODE, 3 }, { NVML_TOPOLOGY_SYSTEM, 4 },
	};
	unsigned links = nvml_nvlink_count(a, b);
	int level;

	if (links)
		return SMI_TOPO_NVLINK_BASE +
		       (links < SMI_TOPO_NVLINK_MAX ? links : SMI_TOPO_NVLINK_MAX);
	level = nvml_topology_level(a, b);
	for (size_t i = 0; i < sizeof(pcie_codes) / sizeof(pcie_codes[0]); i++)
		if (pcie_codes[i].level == level)
			return pcie_codes[i].code;
	return 4;
}

static nvmlReturn_t slot_topology(arg_t a0, arg_t a1, arg_t a2, arg_t a3)
{
	struct mdev *a, *b;
	unsigned *code = (unsigned *)a2;

	if (!engine_initialized() || !a0 || !a1 || !code)
		return NVML_ERROR_INVALID_ARGUMENT;
	a = engine_device_by_bus_id((const char *)a0);
	b = engine_device_by_bus_id((const char *)a1);
	if (!a || !b)
		return NVML_ERROR_INVALID_ARGUMENT;
	*code = smi_topology_code(a, b);
	return NVML_SUCCESS;
}

/* A slot writing one unsigned for a device: (dev, unsigned *out). */
static nvmlReturn_t device_u32_slot(arg_t a0, arg_t a1, nvmlReturn_t (*get)(struct mdev *,
									  unsigned *))
{
	struct mdev *d = slot_device(a0);
	unsigned *out = (unsigned *)a1;
	nvmlReturn_t rc;

	if (!d || !out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = mdev_lost(d)))
		return rc;
	return get(d, out);
}

/* 72: whether the device can be sampled; pmon and dmon refuse to run
 * ("Not supported on the device(s)") unless it writes non-zero. */
static nvmlReturn_t sampling_supported(struct mdev *d, unsigned *out)
{
	*out = 1;
	return NVML_SUCCESS;
}

static nvmlReturn_t slot_sampling(arg_t a0, arg_t a1, arg_t a2, arg_t a3)
{
	(void)a2, (void)a3;
	return device_u32_slot(a0, a1, sampling_supported);
}

/* 108: the enforced power limit in mW (--query-gpu=enforced.power.limit). */
static nvmlReturn_t enforced_limit(struct mdev *d, unsigned *mw)
{
	return nvml_key_u32(d, "power.enforced_limit_mw", mw);
}

static nvmlReturn_t slot_enforced_limit(arg_t a0, arg_t a1, arg_t a2, arg_t a3)
{
	(void)a2, (void)a3;
	return device_u32_slot(a0, a1, enforced_limit);
}

/* Process entries as nvidia-smi 535 lays them out: 4128 bytes each. */
struct smi_process {
	unsigned pid;
	unsigned long long used_bytes;
	unsigned gpu_instance, compute_instance;
	unsigned long long cc_protected_bytes;
	char name[4096];
};

static void fill_smi_process(void *entry, unsigned pid, unsigned long long bytes,
			     const char *name)
{
	struct smi_process *p = entry;

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->used_bytes = bytes;
	p->gpu_instance = 0xffffffffu;	/* not MIG: renders N/A */
	p->compute_instance = 0xffffffffu;
	strncpy(p->name, name, sizeof(p->name) - 1);
}

static nvmlReturn_t process_slot(arg_t a0, arg_t a1, arg_t a2, char type)
{
	struct mdev *d = slot_device(a0);
	unsigned *count = (unsigned *)a1;

	if (!d || !count)
		return NVML_ERROR_INVALID_ARGUMENT;
	return nvml_process_list(d, type, count, (void *)a2, sizeof(struct smi_process),
				 fill_smi_process);
}

/* 213: compute processes, 214: MPS (none), 215: graphics. */
SLOT_WITH(slot_compute, process_slot, 'C')
SLOT_WITH(slot_mps, process_slot, 'M')
SLOT_WITH(slot_graphics, process_slot, 'G')

/* 230: the host side's maximum PCIe generation (dev, unsigned *gen). */
static nvmlReturn_t host_link_gen(struct mdev *d, unsigned *gen)
{
	if (nvml_key_u32(d, "pcie.host_max_link_gen", gen) == NVML_SUCCESS)
		return NVML_SUCCESS;
	return nvml_key_u32(d, "pcie.max_link_gen", gen);
}

static nvmlReturn_t slot_host_link_gen(arg_t a0, arg_t a1, arg_t a2, arg_t a3)
{
	(void)a2, (void)a3;
	return device_u32_slot(a0, a1, host_link_gen);
}

/* 231 and 237: part number strings (dev, char *buf, length). */
static nvmlReturn_t part_number(arg_t a0, arg_t a1, arg_t a2, const char *key)
{
	struct mdev *d = slot_device(a0);

	if (!d || !a1)
		return NVML_ERROR_INVALID_ARGUMENT;
	return nvml_key_str(d, key, (char *)a1, (unsigned)a2);
}

SLOT_WITH(slot_gpu_part_number, part_number, "gpu_part_number")
SLOT_WITH(slot_fru_part_number, part_number, "fru_part_number")

/* 240: the GPU's margin to T.Limit (dev, int *celsius), Ada and later;
 * its success switches nvidia-smi to the T.Limit threshold rows. */
static nvmlReturn_t slot_tlimit(arg_t a0, arg_t a1, arg_t a2, arg_t a3)
{
	struct mdev *d = slot_device(a0);
	int *out = (int *)a1, m;
	nvmlReturn_t rc;

	(void)a2, (void)a3;
	if (!d || !out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((rc = mdev_lost(d)) || (rc = nvml_tlimit_margin(d, NULL, &m)))
		return rc;
	*out = m;
	return NVML_SUCCESS;
}

static const struct {
	unsigned slot;
	slot_fn fn;
} implemented[] = {
	{ 13, nvml_slot_reset_one },
	{ 20, nvml_slot_reset_primary },
	{ 23, slot_topology },
	{ 72, slot_sampling },
	{ 108, slot_enforced_limit },
	{ 169, nvml_slot_reset_path },
	{ 182, nvml_slot_reset_group },
	{ 183, nvml_slot_reset_members },
	{ 184, nvml_slot_reset_free },
	{ 209, nvml_slot_graphics_voltage },
	{ 213, slot_compute },
	{ 214, slot_mps },
	{ 215, slot_graphics },
	{ 226, nvml_slot_atomic_caps },
	{ 230, slot_host_link_gen },
	{ 231, slot_gpu_part_number },
	{ 237, slot_fru_part_number },
	{ 240, slot_tlimit },
	{ 242, nvml_slot_addressing_mode },
	{ 243, nvml_slot_sparse_mode },
};

static uintptr_t table[TABLE_SLOTS];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_table(void)
{
	table[0] = TABLE_BYTES;
	for (unsigned k = 1; k < TABLE_SLOTS; k++)
		table[k] = (uintptr_t)slot_unsupported;
	for (size_t i = 0; i < sizeof(implemented) / sizeof(implemented[0]); i++)
		table[implemented[i].slot] = (uintptr_t)implemented[i].fn;
}

/* 6c3efec4-8fc9-4e6c-a327-ee696e12f7c4 as it lies in memory. */
static const unsigned char export_guid[16] = {
	0xc4, 0xfe, 0x3e, 0x6c, 0xc9, 0x8f, 0x6c, 0x4e,
	0xa3, 0x27, 0xee, 0x69, 0x6e, 0x12, 0xf7, 0xc4,
};

NVML_API(nvmlInternalGetExportTable, const void **table_out, const unsigned char *guid)
{
	if (!table_out || !guid)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (memcmp(guid, export_guid, sizeof(export_guid)))
		return NVML_ERROR_NOT_SUPPORTED;
	pthread_once(&table_once, build_table);
	*table_out = table;
	return NVML_SUCCESS;
}
