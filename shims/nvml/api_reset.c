/* nvidia-smi -r (--gpu-reset) over the export table.  What nvidia-smi 535
 * asks for each GPU named (slot numbers and argument shapes found by
 * tracing it under gdb and reading its callers):
 *   20   (dev, unsigned *) is it the primary (console) GPU?  Not answered:
 *        "could not be determined if GPU .. is the primary GPU", exit 3;
 *        non-zero: "GPU .. is the primary GPU" refusal.  We write 0.
 *   182  (void **group, nvmlDevice_t *devs, unsigned n, 1): the GPUs that
 *        must be reset together with those named; 183 (group, char
 *        *bus_id[], unsigned *n) lists them as PCI bus id strings (32
 *        bytes each); 184 (group) frees it.  Any member not named: "the
 *        specified devices do not meet the reset criterion (e.g. NVLink
 *        connected GPUs must be reset together)".  Not answered: "failed
 *        to allocate group of reset devices".  We group just those named.
 *   169  (unsigned *) a node-wide state.  Not answered: "fabric state could
 *        not be determined".  0 sends every GPU down a group path (182
 *        makes a group of the GPUs, 183 lists its members' bus ids, 184
 *        frees it, 168 resets them with a status per GPU; a refused GPU
 *        then reads "did not complete reset successfully, and may be in an
 *        unstable state").  1 sends a GPU down the group path only when
 *        slot 197 succeeds (with slot 32's RM control 0x20803601 or the
 *        architecture deciding); otherwise it goes one by one through 13.
 *        We write 1 and leave 197 unanswered: every GPU goes through 13.
 *   13   (dev) reset it.  SUCCESS prints "GPU <bus id> was successfully
 *        reset." and, when all are, "All done."; IN_USE prints "GPU <bus
 *        id> is currently in use by another process." and the "1 device is
 *        currently being used by one or more other processes" advice
 *        (exit 19), which is what the driver says while MIG instances
 *        exist.
 * The reset itself is api_setters.c's mokka_reset_gpu (pending ECC and MIG
 * modes become current, set clocks go; IN_USE while GPU instances exist),
 * the state change mokka-ctl gpu-reset makes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shims/nvml/api_reset.h"

nvmlReturn_t mokka_reset_gpu(nvmlDevice_t device);	/* api_setters.c */
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci);

#define RESET_ONE_BY_ONE 1	/* slot 169's answer: every GPU through slot 13 */
#define GROUP_MAGIC 0x52534554u	/* "RSET" */
#define GROUP_MAX 64
#define BUS_ID_LEN 32		/* the buffers nvidia-smi hands slot 183 */

struct reset_group {
	unsigned magic, n;
	nvmlDevice_t dev[GROUP_MAX];
};

static struct mdev *full_gpu(uintptr_t h)
{
	struct mdev *d;

	if (nvml_dev((nvmlDevice_t)h, &d) || mdev_is_mig(d))
		return NULL;
	return d;
}

nvmlReturn_t nvml_slot_reset_one(uintptr_t dev, uintptr_t a1, uintptr_t a2, uintptr_t a3)
{
	(void)a1, (void)a2, (void)a3;
	return full_gpu(dev) ? mokka_reset_gpu((nvmlDevice_t)dev) : NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t nvml_slot_reset_primary(uintptr_t dev, uintptr_t out, uintptr_t a2, uintptr_t a3)
{
	(void)a2, (void)a3;
	if (!full_gpu(dev) || !out)
		return NVML_ERROR_INVALID_ARGUMENT;
	*(unsigned *)out = 0;	/* a simulated GPU never drives the console */
	return NVML_SUCCESS;
}

nvmlReturn_t nvml_slot_reset_path(uintptr_t out, uintptr_t a1, uintptr_t a2, uintptr_t a3)
{
	(void)a1, (void)a2, (void)a3;
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	*(unsigned *)out = RESET_ONE_BY_ONE;
	return NVML_SUCCESS;
}

static struct reset_group *group_of(uintptr_t h)
{
	struct reset_group *g = (struct reset_group *)h;

	return g && g->magic == GROUP_MAGIC ? g : NULL;
}

nvmlReturn_t nvml_slot_reset_group(uintptr_t out, uintptr_t devs, uintptr_t n, uintptr_t a3)
{
	const nvmlDevice_t *in = (const nvmlDevice_t *)devs;
	struct reset_group *g;

	(void)a3;
	if (!out || !in || !n || n > GROUP_MAX)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned i = 0; i < n; i++)
		if (!full_gpu((uintptr_t)in[i]))
			return NVML_ERROR_INVALID_ARGUMENT;
	if (!(g = calloc(1, sizeof(*g))))
		return NVML_ERROR_MEMORY;
	g->magic = GROUP_MAGIC;
	g->n = (unsigned)n;
	memcpy(g->dev, in, n * sizeof(in[0]));
	*(struct reset_group **)out = g;
	return NVML_SUCCESS;
}

/* The mock couples no GPUs by NVLink for a reset: the group is just the
 * GPUs named.  bufs holds one buffer per GPU in the node. */
nvmlReturn_t nvml_slot_reset_members(uintptr_t grp, uintptr_t bufs, uintptr_t count,
				     uintptr_t a3)
{
	struct reset_group *g = group_of(grp);
	char **out = (char **)bufs;
	nvmlPciInfo_t pci;
	nvmlReturn_t rc;

	(void)a3;
	if (!g || !out || !count)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned i = 0; i < g->n; i++) {
		if ((rc = nvmlDeviceGetPciInfo_v3(g->dev[i], &pci)))
			return rc;
		if (!out[i])
			return NVML_ERROR_INVALID_ARGUMENT;
		snprintf(out[i], BUS_ID_LEN, "%s", pci.busId);
	}
	*(unsigned *)count = g->n;
	return NVML_SUCCESS;
}

nvmlReturn_t nvml_slot_reset_free(uintptr_t grp, uintptr_t a1, uintptr_t a2, uintptr_t a3)
{
	struct reset_group *g = group_of(grp);

	(void)a1, (void)a2, (void)a3;
	if (!g)
		return NVML_ERROR_INVALID_ARGUMENT;
	g->magic = 0;
	free(g);
	return NVML_SUCCESS;
}
