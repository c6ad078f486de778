/* The GPUs' SR-IOV capability (a Mokka extension), for boards that have
 * one: mokka-pcifs gives every NVIDIA GPU of the node sriov_totalvfs and a
 * working sriov_numvfs (nvidia's sriov_configure, as sriov-manage uses it)
 * whose VFs appear as PCI functions.  Absent: the GPUs have no SR-IOV
 * capability and no sriov_* files, as on boards without it.
 *
 *   pcie_topology:
 *     gpu_sriov:
 *       total_vfs: 32          # TotalVFs (1..256)
 *       vf_offset: 4           # First VF Offset (default 4: NVIDIA GPUs')
 *       vf_stride: 1           # VF Stride (default 1)
 *       vf_device_id: 0x26b9   # VF Device ID (default: the PF's)
 *
 * Checked here only: the PCI plan and the staged tree do not change, the
 * VFs exist while pcifs serves (it reads the keys from the engine config,
 * which is the profile as given). */
#include "profile/compile_internal.h"

int compile_sriov(struct cctx *c, const struct ynode *root)
{
	static const struct { const char *key; uint64_t lo, hi; } keys[] = {
		{ "total_vfs", 1, 256 }, { "vf_offset", 1, 255 }, { "vf_stride", 1, 255 },
		{ "vf_device_id", 1, 0xffff },
	};
	const struct ynode *cap = cc_lookup(root, "pcie_topology.gpu_sriov"), *n;
	char path[KEY_PATH_MAX];
	uint64_t v;
	int rc;

	if (!cap || ytree_is_null(cap))
		return 0;
	if (!cc_lookup(cap, "total_vfs"))
		return cc_fail(c, cap, "pcie_topology.gpu_sriov", "total_vfs is required");
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (!(n = cc_lookup(cap, keys[i].key)) || ytree_is_null(n))
			continue;
		cc_join_key(path, "pcie_topology.gpu_sriov", keys[i].key);
		if ((rc = cc_get_u64(c, n, path, keys[i].hi, &v)) < 0)
			return rc;
		if (v < keys[i].lo)
			return cc_fail(c, n, path, "%llu is out of range (%llu..%llu)",
				       (unsigned long long)v, (unsigned long long)keys[i].lo,
				       (unsigned long long)keys[i].hi);
	}
	return 0;
}
